/*
 * Plain C UDP ping-pong: the lower bound for a round trip between two processes on this machine.
 *
 *   udp_pingpong server PORT [--bind ADDR] [--timeout SECONDS]
 *       Echoes every datagram back to its sender. Exits on a 4-byte "stop" datagram or when --timeout seconds
 *       (default 120) have passed. PORT 0 picks a free port. Prints {"listening":PORT} on stdout once bound.
 *
 *   udp_pingpong client HOST PORT COUNT SIZE [--recv-timeout MS] [--keep-server]
 *       Sends SIZE-byte datagrams one at a time and waits for each echo (CLOCK_MONOTONIC around send + receive).
 *       100 warm-up round trips are run first and discarded. A missing echo (after --recv-timeout ms, default
 *       1000) is an error: exit status 1 and a message on stderr. On success prints one JSON line:
 *       {"test":"rtt","messages":N,"p50_us":...,"p90_us":...,"p99_us":...,"p999_us":...}
 *       and then sends "stop" to the server unless --keep-server.
 *
 * Percentiles: the sorted sample at index round(p * (N - 1)), as `huddle bench` computes them.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define WARMUP 100
#define MAX_SIZE 65507

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double percentile(const double *sorted, long n, double p) {
    long index = (long)round(p * (double)(n - 1));
    if (index < 0) index = 0;
    if (index >= n) index = n - 1;
    return sorted[index];
}

static int resolve(const char *host, const char *port, struct sockaddr_in *out) {
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_DGRAM;
    int rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0 || res == NULL) {
        fprintf(stderr, "udp_pingpong: cannot resolve %s:%s: %s\n", host, port, gai_strerror(rc));
        return -1;
    }
    memcpy(out, res->ai_addr, sizeof(*out));
    freeaddrinfo(res);
    return 0;
}

static int run_server(const char *port, const char *bind_addr, double timeout) {
    struct sockaddr_in addr;
    if (resolve(bind_addr, port, &addr) != 0) return 2;
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
        fprintf(stderr, "udp_pingpong: bind %s:%s: %s\n", bind_addr, port, strerror(errno));
        return 2;
    }
    socklen_t len = sizeof(addr);
    getsockname(fd, (struct sockaddr *)&addr, &len);
    printf("{\"listening\":%d}\n", ntohs(addr.sin_port));
    fflush(stdout);

    static char buf[MAX_SIZE + 1];
    double deadline = now_s() + timeout;
    long echoed = 0;
    for (;;) {
        double remaining = deadline - now_s();
        if (remaining <= 0) {
            fprintf(stderr, "udp_pingpong server: timeout after %.0f s (%ld echoed)\n", timeout, echoed);
            return 0;
        }
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int pr = poll(&pfd, 1, (int)(remaining * 1000) + 1);
        if (pr < 0 && errno != EINTR) {
            perror("udp_pingpong server: poll");
            return 2;
        }
        if (pr <= 0) continue;
        struct sockaddr_in peer;
        socklen_t plen = sizeof(peer);
        ssize_t n = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&peer, &plen);
        if (n < 0) {
            if (errno == EINTR || errno == ECONNREFUSED) continue;
            perror("udp_pingpong server: recvfrom");
            return 2;
        }
        if (n == 4 && memcmp(buf, "stop", 4) == 0) return 0;
        if (sendto(fd, buf, (size_t)n, 0, (struct sockaddr *)&peer, plen) < 0 && errno != ECONNREFUSED) {
            perror("udp_pingpong server: sendto");
        }
        echoed++;
    }
}

static int run_client(const char *host, const char *port, long count, long size, int recv_timeout_ms,
                      int keep_server) {
    if (count <= 0 || size < 8 || size > MAX_SIZE) {
        fprintf(stderr, "udp_pingpong: COUNT must be > 0 and SIZE in 8...%d\n", MAX_SIZE);
        return 2;
    }
    struct sockaddr_in addr;
    if (resolve(host, port, &addr) != 0) return 2;
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
        fprintf(stderr, "udp_pingpong: connect %s:%s: %s\n", host, port, strerror(errno));
        return 2;
    }
    char *out = calloc(1, (size_t)size), *in = calloc(1, MAX_SIZE + 1);
    double *samples = malloc(sizeof(double) * (size_t)count);
    if (!out || !in || !samples) return 2;
    memset(out, 'x', (size_t)size);

    long total = count + WARMUP;
    for (long i = 0; i < total; i++) {
        uint64_t seq = (uint64_t)i;
        memcpy(out, &seq, sizeof(seq));
        double start = now_s();
        if (send(fd, out, (size_t)size, 0) != size) {
            fprintf(stderr, "udp_pingpong client: send #%ld: %s\n", i, strerror(errno));
            return 1;
        }
        for (;;) {
            struct pollfd pfd = {.fd = fd, .events = POLLIN};
            int remaining = recv_timeout_ms - (int)((now_s() - start) * 1000);
            int pr = remaining > 0 ? poll(&pfd, 1, remaining) : 0;
            if (pr < 0 && errno == EINTR) continue;
            if (pr <= 0) {
                fprintf(stderr, "udp_pingpong client: no echo for round trip #%ld within %d ms\n", i,
                        recv_timeout_ms);
                return 1;
            }
            ssize_t n = recv(fd, in, MAX_SIZE + 1, 0);
            if (n < 0) {
                fprintf(stderr, "udp_pingpong client: recv #%ld: %s\n", i, strerror(errno));
                return 1;
            }
            uint64_t got;
            if (n == size && (memcpy(&got, in, sizeof(got)), got == seq)) break;
            /* A stale or foreign datagram: keep waiting for ours. */
        }
        double rtt = now_s() - start;
        if (i >= WARMUP) samples[i - WARMUP] = rtt * 1e6;
    }
    if (!keep_server) {
        for (int k = 0; k < 3; k++) send(fd, "stop", 4, 0);
    }
    qsort(samples, (size_t)count, sizeof(double), cmp_double);
    printf("{\"test\":\"rtt\",\"messages\":%ld,\"size\":%ld,\"p50_us\":%.1f,\"p90_us\":%.1f,\"p99_us\":%.1f,"
           "\"p999_us\":%.1f,\"min_us\":%.1f,\"max_us\":%.1f}\n",
           count, size, percentile(samples, count, 0.5), percentile(samples, count, 0.9),
           percentile(samples, count, 0.99), percentile(samples, count, 0.999), samples[0], samples[count - 1]);
    return 0;
}

static void usage(void) {
    fprintf(stderr,
            "usage: udp_pingpong server PORT [--bind ADDR] [--timeout SECONDS]\n"
            "       udp_pingpong client HOST PORT COUNT SIZE [--recv-timeout MS] [--keep-server]\n");
}

int main(int argc, char **argv) {
    if (argc >= 3 && strcmp(argv[1], "server") == 0) {
        const char *bind_addr = "127.0.0.1";
        double timeout = 120;
        for (int i = 3; i < argc; i++) {
            if (strcmp(argv[i], "--bind") == 0 && i + 1 < argc) bind_addr = argv[++i];
            else if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc) timeout = atof(argv[++i]);
            else { usage(); return 2; }
        }
        return run_server(argv[2], bind_addr, timeout);
    }
    if (argc >= 6 && strcmp(argv[1], "client") == 0) {
        int recv_timeout_ms = 1000, keep_server = 0;
        for (int i = 6; i < argc; i++) {
            if (strcmp(argv[i], "--recv-timeout") == 0 && i + 1 < argc) recv_timeout_ms = atoi(argv[++i]);
            else if (strcmp(argv[i], "--keep-server") == 0) keep_server = 1;
            else { usage(); return 2; }
        }
        return run_client(argv[2], argv[3], atol(argv[4]), atol(argv[5]), recv_timeout_ms, keep_server);
    }
    usage();
    return 2;
}
