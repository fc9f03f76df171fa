/*
 * ENet (http://enet.bespin.org, Debian libenet-dev 1.3.17) reliable bulk transfer and round trip. ENet has no
 * encryption or authentication: it is the reference for a reliable UDP library without the cost of crypto.
 *
 *   enet_bench server PORT [--bind ADDR] [--timeout SECONDS]
 *       Accepts peers on channel 0. A 9-byte control packet 'B' + 64-bit little-endian total puts the peer in
 *       bulk mode: the server counts the bytes of every following packet and, once the total has arrived, sends a
 *       1-byte reliable 'D'. In any other mode every received packet is echoed back reliably. Exits when the
 *       first peer disconnects, or after --timeout seconds (default 300). PORT 0 picks a free port. Prints
 *       {"listening":PORT} on stdout once bound.
 *
 *   enet_bench client HOST PORT --test bulk --size BYTES --packet BYTES [--window BYTES]
 *       Connects, then sends reliable packets of --packet bytes on channel 0 until --size bytes are queued. At
 *       most --window bytes (default 1 MiB) are queued but not yet acknowledged (tracked with the packets' free
 *       callbacks), so ENet's own send window and throttle decide the pace. The time runs from the first send to
 *       the server's 'D'. Prints {"test":"bulk","bytes":..,"seconds":..,"mb_per_s":..,"packet":..,"window":..}.
 *
 *   enet_bench client HOST PORT --test rtt --count N [--size BYTES]
 *       N reliable round trips of --size (default 64) bytes, one at a time, after 100 discarded warm-up round
 *       trips. Prints {"test":"rtt","messages":N,"p50_us":..,"p90_us":..,"p99_us":..,"p999_us":..}.
 *
 * Common client options: --timeout SECONDS (default 120) bounds the whole run; a lost connection or the timeout
 * is an error (exit status 1, message on stderr). MB = 10^6 bytes. Percentiles: the sorted sample at
 * index round(p * (N - 1)), as `huddle bench` computes them.
 */
#define _GNU_SOURCE
#include <enet/enet.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WARMUP 100

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

/* ------------------------------------------------------------------------------------------------ server */

typedef struct {
    int bulk;
    uint64_t expected, received;
} PeerState;

static int run_server(int port, const char *bind_addr, double timeout) {
    ENetAddress address;
    if (enet_address_set_host(&address, bind_addr) != 0) {
        fprintf(stderr, "enet_bench: cannot resolve %s\n", bind_addr);
        return 2;
    }
    address.port = (enet_uint16)port;
    ENetHost *host = enet_host_create(&address, 4, 1, 0, 0);
    if (!host) {
        fprintf(stderr, "enet_bench: cannot bind %s:%d\n", bind_addr, port);
        return 2;
    }
    ENetAddress bound;
    if (enet_socket_get_address(host->socket, &bound) == 0) port = bound.port;
    printf("{\"listening\":%d}\n", port);
    fflush(stdout);

    double deadline = now_s() + timeout;
    int status = 0;
    for (;;) {
        if (now_s() > deadline) {
            fprintf(stderr, "enet_bench server: timeout after %.0f s\n", timeout);
            status = 1;
            break;
        }
        ENetEvent event;
        int rc = enet_host_service(host, &event, 100);
        if (rc < 0) {
            fprintf(stderr, "enet_bench server: enet_host_service failed\n");
            status = 2;
            break;
        }
        int done = 0;
        while (rc > 0) {
            switch (event.type) {
            case ENET_EVENT_TYPE_CONNECT:
                event.peer->data = calloc(1, sizeof(PeerState));
                break;
            case ENET_EVENT_TYPE_RECEIVE: {
                PeerState *state = event.peer->data;
                ENetPacket *packet = event.packet;
                if (state && state->bulk) {
                    state->received += packet->dataLength;
                    if (state->received >= state->expected) {
                        state->bulk = 0;
                        enet_peer_send(event.peer, 0, enet_packet_create("D", 1, ENET_PACKET_FLAG_RELIABLE));
                        enet_host_flush(host);
                    }
                } else if (state && packet->dataLength == 9 && packet->data[0] == 'B') {
                    uint64_t total = 0;
                    for (int i = 0; i < 8; i++) total |= (uint64_t)packet->data[1 + i] << (8 * i);
                    state->bulk = 1;
                    state->expected = total;
                    state->received = 0;
                } else {
                    enet_peer_send(event.peer, 0,
                                   enet_packet_create(packet->data, packet->dataLength, ENET_PACKET_FLAG_RELIABLE));
                    enet_host_flush(host);
                }
                enet_packet_destroy(packet);
                break;
            }
            case ENET_EVENT_TYPE_DISCONNECT:
                free(event.peer->data);
                event.peer->data = NULL;
                done = 1;
                break;
            default:
                break;
            }
            rc = enet_host_check_events(host, &event);
        }
        if (done) break;
    }
    enet_host_destroy(host);
    return status;
}

/* ------------------------------------------------------------------------------------------------ client */

static uint64_t outstanding_bytes = 0;

static void on_packet_free(ENetPacket *packet) { outstanding_bytes -= packet->dataLength; }

static ENetHost *client_host;
static ENetPeer *client_peer;
static double client_deadline;

static int connect_to(const char *host_name, int port) {
    client_host = enet_host_create(NULL, 1, 1, 0, 0);
    if (!client_host) {
        fprintf(stderr, "enet_bench: cannot create client host\n");
        return -1;
    }
    ENetAddress address;
    if (enet_address_set_host(&address, host_name) != 0) {
        fprintf(stderr, "enet_bench: cannot resolve %s\n", host_name);
        return -1;
    }
    address.port = (enet_uint16)port;
    client_peer = enet_host_connect(client_host, &address, 1, 0);
    if (!client_peer) {
        fprintf(stderr, "enet_bench: enet_host_connect failed\n");
        return -1;
    }
    ENetEvent event;
    while (now_s() < client_deadline) {
        int rc = enet_host_service(client_host, &event, 100);
        if (rc > 0 && event.type == ENET_EVENT_TYPE_CONNECT) return 0;
        if (rc > 0 && event.type == ENET_EVENT_TYPE_DISCONNECT) break;
        if (rc < 0) break;
    }
    fprintf(stderr, "enet_bench: could not connect to %s:%d\n", host_name, port);
    return -1;
}

static void disconnect_gracefully(void) {
    enet_peer_disconnect(client_peer, 0);
    ENetEvent event;
    double until = now_s() + 2;
    while (now_s() < until) {
        int rc = enet_host_service(client_host, &event, 50);
        if (rc > 0 && event.type == ENET_EVENT_TYPE_RECEIVE) enet_packet_destroy(event.packet);
        if (rc > 0 && event.type == ENET_EVENT_TYPE_DISCONNECT) return;
        if (rc < 0) break;
    }
    enet_peer_reset(client_peer);
}

/* Handles one client-side event; returns 1 for the expected 'D' (or echo, when want_seq >= 0), -1 on loss. */
static int handle_client_event(ENetEvent *event, int64_t want_seq, size_t want_size) {
    if (event->type == ENET_EVENT_TYPE_DISCONNECT) {
        fprintf(stderr, "enet_bench: disconnected by the server\n");
        return -1;
    }
    if (event->type != ENET_EVENT_TYPE_RECEIVE) return 0;
    ENetPacket *packet = event->packet;
    int result = 0;
    if (want_seq < 0) {
        result = packet->dataLength == 1 && packet->data[0] == 'D';
    } else if (packet->dataLength == want_size) {
        int64_t seq;
        memcpy(&seq, packet->data, sizeof(seq));
        result = seq == want_seq;
    }
    enet_packet_destroy(packet);
    return result;
}

static int run_bulk(uint64_t size, size_t packet_size, uint64_t window) {
    if (size == 0 || packet_size == 0) {
        fprintf(stderr, "enet_bench: --size and --packet must be > 0\n");
        return 2;
    }
    char *payload = malloc(packet_size);
    if (!payload) return 2;
    memset(payload, 'x', packet_size);

    double start = now_s();
    unsigned char control[9] = {'B'};
    for (int i = 0; i < 8; i++) control[1 + i] = (unsigned char)(size >> (8 * i));
    enet_peer_send(client_peer, 0, enet_packet_create(control, sizeof(control), ENET_PACKET_FLAG_RELIABLE));

    uint64_t queued = 0;
    int done = 0;
    while (!done) {
        while (queued < size && outstanding_bytes < window) {
            size_t n = size - queued < packet_size ? (size_t)(size - queued) : packet_size;
            ENetPacket *packet = enet_packet_create(payload, n, ENET_PACKET_FLAG_RELIABLE);
            packet->freeCallback = on_packet_free;
            outstanding_bytes += n;
            if (enet_peer_send(client_peer, 0, packet) != 0) {
                fprintf(stderr, "enet_bench: enet_peer_send failed after %llu bytes\n", (unsigned long long)queued);
                return 1;
            }
            queued += n;
        }
        if (now_s() > client_deadline) {
            fprintf(stderr, "enet_bench: timeout with %llu of %llu bytes queued, %llu unacknowledged\n",
                    (unsigned long long)queued, (unsigned long long)size, (unsigned long long)outstanding_bytes);
            return 1;
        }
        ENetEvent event;
        int rc = enet_host_service(client_host, &event, 1);
        while (rc > 0) {
            int r = handle_client_event(&event, -1, 0);
            if (r < 0) return 1;
            if (r > 0) done = 1;
            rc = enet_host_check_events(client_host, &event);
        }
        if (rc < 0) {
            fprintf(stderr, "enet_bench: enet_host_service failed\n");
            return 1;
        }
    }
    double seconds = now_s() - start;
    printf("{\"test\":\"bulk\",\"bytes\":%llu,\"seconds\":%.6f,\"mb_per_s\":%.2f,\"packet\":%zu,\"window\":%llu}\n",
           (unsigned long long)size, seconds, (double)size / seconds / 1e6, packet_size, (unsigned long long)window);
    fflush(stdout);
    return 0;
}

static int run_rtt(long count, size_t size) {
    if (count <= 0 || size < 8) {
        fprintf(stderr, "enet_bench: --count must be > 0 and --size >= 8\n");
        return 2;
    }
    char *payload = calloc(1, size);
    double *samples = malloc(sizeof(double) * (size_t)count);
    if (!payload || !samples) return 2;
    memset(payload, 'x', size);
    long total = count + WARMUP;
    for (long i = 0; i < total; i++) {
        int64_t seq = i;
        memcpy(payload, &seq, sizeof(seq));
        double start = now_s();
        enet_peer_send(client_peer, 0, enet_packet_create(payload, size, ENET_PACKET_FLAG_RELIABLE));
        enet_host_flush(client_host);
        int got = 0;
        while (!got) {
            if (now_s() - start > 2.0 || now_s() > client_deadline) {
                fprintf(stderr, "enet_bench: no echo for round trip #%ld within 2 s\n", i);
                return 1;
            }
            ENetEvent event;
            int rc = enet_host_service(client_host, &event, 1);
            while (rc > 0) {
                int r = handle_client_event(&event, seq, size);
                if (r < 0) return 1;
                if (r > 0) got = 1;
                rc = enet_host_check_events(client_host, &event);
            }
            if (rc < 0) {
                fprintf(stderr, "enet_bench: enet_host_service failed\n");
                return 1;
            }
        }
        double rtt = now_s() - start;
        if (i >= WARMUP) samples[i - WARMUP] = rtt * 1e6;
    }
    qsort(samples, (size_t)count, sizeof(double), cmp_double);
    printf("{\"test\":\"rtt\",\"messages\":%ld,\"size\":%zu,\"p50_us\":%.1f,\"p90_us\":%.1f,\"p99_us\":%.1f,"
           "\"p999_us\":%.1f,\"min_us\":%.1f,\"max_us\":%.1f}\n",
           count, size, percentile(samples, count, 0.5), percentile(samples, count, 0.9),
           percentile(samples, count, 0.99), percentile(samples, count, 0.999), samples[0], samples[count - 1]);
    fflush(stdout);
    return 0;
}

static void usage(void) {
    fprintf(stderr,
            "usage: enet_bench server PORT [--bind ADDR] [--timeout SECONDS]\n"
            "       enet_bench client HOST PORT --test bulk --size BYTES --packet BYTES [--window BYTES]\n"
            "       enet_bench client HOST PORT --test rtt --count N [--size BYTES]\n"
            "       (client: [--timeout SECONDS])\n");
}

int main(int argc, char **argv) {
    if (enet_initialize() != 0) {
        fprintf(stderr, "enet_bench: enet_initialize failed\n");
        return 2;
    }
    atexit(enet_deinitialize);
    if (argc >= 3 && strcmp(argv[1], "server") == 0) {
        const char *bind_addr = "127.0.0.1";
        double timeout = 300;
        for (int i = 3; i < argc; i++) {
            if (strcmp(argv[i], "--bind") == 0 && i + 1 < argc) bind_addr = argv[++i];
            else if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc) timeout = atof(argv[++i]);
            else { usage(); return 2; }
        }
        return run_server(atoi(argv[2]), bind_addr, timeout);
    }
    if (argc >= 4 && strcmp(argv[1], "client") == 0) {
        const char *test = NULL;
        uint64_t size = 0, window = 1024 * 1024;
        size_t packet = 0;
        long count = 0;
        double timeout = 120;
        int size_given = 0;
        for (int i = 4; i < argc; i++) {
            if (i + 1 >= argc) { usage(); return 2; }
            if (strcmp(argv[i], "--test") == 0) test = argv[++i];
            else if (strcmp(argv[i], "--size") == 0) { size = strtoull(argv[++i], NULL, 10); size_given = 1; }
            else if (strcmp(argv[i], "--packet") == 0) packet = strtoull(argv[++i], NULL, 10);
            else if (strcmp(argv[i], "--window") == 0) window = strtoull(argv[++i], NULL, 10);
            else if (strcmp(argv[i], "--count") == 0) count = atol(argv[++i]);
            else if (strcmp(argv[i], "--timeout") == 0) timeout = atof(argv[++i]);
            else { usage(); return 2; }
        }
        if (!test || (strcmp(test, "bulk") != 0 && strcmp(test, "rtt") != 0)) { usage(); return 2; }
        client_deadline = now_s() + timeout;
        if (connect_to(argv[2], atoi(argv[3])) != 0) return 1;
        int status = strcmp(test, "bulk") == 0 ? run_bulk(size, packet, window)
                                               : run_rtt(count, size_given ? (size_t)size : 64);
        if (status == 0) disconnect_gracefully();
        else enet_peer_disconnect_now(client_peer, 0);
        enet_host_flush(client_host);
        enet_host_destroy(client_host);
        return status;
    }
    usage();
    return 2;
}
