/*
 * boot_impl.h - private to pmix_boot/: the bootstrap object and its methods.
 *
 * boot.c picks a method and calls its start function, which fills info.rank/size and sets
 * b->m; boot.c then gathers the node names and derives the local ranks. Each method
 * provides the collectives; fini releases what start acquired (it is called once, after
 * the final barrier, or after a failed start of the node table).
 */
#ifndef BOOT_IMPL_H
#define BOOT_IMPL_H

#include "boot.h"

#include <stdbool.h>
#include <stdint.h>

struct boot_method {
    int (*allgather)(struct boot *b, const void *in, size_t len, void *out);
    int (*barrier)(struct boot *b);
    void (*abort)(struct boot *b, int code, const char *msg);
    /* barrier_ok: the final barrier succeeded, so every peer is still there. */
    void (*fini)(struct boot *b, bool barrier_ok);
    /* Optional: PGC_ERR_PEER_DEAD naming a rank the method learned is gone (boot_peers_alive). */
    int (*peers_alive)(struct boot *b);
};

struct boot {
    struct boot_info info;
    const struct boot_method *m;
    double timeout; /* seconds, for every collective */
    char *nodes;    /* size * BOOT_NODE_MAX */
    uint64_t seq;   /* allgather round, the same on every rank */
    struct boot_store *store;
    struct boot_store_server *server; /* rank 0 of env:// and tcp:// serves the store */
    double store_silent_since; /* mps_now() of the first of the store's unanswered checks */
    void *priv;                       /* the PMIx or PMI-1 method's state */
};

/* Method starts: on failure they record the cause and leave b as it was (b->m unset). */
int boot_pmix_start(struct boot *b);
int boot_env_start(struct boot *b, const struct boot_opts *o);
int boot_tcp_start(struct boot *b, const char *addr, const struct boot_opts *o);
int boot_file_start(struct boot *b, const char *path, const struct boot_opts *o);
int boot_pmi1_start(struct boot *b);
/* boot_abort_launcher's PMI-1 part: cmd=abort on PMI_FD where hydra gave one. */
void boot_pmi1_abort_launcher(int code);

#endif
