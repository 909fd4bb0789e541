/*
 * store_tool.c - for test_store_attack.sh: serves a TCP store with a token, attacks it the
 * way issue 40 did (no token, a wrong token, a planted key, one frame too large, keys and
 * bytes past their caps, an answer past the buffer cap behind a client that reads nothing)
 * and keeps the hostile connections open while a job uses the same store.
 *
 * usage: store_tool TOKEN   (the caps come from MPISHIM_STORE_*; see the script)
 * Prints one line per attack ("refused <name>: <message>" or "NOT REFUSED <name>"), then
 * "port P" and "ready", serves until stdin closes, and exits 0 only if every attack was
 * refused with the error that names its cause and nothing it tried to write was stored.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "boot_store.h"
#include "mps_log.h"
#include "pgc_status.h"

static int port, failures;
static const char *token_arg;

static void verdict(const char *name, int rc, int want, const char *cause)
{
    if (rc == want && strstr(mps_last_error(), cause)) {
        printf("refused %s: %s\n", name, mps_last_error());
    } else {
        printf("NOT REFUSED %s: status %d, expected %d with \"%s\" (%s)\n", name, rc, want, cause,
               rc ? mps_last_error() : "ok");
        failures++;
    }
    fflush(stdout);
}

static struct boot_store *client(const char *token)
{
    struct boot_store *s = NULL;

    if (boot_store_tcp_connect_token("127.0.0.1", port, token, 10.0, &s) != PGC_OK) {
        fprintf(stderr, "store_tool: %s\n", mps_last_error());
        exit(1);
    }
    return s;
}

static int raw_connect(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
                            .sin_port = htons((uint16_t)port)};
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        perror("store_tool: connect");
        exit(1);
    }
    return fd;
}

static void put_u32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/* A set of "planted" straight on a socket, skipping the token; returns the socket. */
static int plant_without_token(void)
{
    unsigned char f[64] = {0};
    int fd = raw_connect();

    put_u32(f + 4, 1);  /* BOOT_OP_SET */
    put_u32(f + 16, 2); /* two fields */
    put_u32(f + 20, 7);
    memcpy(f + 24, "planted", 7);
    put_u32(f + 31, 1);
    f[35] = 'x';
    put_u32(f, 36 - 4);
    send(fd, f, 36, MSG_NOSIGNAL);
    return fd;
}

static void attack_tokens(const char *token, struct boot_store *s)
{
    struct boot_store *bad = NULL;
    const char *k = "planted";
    bool there = true;
    char wrong[256];

    verdict("no token", boot_store_tcp_connect_token("127.0.0.1", port, "", 5.0, &bad),
            PGC_ERR_BOOT, "the store requires a token");
    snprintf(wrong, sizeof(wrong), "%.*sX", (int)strlen(token) - 1, token);
    verdict("wrong token", boot_store_tcp_connect_token("127.0.0.1", port, wrong, 5.0, &bad),
            PGC_ERR_BOOT, "not the job's token");
    close(plant_without_token());
    /* A round trip after the planting connection's frame was sent: the server read it. */
    boot_store_check(s, &k, 1, &there);
    boot_store_check(s, &k, 1, &there);
    printf("%s planted key: %s\n", there ? "NOT REFUSED" : "refused",
           there ? "stored without the token" : "not stored");
    failures += there;
}

static void attack_caps(struct boot_store *s)
{
    size_t big = 9u << 20;
    char *v = calloc(1, big), key[32];
    int rc = PGC_OK, i;

    verdict("frame", boot_store_set(s, "attack/frame", v, big), PGC_ERR_NOMEM,
            "MPISHIM_STORE_FRAME_MAX");
    for (i = 0; i < 100000 && rc == PGC_OK; i++) {
        snprintf(key, sizeof(key), "attack/k%d", i);
        rc = boot_store_set(s, key, "v", 1);
    }
    verdict("keys", rc, PGC_ERR_NOMEM, "MPISHIM_STORE_KEYS_MAX");
    while (i-- > 0) {
        snprintf(key, sizeof(key), "attack/k%d", i);
        boot_store_delete(s, key, NULL);
    }
    boot_store_set(s, "attack/a", v, 5u << 20);
    verdict("data", boot_store_set(s, "attack/b", v, 5u << 20), PGC_ERR_NOMEM,
            "MPISHIM_STORE_DATA_MAX");
    free(v);
}

/* A client that asks for the 5 MiB value and reads nothing holds the server's buffers;
 * the next large answer is refused. Returns that client's socket, left open. */
static int attack_buffer(struct boot_store *s, const struct boot_store_server *srv)
{
    unsigned char f[64] = {0};
    int small = 1, fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
                            .sin_port = htons((uint16_t)port)};
    void *got = NULL;
    size_t len = 0;
    int64_t n;

    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        perror("store_tool: connect");
        exit(1);
    }
    size_t tl = strlen(token_arg);
    put_u32(f + 4, 9); /* BOOT_OP_AUTH */
    put_u32(f + 16, 1);
    put_u32(f + 20, (uint32_t)tl);
    memcpy(f + 24, token_arg, tl);
    put_u32(f, (uint32_t)(20 + tl));
    send(fd, f, 24 + tl, MSG_NOSIGNAL);
    if (recv(fd, f, 12, MSG_WAITALL) != 12) { /* the answer: accepted and served */
        perror("store_tool: the token's answer");
        exit(1);
    }
    memset(f, 0, sizeof(f));
    put_u32(f + 4, 2); /* BOOT_OP_GET, timeout 0 */
    put_u32(f + 16, 1);
    put_u32(f + 20, 8);
    memcpy(f + 24, "attack/a", 8);
    put_u32(f, 28);
    send(fd, f, 32, MSG_NOSIGNAL);
    /* The attack holds only once the server has queued the unread answer; wait for it
     * instead of guessing from round trips of the other client (the server thread may be
     * slower than this one, as under ThreadSanitizer). */
    for (n = 0; boot_store_server_buffered(srv) < (5u << 20); n++) {
        if (n == 30000) {
            printf("NOT REFUSED buffer: the server never buffered the unread 5 MiB answer\n");
            failures++;
            return fd;
        }
        usleep(1000);
    }
    verdict("buffer", boot_store_get(s, "attack/a", &got, &len), PGC_ERR_NOMEM,
            "MPISHIM_STORE_BUFFER_MAX");
    free(got);
    return fd;
}

int main(int argc, char **argv)
{
    struct boot_store_server *srv = NULL;
    char c;

    if (argc != 2 || !*argv[1] || strlen(argv[1]) > 40) {
        fprintf(stderr, "usage: store_tool TOKEN (1 to 40 characters)\n");
        return 2;
    }
    token_arg = argv[1];
    if (boot_store_server_start_token("127.0.0.1", 0, argv[1], &srv) != PGC_OK) {
        fprintf(stderr, "store_tool: %s\n", mps_last_error());
        return 1;
    }
    port = boot_store_server_port(srv);
    struct boot_store *s = client(argv[1]);
    attack_tokens(argv[1], s);
    attack_caps(s);
    int held = attack_buffer(s, srv);
    int unauth = raw_connect(); /* connected, silent, never authenticated */
    boot_store_delete(s, "attack/a", NULL);
    printf("port %d\nready\n", port);
    fflush(stdout);
    while (read(0, &c, 1) > 0) {
    }
    close(held);
    close(unauth);
    boot_store_close(s);
    boot_store_server_stop(srv);
    return failures ? 1 : 0;
}
