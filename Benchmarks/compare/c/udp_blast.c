/*
 * Raw UDP blast: the limit of unreliable, unencrypted UDP between two processes on this machine. Nothing is
 * retransmitted, so the receiver's figure (what actually arrived) is the one to report.
 *
 *   udp_blast recv PORT SECONDS [--bind ADDR] [--rcvbuf BYTES]
 *       Counts received bytes and datagrams until a 4-byte "stop" datagram arrives or SECONDS have passed, then
 *       prints one JSON line:
 *       {"bytes":..,"seconds":..,"mb_per_s":..,"datagrams":..,"messages_per_s":..,"rcvbuf":..}
 *       where seconds run from the first to the last data datagram received and MB = 10^6 bytes.
 *       PORT 0 picks a free port. Prints {"listening":PORT} on stdout once bound.
 *
 *   udp_blast send HOST PORT SIZE SECONDS
 *       Sends SIZE-byte datagrams (sendmmsg, 64 per call) as fast as the kernel accepts them for SECONDS, then
 *       sends "stop" five times, 10 ms apart. Prints {"sent_datagrams":..,"sent_bytes":..,"seconds":..,
 *       "send_errors":..} on stdout.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
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

#define BATCH 64
#define MAX_SIZE 65507

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int resolve(const char *host, const char *port, struct sockaddr_in *out) {
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_DGRAM;
    int rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0 || res == NULL) {
        fprintf(stderr, "udp_blast: cannot resolve %s:%s: %s\n", host, port, gai_strerror(rc));
        return -1;
    }
    memcpy(out, res->ai_addr, sizeof(*out));
    freeaddrinfo(res);
    return 0;
}

static int run_recv(const char *port, double seconds, const char *bind_addr, int rcvbuf) {
    struct sockaddr_in addr;
    if (resolve(bind_addr, port, &addr) != 0) return 2;
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0) { perror("udp_blast: socket"); return 2; }
    if (rcvbuf > 0) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
        fprintf(stderr, "udp_blast: bind %s:%s: %s\n", bind_addr, port, strerror(errno));
        return 2;
    }
    int actual = 0;
    socklen_t olen = sizeof(actual);
    getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &actual, &olen);
    socklen_t len = sizeof(addr);
    getsockname(fd, (struct sockaddr *)&addr, &len);
    printf("{\"listening\":%d}\n", ntohs(addr.sin_port));
    fflush(stdout);

    static char bufs[BATCH][2048];
    struct mmsghdr msgs[BATCH];
    struct iovec iov[BATCH];
    for (int i = 0; i < BATCH; i++) {
        iov[i].iov_base = bufs[i];
        iov[i].iov_len = sizeof(bufs[i]);
        memset(&msgs[i], 0, sizeof(msgs[i]));
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
    uint64_t bytes = 0, datagrams = 0;
    double first = 0, last = 0, deadline = now_s() + seconds;
    int stopped = 0;
    while (!stopped) {
        double remaining = deadline - now_s();
        if (remaining <= 0) break;
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int pr = poll(&pfd, 1, (int)(remaining * 1000) + 1);
        if (pr < 0 && errno != EINTR) { perror("udp_blast recv: poll"); return 2; }
        if (pr <= 0) continue;
        int n = recvmmsg(fd, msgs, BATCH, MSG_DONTWAIT, NULL);
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR) continue;
            perror("udp_blast recv: recvmmsg");
            return 2;
        }
        double t = now_s();
        for (int i = 0; i < n; i++) {
            unsigned int size = msgs[i].msg_len;
            if (size == 4 && memcmp(bufs[i], "stop", 4) == 0) { stopped = 1; continue; }
            if (datagrams == 0) first = t;
            last = t;
            datagrams++;
            bytes += size;
        }
    }
    if (!stopped) fprintf(stderr, "udp_blast recv: no stop datagram within %.0f s\n", seconds);
    double elapsed = last - first;
    double mbps = elapsed > 0 ? (double)bytes / elapsed / 1e6 : 0;
    double rate = elapsed > 0 ? (double)datagrams / elapsed : 0;
    printf("{\"bytes\":%llu,\"seconds\":%.6f,\"mb_per_s\":%.2f,\"datagrams\":%llu,\"messages_per_s\":%.0f,"
           "\"rcvbuf\":%d,\"stopped\":%s}\n",
           (unsigned long long)bytes, elapsed, mbps, (unsigned long long)datagrams, rate, actual,
           stopped ? "true" : "false");
    return datagrams > 0 ? 0 : 1;
}

static int run_send(const char *host, const char *port, long size, double seconds) {
    if (size < 8 || size > MAX_SIZE) { fprintf(stderr, "udp_blast: SIZE must be in 8...%d\n", MAX_SIZE); return 2; }
    struct sockaddr_in addr;
    if (resolve(host, port, &addr) != 0) return 2;
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
        fprintf(stderr, "udp_blast: connect %s:%s: %s\n", host, port, strerror(errno));
        return 2;
    }
    char *payload = malloc((size_t)size * BATCH);
    if (!payload) return 2;
    memset(payload, 'x', (size_t)size * BATCH);
    struct mmsghdr msgs[BATCH];
    struct iovec iov[BATCH];
    for (int i = 0; i < BATCH; i++) {
        iov[i].iov_base = payload + (size_t)i * (size_t)size;
        iov[i].iov_len = (size_t)size;
        memset(&msgs[i], 0, sizeof(msgs[i]));
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
    uint64_t sent = 0, errors = 0;
    double start = now_s(), end = start + seconds, t = start;
    while (t < end) {
        int n = sendmmsg(fd, msgs, BATCH, 0);
        if (n < 0) errors++;
        else sent += (uint64_t)n;
        t = now_s();
    }
    for (int k = 0; k < 5; k++) {
        send(fd, "stop", 4, 0);
        usleep(10000);
    }
    printf("{\"sent_datagrams\":%llu,\"sent_bytes\":%llu,\"seconds\":%.6f,\"send_errors\":%llu}\n",
           (unsigned long long)sent, (unsigned long long)(sent * (uint64_t)size), t - start,
           (unsigned long long)errors);
    return 0;
}

static void usage(void) {
    fprintf(stderr, "usage: udp_blast recv PORT SECONDS [--bind ADDR] [--rcvbuf BYTES]\n"
                    "       udp_blast send HOST PORT SIZE SECONDS\n");
}

int main(int argc, char **argv) {
    if (argc >= 4 && strcmp(argv[1], "recv") == 0) {
        const char *bind_addr = "127.0.0.1";
        int rcvbuf = 4 * 1024 * 1024;
        for (int i = 4; i < argc; i++) {
            if (strcmp(argv[i], "--bind") == 0 && i + 1 < argc) bind_addr = argv[++i];
            else if (strcmp(argv[i], "--rcvbuf") == 0 && i + 1 < argc) rcvbuf = atoi(argv[++i]);
            else { usage(); return 2; }
        }
        return run_recv(argv[2], atof(argv[3]), bind_addr, rcvbuf);
    }
    if (argc == 6 && strcmp(argv[1], "send") == 0) {
        return run_send(argv[2], argv[3], atol(argv[4]), atof(argv[5]));
    }
    usage();
    return 2;
}
