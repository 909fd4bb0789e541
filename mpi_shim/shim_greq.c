/*
 * shim_greq.c - generalized requests (MPI-3.1 section 12.2): requests whose operation the
 * program runs itself and completes with MPI_Grequest_complete.
 *
 * A generalized request is an ordinary shim_req of kind SHIM_REQ_GREQ whose pg part is
 * initialized but never posted: MPI_Grequest_complete completes it, so MPI_Wait, MPI_Test
 * and the any/all/some forms work on it unchanged. shim_req_complete asks the query
 * callback for the status and shim_req_free calls the free callback.
 */
#include "config.h"

#include "shim_req.h"
#include "mps_log.h"
#include "pgc_status.h"

#include <stdlib.h>

struct shim_greq {
    MPI_Grequest_query_function *query_fn;
    MPI_Grequest_free_function *free_fn;
    MPI_Grequest_cancel_function *cancel_fn;
    void *extra_state;
    bool completed; /* MPI_Grequest_complete was called */
    bool orphan;    /* MPI_Request_free came first: MPI_Grequest_complete frees it */
    bool freed;     /* the free callback ran */
};

#pragma weak MPI_Grequest_start = PMPI_Grequest_start
int PMPI_Grequest_start(MPI_Grequest_query_function *query_fn, MPI_Grequest_free_function *free_fn,
                        MPI_Grequest_cancel_function *cancel_fn, void *extra_state,
                        MPI_Request *request)
{
    struct shim_greq *g;
    struct shim_req *r;
    int rc = shim_check_init(SHIM_FN);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (!query_fn || !free_fn || !cancel_fn || !request) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_ARG,
                          "the query, free and cancel functions and request must not be NULL");
    }
    g = calloc(1, sizeof(*g));
    r = g ? shim_req_new(SHIM_REQ_GREQ, MPI_COMM_WORLD) : NULL;
    if (!r) {
        free(g);
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_NO_MEM, "no memory for a request");
    }
    *g = (struct shim_greq){query_fn, free_fn, cancel_fn, extra_state, false, false, false};
    pg_req_init(&r->pr, PG_REQ_SEND);
    r->greq = g;
    r->active = true;
    *request = r->handle;
    return MPI_SUCCESS;
}

#pragma weak MPI_Grequest_complete = PMPI_Grequest_complete
int PMPI_Grequest_complete(MPI_Request request)
{
    struct shim_req *r = shim_req_get(request);

    if (!r || !r->greq) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_REQUEST,
                          "request 0x%x is not a generalized request", (unsigned)request);
    }
    if (r->greq->completed) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_REQUEST,
                          "generalized request 0x%x is already complete", (unsigned)request);
    }
    r->greq->completed = true;
    if (r->greq->orphan) {
        shim_req_free(r);
        return MPI_SUCCESS;
    }
    pg_req_complete(&r->pr, PGC_OK);
    return MPI_SUCCESS;
}

int shim_greq_query(struct shim_req *r, MPI_Status *st)
{
    MPI_Status mine = {0};
    MPI_Status *out = st == MPI_STATUS_IGNORE ? &mine : st;
    int keep = out->MPI_ERROR, rc;

    /* An empty status the callback fills in (MPI_Status_set_elements/_cancelled, source,
     * tag); MPI_ERROR stays the caller's (single-completion calls never write it). */
    out->count_lo = 0;
    out->count_hi_and_cancelled = 0;
    out->MPI_SOURCE = MPI_UNDEFINED;
    out->MPI_TAG = MPI_UNDEFINED;
    rc = r->greq->query_fn(r->greq->extra_state, out);
    out->MPI_ERROR = keep;
    return rc;
}

void shim_greq_release(struct shim_req *r)
{
    struct shim_greq *g = r->greq;

    r->greq = NULL;
    if (!g->freed) {
        g->freed = true;
        g->free_fn(g->extra_state);
    }
    free(g);
}

void shim_greq_cancel(struct shim_req *r)
{
    r->greq->cancel_fn(r->greq->extra_state, r->greq->completed);
}

bool shim_greq_orphan(struct shim_req *r)
{
    if (r->greq->completed) {
        return false;
    }
    r->greq->orphan = true;
    return true;
}
