/*
 * shim_wait.c - completing requests: MPI_Wait/Test and their any/all/some forms,
 * MPI_Request_free, MPI_Request_get_status, MPI_Cancel, and reading statuses.
 *
 * Inactive persistent requests and MPI_REQUEST_NULL count as complete with an empty
 * status, as the standard says. A request that completed with an error raises it on its
 * communicator (the call returns the class when the handler returns).
 */
#include "config.h"

#include "shim_req.h"
#include "shim_comm.h"
#include "mps_log.h"
#include "pgc_status.h"

#include <stdio.h>
#include <stdlib.h>

/* The pg request to wait for, NULL for null or inactive requests; MPI_ERR_REQUEST for a
 * handle that is no request. */
static int req_lookup(MPI_Request h, const char *fn, struct shim_req **out)
{
    *out = NULL;
    if (h == MPI_REQUEST_NULL) {
        return MPI_SUCCESS;
    }
    *out = shim_req_get(h);
    if (!*out) {
        return shim_error(MPI_COMM_WORLD, fn, MPI_ERR_REQUEST, "invalid request handle 0x%x",
                          (unsigned)h);
    }
    if (!(*out)->active) {
        *out = NULL;
    }
    return MPI_SUCCESS;
}

/* Completes a finished request: raises its error, fills status, frees it. */
static int finish_one(MPI_Request *h, struct shim_req *r, MPI_Status *st, const char *fn)
{
    int err = r->pr.status != PGC_OK ? shim_req_raise(r, fn) : MPI_SUCCESS;

    shim_req_complete(r, h, st);
    return err;
}

static int wait_one(MPI_Request *h, MPI_Status *st, const char *fn)
{
    struct shim_req *r;
    int rc = req_lookup(*h, fn, &r);

    if (rc != MPI_SUCCESS || !r) {
        shim_status_empty(st);
        return rc;
    }
    /* Most requests of a Waitall are done by the time it looks: skip the wait's setup. */
    rc = pg_req_is_done(&r->pr) ? PGC_OK : pg_wait(&r->pr, -1);
    if (!pg_req_is_done(&r->pr)) {
        return shim_error(r->comm, fn, shim_errclass(rc), "%s", mps_last_error());
    }
    return finish_one(h, r, st, fn);
}

int shim_wait_named(MPI_Request *request, MPI_Status *status, const char *fn)
{
    return wait_one(request, status, fn);
}

#pragma weak MPI_Wait = PMPI_Wait
int PMPI_Wait(MPI_Request *request, MPI_Status *status)
{
    int rc = shim_check_init(SHIM_FN);

    return rc != MPI_SUCCESS ? rc : wait_one(request, status, SHIM_FN);
}

#pragma weak MPI_Test = PMPI_Test
int PMPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    struct shim_req *r;
    int rc = shim_check_init(SHIM_FN);

    if (rc == MPI_SUCCESS) {
        rc = req_lookup(*request, SHIM_FN, &r);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    *flag = !r || pg_test(&r->pr);
    if (!r) {
        shim_status_empty(status);
        return MPI_SUCCESS;
    }
    return *flag ? finish_one(request, r, status, SHIM_FN) : MPI_SUCCESS;
}

static MPI_Status *status_at(MPI_Status *sts, int i)
{
    return sts == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &sts[i];
}

/* After a multi-completion call that failed: statuses[i].MPI_ERROR = errs[i] for the n
 * entries, the only time MPI writes that field. */
static void set_errors(MPI_Status *statuses, const int *errs, int n)
{
    for (int i = 0; statuses != MPI_STATUSES_IGNORE && i < n; i++) {
        statuses[i].MPI_ERROR = errs[i];
    }
}

/* What a multi-completion call returns when some of its n requests failed: a code of class
 * MPI_ERR_IN_STATUS whose text counts them (each one's own error, already raised on its
 * communicator, is in its status). */
static int in_status(const char *fn, int failed, int n)
{
    char msg[MPI_MAX_ERROR_STRING];

    snprintf(msg, sizeof(msg),
             "%s (rank %d): %d of %d completed requests failed; the MPI_ERROR field of their "
             "statuses says why",
             fn, pg_world_rank(), failed, n);
    return shim_errcode_make(MPI_ERR_IN_STATUS, msg);
}

#pragma weak MPI_Waitall = PMPI_Waitall
int PMPI_Waitall(int count, MPI_Request reqs[], MPI_Status *statuses)
{
    int stack[64];
    int *errs = count <= 64 ? stack : malloc(sizeof(int) * (size_t)count);
    int rc = shim_check_init(SHIM_FN);
    int failed = 0;

    if (rc == MPI_SUCCESS && !errs) {
        rc = shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_NO_MEM, "no memory for %d requests",
                        count);
    }
    for (int i = 0; rc == MPI_SUCCESS && i < count; i++) {
        errs[i] = wait_one(&reqs[i], status_at(statuses, i), SHIM_FN);
        failed += errs[i] != MPI_SUCCESS;
    }
    if (rc == MPI_SUCCESS && failed) {
        set_errors(statuses, errs, count);
        rc = in_status(SHIM_FN, failed, count);
    }
    if (errs != stack) {
        free(errs);
    }
    return rc;
}

#pragma weak MPI_Testall = PMPI_Testall
int PMPI_Testall(int count, MPI_Request reqs[], int *flag, MPI_Status *statuses)
{
    int rc = shim_check_init(SHIM_FN);
    struct shim_req *r;

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    pg_progress();
    *flag = 1;
    for (int i = 0; i < count && *flag; i++) {
        rc = req_lookup(reqs[i], SHIM_FN, &r);
        if (rc != MPI_SUCCESS) {
            return rc;
        }
        *flag = !r || pg_req_is_done(&r->pr);
    }
    /* All or nothing: complete them only when every one is done. */
    return *flag ? PMPI_Waitall(count, reqs, statuses) : MPI_SUCCESS;
}

/* The pg requests of an array (NULL for null/inactive ones); *active counts the others. */
static int collect(int count, MPI_Request reqs[], struct pg_req **prs, int *active,
                   const char *fn)
{
    struct shim_req *r;

    *active = 0;
    for (int i = 0; i < count; i++) {
        int rc = req_lookup(reqs[i], fn, &r);
        if (rc != MPI_SUCCESS) {
            return rc;
        }
        prs[i] = r ? &r->pr : NULL;
        *active += r != NULL;
    }
    return MPI_SUCCESS;
}

/* The communicator of the first active request (they were all looked up), for an error of
 * the wait that is not any one request's. */
static MPI_Comm first_comm(MPI_Request reqs[], int count)
{
    for (int i = 0; i < count; i++) {
        struct shim_req *r = shim_req_get(reqs[i]);
        if (r && r->comm != MPI_COMM_NULL) {
            return r->comm;
        }
    }
    return MPI_COMM_WORLD;
}

static int any_common(int count, MPI_Request reqs[], int *index, int *flag, MPI_Status *st,
                      bool block, const char *fn)
{
    struct pg_req *stack[64];
    struct pg_req **prs = count <= 64 ? stack : malloc(sizeof(*prs) * (size_t)count);
    int active, rc;

    *index = MPI_UNDEFINED;
    *flag = 0;
    if (!prs) {
        return shim_error(MPI_COMM_WORLD, fn, MPI_ERR_NO_MEM, "no memory for %d requests", count);
    }
    rc = collect(count, reqs, prs, &active, fn);
    if (rc == MPI_SUCCESS && active == 0) {
        *flag = 1;
        shim_status_empty(st);
    } else if (rc == MPI_SUCCESS) {
        pg_progress();
        for (int i = 0; i < count && *index < 0; i++) {
            *index = prs[i] && pg_req_is_done(prs[i]) ? i : MPI_UNDEFINED;
        }
        int prc = *index < 0 && block ? pg_wait_any(prs, count, index, -1) : PGC_OK;
        if (prc != PGC_OK) {
            /* Raised on a communicator of the requests, whose handler the caller chose (a
             * Waitany on requests of an MPI_ERRORS_RETURN communicator returns). */
            rc = shim_error(first_comm(reqs, count), fn, shim_errclass(prc), "%s",
                            mps_last_error());
            *index = MPI_UNDEFINED;
        }
        if (*index >= 0) {
            *flag = 1;
            rc = finish_one(&reqs[*index], shim_req_get(reqs[*index]), st, fn);
        }
    }
    if (prs != stack) {
        free(prs);
    }
    return rc;
}

#pragma weak MPI_Waitany = PMPI_Waitany
int PMPI_Waitany(int count, MPI_Request reqs[], int *index, MPI_Status *status)
{
    int flag, rc = shim_check_init(SHIM_FN);

    return rc != MPI_SUCCESS ? rc : any_common(count, reqs, index, &flag, status, true, SHIM_FN);
}

#pragma weak MPI_Testany = PMPI_Testany
int PMPI_Testany(int count, MPI_Request reqs[], int *index, int *flag, MPI_Status *status)
{
    int rc = shim_check_init(SHIM_FN);

    return rc != MPI_SUCCESS ? rc : any_common(count, reqs, index, flag, status, false, SHIM_FN);
}

/* Completes every finished request; *outcount is how many (MPI_UNDEFINED if none active).
 * With count 0 the arrays may be NULL: nothing but *outcount is written. */
static int some_common(int count, MPI_Request reqs[], int *outcount, int indices[],
                       MPI_Status *statuses, bool block, const char *fn)
{
    int index, flag, failed = 0, active = 0, stack[64], *errs;
    int rc = any_common(count, reqs, &index, &flag,
                        count > 0 ? status_at(statuses, 0) : MPI_STATUS_IGNORE, block, fn);

    *outcount = 0;
    if (index == MPI_UNDEFINED) {
        for (int i = 0; i < count; i++) {
            struct shim_req *r = shim_req_get(reqs[i]);
            active += r && r->active;
        }
        *outcount = active || !flag ? 0 : MPI_UNDEFINED;
        return rc;
    }
    /* The error of each completed request, for MPI_ERROR if any failed. */
    errs = count <= 64 ? stack : malloc(sizeof(int) * (size_t)count);
    if (!errs) {
        return shim_error(MPI_COMM_WORLD, fn, MPI_ERR_NO_MEM, "no memory for %d requests", count);
    }
    errs[(*outcount)] = rc;
    indices[(*outcount)++] = index;
    failed += rc != MPI_SUCCESS;
    for (int i = 0; i < count; i++) {
        struct shim_req *r = shim_req_get(reqs[i]);
        if (r && r->active && pg_req_is_done(&r->pr)) {
            indices[*outcount] = i;
            errs[*outcount] = finish_one(&reqs[i], r, status_at(statuses, *outcount), fn);
            failed += errs[*outcount] != MPI_SUCCESS;
            (*outcount)++;
        }
    }
    if (failed) {
        set_errors(statuses, errs, *outcount);
    }
    if (errs != stack) {
        free(errs);
    }
    return failed ? in_status(fn, failed, *outcount) : MPI_SUCCESS;
}

#pragma weak MPI_Waitsome = PMPI_Waitsome
int PMPI_Waitsome(int incount, MPI_Request reqs[], int *outcount, int indices[],
                  MPI_Status *statuses)
{
    int rc = shim_check_init(SHIM_FN);

    return rc != MPI_SUCCESS ? rc
                             : some_common(incount, reqs, outcount, indices, statuses, true, SHIM_FN);
}

#pragma weak MPI_Testsome = PMPI_Testsome
int PMPI_Testsome(int incount, MPI_Request reqs[], int *outcount, int indices[],
                  MPI_Status *statuses)
{
    int rc = shim_check_init(SHIM_FN);

    return rc != MPI_SUCCESS
               ? rc
               : some_common(incount, reqs, outcount, indices, statuses, false, SHIM_FN);
}

#pragma weak MPI_Request_get_status = PMPI_Request_get_status
int PMPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status)
{
    struct shim_req *r;
    int rc = shim_check_init(SHIM_FN);

    if (rc == MPI_SUCCESS) {
        rc = req_lookup(request, SHIM_FN, &r);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    *flag = !r || pg_test(&r->pr);
    if (!r) {
        shim_status_empty(status);
    } else if (*flag) {
        shim_status_set(status, &r->pr, shim_errclass(r->pr.status));
    }
    return MPI_SUCCESS;
}

#pragma weak MPI_Request_free = PMPI_Request_free
int PMPI_Request_free(MPI_Request *request)
{
    struct shim_req *r = shim_req_get(*request);

    if (!r) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_REQUEST, "invalid request handle 0x%x",
                          (unsigned)*request);
    }
    /* A generalized request the user has not completed: MPI_Grequest_complete frees it; a
     * send complete from the start is shared and stays as it is (shim_req.h). */
    if ((r->greq && shim_greq_orphan(r)) || *request == SHIM_REQ_SENT) {
        *request = MPI_REQUEST_NULL;
        return MPI_SUCCESS;
    }
    /* A pending operation still owns its buffers: finish it before recycling the slot. One
     * that its wait gave up on (a timeout, a dead peer) may still be in the transport's
     * hands: its memory is never reused. */
    if (r->active && !pg_req_is_done(&r->pr)) {
        pg_wait(&r->pr, -1);
    }
    if (r->active && !pg_req_is_done(&r->pr)) {
        shim_req_abandon(r);
        *request = MPI_REQUEST_NULL;
        return MPI_SUCCESS;
    }
    r->persistent = false;
    r->finished = true;
    shim_req_complete(r, request, MPI_STATUS_IGNORE);
    return MPI_SUCCESS;
}

#pragma weak MPI_Cancel = PMPI_Cancel
int PMPI_Cancel(MPI_Request *request)
{
    struct shim_req *r = shim_req_get(*request);
    int rc;

    if (!r) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_REQUEST, "invalid request handle 0x%x",
                          (unsigned)*request);
    }
    /* Receives that have not matched are cancelled. A send asks its receiver to withdraw
     * the message; the wait then ends on the answer, cancelled or completed as usual. */
    if (r->kind == SHIM_REQ_RECV && r->active) {
        pg_cancel_recv(&r->pr);
    }
    if (r->kind == SHIM_REQ_SEND && r->active && (rc = pg_cancel_send(&r->pr)) != PGC_OK) {
        return shim_error_pg(r->comm, SHIM_FN, rc);
    }
    if (r->greq) {
        shim_greq_cancel(r);
    }
    return MPI_SUCCESS;
}

#pragma weak MPI_Test_cancelled = PMPI_Test_cancelled
int PMPI_Test_cancelled(const MPI_Status *status, int *flag)
{
    *flag = (status->count_hi_and_cancelled & INT32_MIN) != 0;
    return MPI_SUCCESS;
}

static size_t status_bytes(const MPI_Status *st)
{
    return (size_t)(unsigned)st->count_lo |
           ((size_t)(st->count_hi_and_cancelled & 0x7fffffff) << 32);
}

#pragma weak MPI_Get_count = PMPI_Get_count
int PMPI_Get_count(const MPI_Status *status, MPI_Datatype datatype, int *count)
{
    struct shim_dtype *t;
    size_t bytes = status_bytes(status);

    if (shim_dtype_lookup(datatype, &t) != MPI_SUCCESS) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_TYPE, "invalid datatype 0x%x",
                          (unsigned)datatype);
    }
    if (t->size == 0) {
        *count = 0;
    } else {
        *count = bytes % t->size ? MPI_UNDEFINED : (int)(bytes / t->size);
    }
    return MPI_SUCCESS;
}

#pragma weak MPI_Get_elements_x = PMPI_Get_elements_x
int PMPI_Get_elements_x(const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count)
{
    struct shim_dtype *t;

    if (shim_dtype_lookup(datatype, &t) != MPI_SUCCESS) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_TYPE, "invalid datatype 0x%x",
                          (unsigned)datatype);
    }
    *count = shim_dtype_elements(t, status_bytes(status));
    return MPI_SUCCESS;
}

#pragma weak MPI_Get_elements = PMPI_Get_elements
int PMPI_Get_elements(const MPI_Status *status, MPI_Datatype datatype, int *count)
{
    MPI_Count c;
    int rc = PMPI_Get_elements_x(status, datatype, &c);

    if (rc == MPI_SUCCESS) {
        *count = c > INT32_MAX ? MPI_UNDEFINED : (int)c;
    }
    return rc;
}
