/*
 * rpc_idle.c - the CPU an idle RPC worker burns: what its bounded spins cost once calls
 * stop.
 *
 * worker0 makes CALLS echo calls to worker1 (on itself with one process) and then calls
 * "done" there; from then on both workers stay idle for 1.5 s, and each reports the CPU time
 * its process (all threads: agent, servers, main) used in the last second of that, read
 * from /proc/self/stat (utime + stime, in clock ticks) and from getrusage (microseconds),
 * as a share of one core.
 *
 *   mpiexec -n 2 bench/rpc_idle [CALLS]
 *
 * A benchmark, not a test: it never fails on a number.
 */
#include <pgc_rpc.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static int done_flag;

static int echo(pgc_rpc_call *c)
{
    return pgc_rpc_value_set_bytes(&c->ret, c->args->bytes, c->args->nbytes);
}

static int done(pgc_rpc_call *c)
{
    (void)c;
    __atomic_store_n(&done_flag, 1, __ATOMIC_RELEASE);
    return PGC_OK;
}

/* utime + stime of this process, in clock ticks (fields 14 and 15 of /proc/self/stat). */
static long stat_ticks(void)
{
    char buf[1024], *p;
    unsigned long ut = 0, st = 0;
    FILE *f = fopen("/proc/self/stat", "r");
    size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

    if (f) {
        fclose(f);
    }
    buf[n] = '\0';
    /* The command name may hold spaces: count fields from the last ')'. */
    p = strrchr(buf, ')');
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2) {
        return -1;
    }
    return (long)(ut + st);
}

static double rusage_s(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};

    nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
    int calls = argc > 1 ? atoi(argv[1]) : 1000;
    const char *r = getenv("RANK") ? getenv("RANK") : "0";
    pgc_rpc_worker_info me, peer;
    char name[32], byte = 1;
    pgc_rpc_value args = {.bytes = &byte, .nbytes = 1}, res;
    long t0;
    double u0;

    snprintf(name, sizeof(name), "worker%s", r);
    pgc_rpc_register("echo", echo, NULL);
    pgc_rpc_register("done", done, NULL);
    if (pgc_rpc_init(name, -1, -1, NULL) != PGC_OK) {
        fprintf(stderr, "rpc_idle: %s\n", pgc_last_error());
        return 1;
    }
    pgc_rpc_get_self(&me);
    if (pgc_rpc_get_worker_info_by_rank(me.rank == 0 ? 1 : 0, &peer) != PGC_OK) {
        pgc_rpc_get_self(&peer);
    }
    for (int i = 0; me.rank == 0 && i < calls; i++) {
        if (pgc_rpc_sync(peer.name, "echo", &args, 0, &res) != PGC_OK) {
            fprintf(stderr, "rpc_idle: %s\n", pgc_last_error());
            return 1;
        }
        pgc_rpc_value_free(&res);
    }
    if (me.rank == 0 && pgc_rpc_sync(peer.name, "done", NULL, 0, NULL) != PGC_OK) {
        fprintf(stderr, "rpc_idle: %s\n", pgc_last_error());
        return 1;
    }
    while (!__atomic_load_n(&done_flag, __ATOMIC_ACQUIRE) && me.rank != 0) {
        sleep_s(0.001);
    }
    /* The spins end within milliseconds of the last call: measure from 0.5 s on. */
    sleep_s(0.5);
    t0 = stat_ticks();
    u0 = rusage_s();
    sleep_s(1.0);
    printf("%s (pid %d): idle for 1 s after %d calls: %ld clock ticks (of %ld/s), %.2f ms "
           "of CPU (getrusage): %.2f%% of a core\n",
           name, (int)getpid(), me.rank == 0 ? calls : 0, stat_ticks() - t0, sysconf(_SC_CLK_TCK),
           (rusage_s() - u0) * 1e3, (rusage_s() - u0) * 100);
    fflush(stdout);
    pgc_rpc_shutdown(1);
    return 0;
}
