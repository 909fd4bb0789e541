/*
 * pg_group_sub.h - group calls that only some members of the parent take part in, and the
 * neighbourhood exchange (one round of sends and receives to arbitrary peers) that the
 * topology collectives of the MPI layer are built on.
 */
#ifndef PG_GROUP_SUB_H
#define PG_GROUP_SUB_H

#include "pg.h"

/*
 * Creates the group of parent_ranks[0..n-1] (parent group ranks, in the new group's order)
 * by a collective over those members only: the other members of parent do not call it.
 * Every member must pass the same list and the same tag. Concurrent calls that share
 * members must use different tags (as MPI_Comm_create_group requires).
 *
 * The context id is agreed among the members through a temporary group whose id is derived
 * from (parent context, tag, member list) with bit 62 set, so it never equals a real id
 * (real ids are small counters). Returns PGC_OK and *out (the caller owns one reference),
 * PGC_ERR_INVALID_RANK for a rank outside parent, PGC_ERR_INVALID_ARG when the caller is not
 * in the list or the list has duplicates; on error *out is NULL and nothing stays posted.
 */
int pg_group_create_sub(struct pg_group *parent, const int *parent_ranks, int n, int tag,
                        struct pg_group **out);

/* A temporary group's id: the same on every member (a hash of the parent's id, tag and the
 * member list), between PG_CTX_LIMIT and twice it, so distinct from every real id. */
uint64_t pg_group_temp_ctx(const struct pg_group *parent, int tag, const int *world, int n);
/* The tags of the temporary groups of non-blocking dups are PG_IDUP_TAG minus the
 * creation's sequence number on the parent: below pg_coll_hier.c's, and no MPI tag. */
#define PG_IDUP_TAG (-(1 << 20))

/*
 * The remote view of an intercommunicator: a group whose members are the other side's
 * processes (remote_world[0..nremote-1], world ranks in their remote-rank order) and whose
 * own rank is my rank in my side (local_rank). Sending to group rank r reaches remote rank
 * r, and a message from me carries local_rank as its source, which is the rank the other
 * side knows me by: point-to-point across needs no translation. The context id is agreed by
 * one allreduce over uni (the union of both sides), so every member of uni calls it. The
 * view has no shared-memory channel and runs no collective.
 */
int pg_group_remote_view(struct pg_group *uni, int local_rank, const int *remote_world,
                         int nremote, struct pg_group **out);

/* One transfer of a neighbourhood exchange: bytes at buf to or from group rank peer.
 * A peer of PG_PROC_NULL is skipped (its buffer slot exists but is not touched). */
struct pg_nbr_xfer {
    int peer;
    void *buf;
    size_t bytes;
};

/*
 * Starts one round that posts every receive of recvs and every send of sends at once and
 * completes req (kind PG_REQ_COLL) when all are done. Collective over g: every member calls
 * it, in the same order as its other collectives on g. Several transfers to one peer are
 * paired in list order (the messages share a tag and are not overtaken). The arrays are
 * copied, so the caller may free them at return; the buffers must stay valid until req
 * completes. A receive longer than its slot ends req with PGC_ERR_TRUNCATE.
 */
int pg_ineighbor(struct pg_group *g, const struct pg_nbr_xfer *sends, int nsend,
                 const struct pg_nbr_xfer *recvs, int nrecv, struct pg_req *req);

#endif
