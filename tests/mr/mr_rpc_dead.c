/*
 * mr_rpc_dead.c - a callee killed in the middle of a call: the caller's future must fail
 * with a message naming the worker and the function, instead of hanging.
 *
 * Two workers. w1 serves "die", which kills its own process (SIGKILL, nothing is cleaned
 * up); w0 calls it, and also has a second call pending to w1 that must fail the same way.
 * On one node the agent sees the process gone (PGC_ERR_PEER_DEAD) at once; where it can
 * not (argument --timeout-ok, for providers without that view), the call's timeout
 * (PGC_ERR_TIMEOUT) must fail it instead. Run by tests/scripts/test_rpc.sh with env://,
 * outside a launcher (a launcher would end the job when w1 dies).
 */
#include <pgc.h>
#include <pgc_rpc.h>

#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int fn_die(pgc_rpc_call *c)
{
    (void)c;
    raise(SIGKILL);
    return PGC_OK;
}

static int fn_slow(pgc_rpc_call *c)
{
    (void)c;
    sleep(60);
    return PGC_OK;
}

static int failed_well(pgc_future *f, int timeout_ok, const char *fn)
{
    int rc = pgc_future_wait(f, -1);
    const char *e = pgc_future_error(f);
    char want[32];

    snprintf(want, sizeof(want), "'%s'", fn);
    printf("mr_rpc_dead: call of %s: %s: %s\n", fn, pgc_status_name(rc), e);
    return (rc == PGC_ERR_PEER_DEAD || (timeout_ok && rc == PGC_ERR_TIMEOUT)) &&
           strstr(e, "worker 'w1'") && strstr(e, want);
}

int main(int argc, char **argv)
{
    pgc_rpc_opts opts = PGC_RPC_OPTS_DEFAULT;
    int timeout_ok = argc > 1 && strcmp(argv[1], "--timeout-ok") == 0;
    int rank, ok;
    pgc_future *slow, *die;

    pgc_rpc_register("die", fn_die, NULL);
    pgc_rpc_register("slow", fn_slow, NULL);
    opts.timeout = 8;
    opts.num_server_threads = 2;
    if (pgc_rpc_init(getenv("RANK") && getenv("RANK")[0] == '1' ? "w1" : "w0", -1, -1, &opts)) {
        fprintf(stderr, "mr_rpc_dead: init: %s\n", pgc_last_error());
        return 2;
    }
    {
        pgc_rpc_worker_info me;
        pgc_rpc_get_self(&me);
        rank = me.rank;
    }
    if (rank == 1) {
        for (;;) {
            pause(); /* serves until "die" */
        }
    }
    if (pgc_rpc_async("w1", "slow", NULL, 0, &slow) || pgc_rpc_async("w1", "die", NULL, 0, &die)) {
        fprintf(stderr, "mr_rpc_dead: call: %s\n", pgc_last_error());
        return 1;
    }
    ok = failed_well(die, timeout_ok, "die") && failed_well(slow, timeout_ok, "slow");
    pgc_future_free(die);
    pgc_future_free(slow);
    /* w1 is gone: a new call fails at once or at its timeout, and shutdown returns. */
    pgc_rpc_shutdown(0);
    printf("mr_rpc_dead: %s\n", ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}
