/*
 * mpiexec.c - the single-node launcher: mpiexec -n N [options] prog [args...].
 *
 * Why the launcher serves an env:// store and is not a PMIx server: the library already
 * bootstraps from RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT through a TCP store (the same
 * env:// path torchrun users launch with), so mpiexec only has to start that store in a
 * thread and fork N children with those variables. Being a PMIx server would need the
 * PMIx server library, a per-job namespace, a daemon-like life cycle and the matching
 * client/server versions, for no gain on one node; srun --mpi=pmix and Open MPI's mpirun
 * already cover PMIx where it matters. MPISHIM_BOOT_STORE_EXTERNAL=1 tells rank 0 to
 * connect to our store instead of serving one itself, so the store outlives every rank.
 *
 * Life cycle: every child gets PR_SET_PDEATHSIG so it dies with mpiexec. The first rank
 * that exits non-zero (or by a signal) is reported in one line, the others get SIGTERM
 * and, 2 s later, SIGKILL; mpiexec exits with that rank's code (128+signal for a signal).
 * SIGINT/SIGTERM/SIGHUP to mpiexec are forwarded to every rank and end the job the same
 * way. Signals are read through a signalfd in one poll loop, so no work runs in a signal
 * handler and every child is reaped (no zombies).
 *
 * The store requires a token that mpiexec draws from getrandom and gives only to its ranks
 * (MPISHIM_STORE_TOKEN), and listens on 127.0.0.1. A rank registers in the store at init
 * and marks boot/done/<rank> after the final barrier of MPI_Finalize or
 * pgc_destroy_process_group (a store write the bootstrap made anyway), so a rank that
 * exits 0 without finalizing while others still run is found by asking the store, at no
 * cost to Finalize: it ends the job like a failure. When it reaps a rank, mpiexec removes
 * the shared-memory segments that rank created (/dev/shm/mpishim-<pid>-*), which a rank
 * killed or failing inside MPI_Init leaves behind.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "boot_store.h"
#include "mps_log.h"
#include "mps_proc.h"
#include "pgc_status.h"

#define KILL_GRACE_S 2.0     /* seconds between SIGTERM and SIGKILL when ending the job */
#define DRAIN_GRACE_S 2.0    /* seconds to keep reading pipes held open after every rank ended */
#define LINE_MAX_BYTES 65536 /* a longer line is printed in pieces of this size */
#define MAX_RANKS 4096

extern char **environ;

struct opts {
    int nprocs;
    bool tag_output;
    double timeout; /* seconds; 0: none */
    char **xvars;   /* -x VAR=VAL entries to put in every rank's environment */
    int nxvars;
    char **argv; /* the program and its arguments */
};

/* One output stream of one rank (only with --tag-output). */
struct outbuf {
    int fd;     /* read end of the pipe; -1 once EOF was seen */
    int out_fd; /* where the prefixed lines go: 1 or 2 */
    size_t len;
    char buf[LINE_MAX_BYTES];
};

struct rank {
    pid_t pid;  /* 0 once reaped */
    pid_t pgid; /* the rank's process group (its pid), kept after the rank was reaped */
    struct outbuf *out[2];
};

struct job {
    struct opts o;
    struct rank *ranks;
    int alive;
    int sfd;                              /* signalfd for SIGCHLD, SIGINT, SIGTERM, SIGHUP */
    bool ending;                          /* SIGTERM sent; waiting for the ranks to go */
    bool killed;                          /* SIGKILL sent */
    double kill_at;                       /* when to send SIGKILL (valid while ending) */
    double timeout_at;                    /* 0: none */
    int exit_code;                        /* the job's exit status once decided; -1: not yet */
    double drain_until;                   /* 0 until every rank was reaped */
    char token[BOOT_STORE_TOKEN_LEN + 1]; /* the store's secret, given to every rank */
    struct boot_store *store;             /* mpiexec's own client of its store */
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: mpiexec -n N [--tag-output] [--timeout S] [-x VAR[=VAL]]... prog [args...]\n"
               "  -n, -np N         number of ranks to start on this host (default 1)\n"
               "  --tag-output      prefix every output line with \"[rank]: \"\n"
               "  --timeout S       end the job after S seconds (also MPIEXEC_TIMEOUT)\n"
               "  -x VAR[=VAL]      set VAR in every rank (VAR alone: pass mpiexec's value)\n"
               "  --oversubscribe, --allow-run-as-root   accepted for Open MPI compatibility\n"
               "  -h, --help        this text;  -V, --version  the version\n"
               "Ranks bootstrap through an env:// TCP store served by mpiexec\n"
               "(RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT).\n"
               "mpirun is the same program.\n");
}

static int parse_count(const char *s, const char *what, long lo, long hi, long *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(s ? s : "", &end, 10);
    if (!s || errno || end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "mpiexec: %s needs an integer in [%ld, %ld], got '%s'\n", what, lo, hi,
                s ? s : "");
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_seconds(const char *s, const char *what, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s ? s : "", &end);
    if (!s || errno || end == s || *end || v < 0 || v > 1e9) {
        fprintf(stderr, "mpiexec: %s needs a number of seconds >= 0, got '%s'\n", what, s ? s : "");
        return -1;
    }
    *out = v;
    return 0;
}

/* Turns "-x VAR" into "VAR=<mpiexec's value>"; "-x VAR=VAL" is kept as given. A VAR that
 * mpiexec does not have is skipped, as Open MPI does. Returns NULL for nothing to set. */
static char *xvar_entry(const char *arg)
{
    if (strchr(arg, '=')) {
        return strdup(arg);
    }
    const char *val = getenv(arg);
    if (!val) {
        return NULL;
    }
    size_t n = strlen(arg) + strlen(val) + 2;
    char *e = malloc(n);
    if (e) {
        snprintf(e, n, "%s=%s", arg, val);
    }
    return e;
}

static bool is(const char *a, const char *x, const char *y)
{
    return !strcmp(a, x) || (y && !strcmp(a, y));
}

/* Handles option a (next: the argument after it, or NULL). Returns how many arguments it
 * used (1 or 2), 0 when mpiexec is done (help or version printed), -1 on a usage error. */
static int parse_option(struct opts *o, const char *a, const char *next)
{
    long v;
    if (is(a, "-n", "-np") || is(a, "--n", "--np")) {
        if (parse_count(next, a, 1, MAX_RANKS, &v)) {
            return -1;
        }
        o->nprocs = (int)v;
        return 2;
    } else if (is(a, "--tag-output", "-tag-output")) {
        o->tag_output = true;
        return 1;
    } else if (is(a, "--timeout", "-timeout")) {
        return parse_seconds(next, a, &o->timeout) ? -1 : 2;
    } else if (is(a, "-x", NULL)) {
        if (!next || !*next || next[0] == '=') {
            fprintf(stderr, "mpiexec: -x needs VAR or VAR=VAL\n");
            return -1;
        }
        char *e = xvar_entry(next);
        if (e) {
            o->xvars[o->nxvars++] = e;
        }
        return 2;
    } else if (is(a, "--oversubscribe", "--allow-run-as-root")) {
        return 1; /* nothing to do: ranks always run on this host, as many as asked */
    } else if (is(a, "-h", "--help")) {
        usage(stdout);
        return 0;
    } else if (is(a, "-V", "--version")) {
        printf("mpiexec (%s) %s\n", PACKAGE_NAME, PACKAGE_VERSION);
        return 0;
    }
    fprintf(stderr, "mpiexec: unknown option '%s'\n", a);
    usage(stderr);
    return -1;
}

static void opts_free(struct opts *o)
{
    for (int i = 0; o->xvars && i < o->nxvars; i++) {
        free(o->xvars[i]);
    }
    free(o->xvars);
}

/* Returns 0 to run, 1 when done (help/version printed), -1 on a usage error. The caller
 * frees o with opts_free whatever it returns. */
static int parse_args(int argc, char **argv, struct opts *o)
{
    o->nprocs = 1;
    o->xvars = calloc((size_t)argc, sizeof(char *));
    const char *env_to = getenv("MPIEXEC_TIMEOUT");
    if (!o->xvars || (env_to && *env_to && parse_seconds(env_to, "MPIEXEC_TIMEOUT", &o->timeout))) {
        return -1;
    }
    int i = 1;
    while (i < argc && argv[i][0] == '-') {
        if (!strcmp(argv[i], "--")) {
            i++;
            break;
        }
        int used = parse_option(o, argv[i], i + 1 < argc ? argv[i + 1] : NULL);
        if (used <= 0) {
            return used == 0 ? 1 : -1;
        }
        i += used;
    }
    if (i >= argc) {
        fprintf(stderr, "mpiexec: no program given\n");
        usage(stderr);
        return -1;
    }
    o->argv = argv + i;
    return 0;
}

/* Checks that prog can be run before starting anything, so a typo gives one clear line
 * instead of N failing ranks. Searches PATH like execvp. */
static bool program_found(const char *prog)
{
    if (strchr(prog, '/')) {
        return access(prog, X_OK) == 0;
    }
    const char *path = getenv("PATH");
    char buf[PATH_MAX];
    for (const char *p = path ? path : "/usr/bin:/bin"; p;) {
        const char *colon = strchr(p, ':');
        int dlen = colon ? (int)(colon - p) : (int)strlen(p);
        snprintf(buf, sizeof(buf), "%.*s/%s", dlen, dlen ? p : ".", prog);
        struct stat st;
        if (stat(buf, &st) == 0 && S_ISREG(st.st_mode) && access(buf, X_OK) == 0) {
            return true;
        }
        p = colon ? colon + 1 : NULL;
    }
    return false;
}

/* Another launcher's variables would make the library bootstrap through PMIx (or read a
 * foreign rank) instead of through our store: drop them before building the environment. */
static bool foreign_launcher_var(const char *e)
{
    static const char *const prefixes[] = {"PMIX_",  "OMPI_", "SLURM_", "PMI_",
                                           "HYDRA_", "MPIR_", "PRTE_",  "OPAL_"};
    for (size_t k = 0; k < sizeof(prefixes) / sizeof(prefixes[0]); k++) {
        if (!strncmp(e, prefixes[k], strlen(prefixes[k]))) {
            return true;
        }
    }
    return false;
}

/* The variables mpiexec sets for every rank; a user -x entry of the same name is
 * overridden by ours for the bootstrap ones. */
static bool ours(const char *e)
{
    static const char *const names[] = {"RANK=",
                                        "WORLD_SIZE=",
                                        "LOCAL_RANK=",
                                        "LOCAL_WORLD_SIZE=",
                                        "MASTER_ADDR=",
                                        "MASTER_PORT=",
                                        "MPISHIM_BOOT_STORE_EXTERNAL=",
                                        "MPISHIM_BOOT_METHOD=",
                                        "MPISHIM_STORE_TOKEN="};
    for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
        if (!strncmp(e, names[k], strlen(names[k]))) {
            return true;
        }
    }
    return false;
}

static bool same_name(const char *a, const char *b)
{
    size_t la = strcspn(a, "="), lb = strcspn(b, "=");
    return la == lb && !strncmp(a, b, la);
}

/* Builds one rank's environment: mpiexec's own minus foreign launcher variables, the -x
 * entries, and the bootstrap variables. Built before fork so the child only has to exec.
 * The strings live in environ, o->xvars or the block's tail; free(env) releases it. */
static char **rank_env(const struct opts *o, int rank, int port, const char *token)
{
    size_t n = 0;
    while (environ[n]) {
        n++;
    }
    enum { NOURS = 9, ENTRY = 64 };
    size_t nptr = n + (size_t)o->nxvars + NOURS + 1;
    /* One block: the pointer array, then our own entries; free(env) releases both. */
    char **env = calloc(1, nptr * sizeof(char *) + NOURS * ENTRY);
    if (!env) {
        return NULL;
    }
    char *mine = (char *)(env + nptr);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        bool replaced = false;
        for (int x = 0; x < o->nxvars && !replaced; x++) {
            replaced = same_name(environ[i], o->xvars[x]);
        }
        if (!foreign_launcher_var(environ[i]) && !ours(environ[i]) && !replaced) {
            env[k++] = environ[i];
        }
    }
    for (int x = 0; x < o->nxvars; x++) {
        if (!ours(o->xvars[x])) {
            env[k++] = o->xvars[x];
        }
    }
    const char *fmt[NOURS] = {"RANK=%d",
                              "WORLD_SIZE=%d",
                              "LOCAL_RANK=%d",
                              "LOCAL_WORLD_SIZE=%d",
                              "MASTER_ADDR=127.0.0.1",
                              "MASTER_PORT=%d",
                              "MPISHIM_BOOT_STORE_EXTERNAL=1",
                              "MPISHIM_BOOT_METHOD=env",
                              "MPISHIM_STORE_TOKEN="};
    const int val[NOURS] = {rank, o->nprocs, rank, o->nprocs, 0, port, 0, 0, 0};
    for (int j = 0; j < NOURS - 1; j++) {
        snprintf(mine + j * ENTRY, ENTRY, fmt[j], val[j]);
        env[k++] = mine + j * ENTRY;
    }
    snprintf(mine + (NOURS - 1) * ENTRY, ENTRY, "%s%s", fmt[NOURS - 1], token);
    env[k++] = mine + (NOURS - 1) * ENTRY;
    env[k] = NULL;
    return env;
}

/* In the child, between fork and exec: die with mpiexec, restore the signal state mpiexec
 * changed, wire stdin/stdout/stderr, then exec. Never returns. */
static void child_exec(const struct opts *o, int rank, pid_t parent, char **env, int out_w,
                       int err_w)
{
    sigset_t none;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) {
        _exit(127); /* mpiexec died before prctl took effect */
    }
    /* Each rank leads its own process group, so that ending the job signals the whole
     * tree a rank started (a shell's children too) and leaves no orphans behind. */
    setpgid(0, 0);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    if (rank != 0 || isatty(0)) {
        /* Only rank 0 reads stdin, as with other launchers; not a terminal, because a rank
         * outside the terminal's foreground process group would be stopped by SIGTTIN. */
        int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0) {
            dup2(nul, 0);
            close(nul);
        }
    }
    if (out_w >= 0) {
        dup2(out_w, 1);
        dup2(err_w, 2);
    }
    /* Nothing of mpiexec's (the store's sockets, other ranks' pipes) leaks into a rank. */
    close_range(3, ~0U, 0);
    environ = env;
    execvp(o->argv[0], o->argv);
    dprintf(2, "mpiexec: rank %d: cannot run '%s': %s\n", rank, o->argv[0], strerror(errno));
    _exit(127);
}

static struct outbuf *outbuf_new(int fd, int out_fd)
{
    struct outbuf *b = malloc(sizeof(*b));
    if (b) {
        b->fd = fd;
        b->out_fd = out_fd;
        b->len = 0;
    }
    return b;
}

static void write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            return; /* the reader went away; nothing useful to do */
        }
        p += w;
        n -= (size_t)w;
    }
}

/* Prints one line with its rank prefix in a single write, so lines of different ranks
 * never interleave inside a line. */
static void emit_line(int out_fd, int rank, const char *line, size_t n, bool add_newline)
{
    static char out[LINE_MAX_BYTES + 32];
    int p = snprintf(out, 32, "[%d]: ", rank);
    memcpy(out + p, line, n);
    size_t total = (size_t)p + n;
    if (add_newline) {
        out[total++] = '\n';
    }
    write_all(out_fd, out, total);
}

/* Emits every complete line in b; at EOF (or when the buffer is full) the rest too. */
static void flush_lines(struct outbuf *b, int rank, bool force)
{
    size_t start = 0;
    for (size_t i = 0; i < b->len; i++) {
        if (b->buf[i] == '\n') {
            emit_line(b->out_fd, rank, b->buf + start, i + 1 - start, false);
            start = i + 1;
        }
    }
    if (start < b->len && (force || (start == 0 && b->len == sizeof(b->buf)))) {
        emit_line(b->out_fd, rank, b->buf + start, b->len - start, true);
        start = b->len;
    }
    memmove(b->buf, b->buf + start, b->len - start);
    b->len -= start;
}

static void read_output(struct outbuf *b, int rank)
{
    ssize_t r = read(b->fd, b->buf + b->len, sizeof(b->buf) - b->len);
    if (r < 0 && (errno == EINTR || errno == EAGAIN)) {
        return;
    }
    if (r <= 0) {
        flush_lines(b, rank, true);
        close(b->fd);
        b->fd = -1;
        return;
    }
    b->len += (size_t)r;
    flush_lines(b, rank, false);
}

static int make_pipe(int fds[2])
{
    if (pipe2(fds, O_CLOEXEC) != 0) {
        fprintf(stderr, "mpiexec: pipe: %s\n", strerror(errno));
        return -1;
    }
    return 0;
}

/* With --tag-output every rank holds two pipes open in mpiexec: lift the soft limit on
 * open files to the hard one so that large jobs do not run out. */
static void raise_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

/* Forks rank r. With --tag-output its stdout/stderr are pipes read by the main loop. */
static int start_rank(struct job *j, int r, int port)
{
    int po[2] = {-1, -1}, pe[2] = {-1, -1};
    char **env = rank_env(&j->o, r, port, j->token);
    if (!env) {
        fprintf(stderr, "mpiexec: out of memory\n");
        return -1;
    }
    if (j->o.tag_output && (make_pipe(po) || make_pipe(pe))) {
        goto fail;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "mpiexec: fork of rank %d: %s\n", r, strerror(errno));
        goto fail;
    }
    if (pid == 0) {
        child_exec(&j->o, r, parent, env, po[1], pe[1]);
    }
    setpgid(pid, pid); /* also here: whichever of parent and child runs first wins */
    j->ranks[r].pid = pid;
    j->ranks[r].pgid = pid;
    j->alive++;
    if (j->o.tag_output) {
        close(po[1]);
        close(pe[1]);
        j->ranks[r].out[0] = outbuf_new(po[0], 1);
        j->ranks[r].out[1] = outbuf_new(pe[0], 2);
    }
    free(env);
    return 0;
fail:
    free(env);
    for (int k = 0; k < 2; k++) {
        if (po[k] >= 0) {
            close(po[k]);
        }
        if (pe[k] >= 0) {
            close(pe[k]);
        }
    }
    return -1;
}

/* Signals every rank's process group (the rank and whatever it started). After a rank was
 * reaped its group may still hold its children: SIGKILL reaches them through pgids[]. */
static void signal_all(struct job *j, int sig)
{
    for (int r = 0; r < j->o.nprocs; r++) {
        if (j->ranks[r].pid > 0 || (sig == SIGKILL && j->ranks[r].pgid > 0)) {
            kill(-j->ranks[r].pgid, sig);
        }
    }
}

/* Starts ending the job: sig now (SIGTERM, or the signal mpiexec got), SIGKILL after
 * KILL_GRACE_S for ranks that ignore it. code becomes the exit status unless one was
 * already decided (the first failure wins). */
static void end_job(struct job *j, int sig, int code)
{
    if (j->exit_code < 0) {
        j->exit_code = code;
    }
    if (j->ending) {
        return;
    }
    j->ending = true;
    j->kill_at = now_s() + KILL_GRACE_S;
    signal_all(j, sig);
}

static const char *sig_name(int sig)
{
    static char buf[32];
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
    const char *abbrev = sigabbrev_np(sig);
    if (abbrev) {
        snprintf(buf, sizeof(buf), "SIG%s", abbrev);
        return buf;
    }
#endif
    snprintf(buf, sizeof(buf), "%s", strsignal(sig));
    return buf;
}

/* Whether rank r, which exited with code 0, started the library (registered in the store)
 * without finalizing it. A rank that never used the library (mpiexec -n 2 hostname) is not
 * one; neither is one mpiexec cannot ask about. */
static bool left_unfinalized(struct job *j, int r)
{
    bool registered = false, finalized = false;

    if (!j->store || boot_store_rank_state(j->store, r, &registered, &finalized) != PGC_OK) {
        return false;
    }
    return registered && !finalized;
}

/* Records how rank r ended. The first abnormal end (while the job is not already being
 * ended by mpiexec) is reported and ends the job with that rank's status; so is a rank
 * that exits 0 without finalizing while others still run, which would leave them waiting
 * for it (Open MPI's mpirun does the same). */
static void rank_ended(struct job *j, int r, int status)
{
    /* Right after the reap, before a new process of the same pid could have started a
     * job of its own and created one. */
    mps_shm_remove_of(j->ranks[r].pid);
    j->ranks[r].pid = 0;
    j->alive--;
    if (j->ending) {
        return; /* ranks dying of our SIGTERM/SIGKILL are not news */
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && j->alive > 0 && left_unfinalized(j, r)) {
        fprintf(stderr,
                "mpiexec: rank %d exited with code 0 without calling MPI_Finalize (or "
                "pgc_destroy_process_group) while other ranks still run; ending the job\n",
                r);
        end_job(j, SIGTERM, 1);
    } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
        fprintf(stderr, "mpiexec: rank %d exited with code %d\n", r, WEXITSTATUS(status));
        end_job(j, SIGTERM, WEXITSTATUS(status));
    } else if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        fprintf(stderr, "mpiexec: rank %d killed by signal %d (%s)\n", r, sig, sig_name(sig));
        end_job(j, SIGTERM, 128 + sig);
    }
}

static void reap(struct job *j)
{
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        for (int r = 0; r < j->o.nprocs; r++) {
            if (j->ranks[r].pid == pid) {
                rank_ended(j, r, status);
                break;
            }
        }
    }
    if (j->alive == 0 && j->drain_until == 0) {
        j->drain_until = now_s() + DRAIN_GRACE_S;
    }
}

static void handle_signals(struct job *j)
{
    struct signalfd_siginfo si;
    while (read(j->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        int sig = (int)si.ssi_signo;
        if (sig == SIGCHLD) {
            reap(j);
        } else if (j->ending) {
            /* A second Ctrl-C means "now". */
            signal_all(j, SIGKILL);
            j->killed = true;
        } else {
            fprintf(stderr, "mpiexec: received %s, ending the job\n", sig_name(sig));
            end_job(j, sig, 128 + sig);
        }
    }
}

static void check_timers(struct job *j)
{
    double t = now_s();
    if (j->timeout_at > 0 && t >= j->timeout_at && !j->ending) {
        fprintf(stderr, "mpiexec: job timed out after %g s (--timeout), ending it\n", j->o.timeout);
        end_job(j, SIGTERM, 124);
    }
    if (j->ending && !j->killed && t >= j->kill_at) {
        signal_all(j, SIGKILL);
        j->killed = true;
    }
}

/* Milliseconds until the next timer (-1: none). */
static int next_timer_ms(const struct job *j)
{
    double next = 0;
    if (j->timeout_at > 0 && !j->ending) {
        next = j->timeout_at;
    }
    if (j->ending && !j->killed && (next == 0 || j->kill_at < next)) {
        next = j->kill_at;
    }
    if (j->drain_until > 0 && (next == 0 || j->drain_until < next)) {
        next = j->drain_until;
    }
    if (next == 0) {
        return -1;
    }
    double ms = (next - now_s()) * 1000.0;
    return ms < 0 ? 0 : (int)ms + 1;
}

/* Fills fds with the signalfd and every open output pipe; returns the count. */
static int poll_set(struct job *j, struct pollfd *fds, struct outbuf **bufs, int *ranks)
{
    int n = 0;
    fds[n++] = (struct pollfd){.fd = j->sfd, .events = POLLIN};
    for (int r = 0; r < j->o.nprocs; r++) {
        for (int k = 0; k < 2; k++) {
            struct outbuf *b = j->ranks[r].out[k];
            if (b && b->fd >= 0) {
                bufs[n] = b;
                ranks[n] = r;
                fds[n++] = (struct pollfd){.fd = b->fd, .events = POLLIN};
            }
        }
    }
    return n;
}

/* The event loop: runs until every rank was reaped and its output read (or the drain
 * grace period after the last rank ended has passed). */
static void run_loop(struct job *j)
{
    int max = 1 + 2 * j->o.nprocs;
    struct pollfd *fds = calloc((size_t)max, sizeof(*fds));
    struct outbuf **bufs = calloc((size_t)max, sizeof(*bufs));
    int *ranks = calloc((size_t)max, sizeof(*ranks));
    if (!fds || !bufs || !ranks) {
        fprintf(stderr, "mpiexec: out of memory\n");
        end_job(j, SIGKILL, 1);
        max = 0;
    }
    reap(j); /* a rank may have ended before the loop started */
    for (;;) {
        int n = max ? poll_set(j, fds, bufs, ranks) : 1;
        bool drained = j->drain_until > 0 && (n == 1 || now_s() >= j->drain_until);
        if (j->alive == 0 && drained) {
            break;
        }
        int rc = max ? poll(fds, (nfds_t)n, next_timer_ms(j)) : 0;
        if (rc < 0 && errno != EINTR) {
            fprintf(stderr, "mpiexec: poll: %s\n", strerror(errno));
            end_job(j, SIGKILL, 1);
            max = 0;
        }
        if (max == 0) {
            usleep(10000); /* degraded: no poll set, just reap */
            reap(j);
        }
        for (int i = 1; rc > 0 && i < n; i++) {
            if (fds[i].revents) {
                read_output(bufs[i], ranks[i]);
            }
        }
        if (rc > 0 && fds[0].revents) {
            handle_signals(j);
        }
        check_timers(j);
    }
    free(fds);
    free(bufs);
    free(ranks);
}

/* Blocks the signals the loop reads through a signalfd. Must run before any thread is
 * created (the store server's), so that every thread inherits the mask and no signal is
 * delivered to a thread with the default action. */
static int setup_signals(struct job *j)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGQUIT);
    /* A shell starts background jobs with SIGINT and SIGQUIT ignored, and an ignored
     * signal never reaches a signalfd: take them back so `kill -INT` ends the job.
     * An ignored SIGHUP (nohup) stays ignored. */
    signal(SIGINT, SIG_DFL);
    signal(SIGQUIT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    if (sigprocmask(SIG_BLOCK, &set, NULL) != 0) {
        return -1;
    }
    signal(SIGPIPE, SIG_IGN); /* a closed stdout must not kill the launcher */
    j->sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    return j->sfd < 0 ? -1 : 0;
}

/* Everything between the command line and the first rank: returns 0, or the exit code
 * after printing why mpiexec cannot go on. */
static int prepare(struct job *j, struct boot_store_server **srv)
{
    if (!program_found(j->o.argv[0])) {
        fprintf(stderr, "mpiexec: cannot run '%s': not found or not executable\n", j->o.argv[0]);
        return 127;
    }
    if (setup_signals(j) != 0) {
        fprintf(stderr, "mpiexec: signal setup: %s\n", strerror(errno));
        return 1;
    }
    int rc = boot_store_token_new(j->token);
    if (rc == PGC_OK) {
        rc = boot_store_server_start_token("127.0.0.1", 0, j->token, srv);
    }
    if (rc == PGC_OK) {
        rc = boot_store_tcp_connect_token("127.0.0.1", boot_store_server_port(*srv), j->token, 10.0,
                                          &j->store);
    }
    if (rc != PGC_OK) {
        fprintf(stderr, "mpiexec: cannot start the rendezvous store: %s (%s)\n", pgc_strerror(rc),
                mps_last_error());
        return 1;
    }
    return 0;
}

static void job_free(struct job *j)
{
    for (int r = 0; j->ranks && r < j->o.nprocs; r++) {
        free(j->ranks[r].out[0]);
        free(j->ranks[r].out[1]);
    }
    free(j->ranks);
    opts_free(&j->o);
    if (j->sfd >= 0) {
        close(j->sfd);
    }
    boot_store_close(j->store);
    j->store = NULL;
}

int main(int argc, char **argv)
{
    struct job j = {.exit_code = -1, .sfd = -1};
    struct boot_store_server *srv = NULL;
    int prc = parse_args(argc, argv, &j.o);
    if (prc != 0) {
        opts_free(&j.o);
        return prc > 0 ? 0 : 2;
    }
    int rc = prepare(&j, &srv);
    if (rc != 0) {
        job_free(&j);
        boot_store_server_stop(srv);
        return rc;
    }
    int port = boot_store_server_port(srv);
    if (j.o.tag_output) {
        raise_fd_limit();
    }
    j.ranks = calloc((size_t)j.o.nprocs, sizeof(*j.ranks));
    if (j.o.timeout > 0) {
        j.timeout_at = now_s() + j.o.timeout;
    }
    for (int r = 0; j.ranks && r < j.o.nprocs; r++) {
        if (start_rank(&j, r, port) != 0) {
            end_job(&j, SIGKILL, 1);
            break;
        }
    }
    if (j.ranks) {
        run_loop(&j);
        if (j.ending && !j.killed) {
            signal_all(&j, SIGKILL); /* what a rank started and left behind in its group */
        }
    } else {
        fprintf(stderr, "mpiexec: out of memory\n");
    }
    rc = j.ranks ? (j.exit_code < 0 ? 0 : j.exit_code) : 1;
    job_free(&j);
    boot_store_server_stop(srv);
    return rc;
}
