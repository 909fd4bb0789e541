/*
 * pgc_rpc_bell.c - the RPC agent's doorbell: a wake-up hint from the sender of a message to
 * the receiver's agent, so that an idle agent can sleep in the kernel instead of polling.
 *
 * Why: the agent finds messages by polling the fabric (pg_iprobe). A thread that polls
 * without sleeping on a CPU shared with other busy processes runs only when the scheduler
 * gives it a slice (milliseconds on a loaded machine), while a thread woken from a sleep
 * runs at once. So the agent polls only briefly after a message and then sleeps in poll()
 * on a datagram socket; every sender, after a message has left, sends one byte there.
 *
 * The socket is a Unix datagram socket in the abstract namespace, named after the pid
 * ("\0mpishim-rpc-<pid>"): it reaches the workers of the same network namespace, that is
 * of this node. A worker on another node, or a name that another process of the same pid
 * holds elsewhere, is at worst a wake-up missed or one too many: the bell is a hint, and
 * the agent's sleep stays bounded (the old nap), so a message without a ring is still
 * found. A failure to create the socket leaves the agent with its bounded naps.
 */
#include "config.h"

#include "mps_log.h"
#include "pg_internal.h"
#include "pgc_internal.h"
#include "pgc_rpc_internal.h"

#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static socklen_t bell_addr(int pid, struct sockaddr_un *a)
{
    int n;

    memset(a, 0, sizeof(*a));
    a->sun_family = AF_UNIX;
    /* sun_path[0] = '\0': the abstract namespace, no file to clean up. */
    n = snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1, "mpishim-rpc-%d", pid);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

/* Opens this worker's bell and learns every worker's pid (collective over the RPC group). */
int rpc_bell_open(void)
{
    struct sockaddr_un a;
    int32_t me = (int32_t)getpid();
    socklen_t len = bell_addr(me, &a);
    int rc;

    rpc.bell_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (rpc.bell_fd >= 0 && bind(rpc.bell_fd, (struct sockaddr *)&a, len) != 0) {
        mps_log(MPS_LOG_DEBUG, "pgc_rpc_init: no doorbell (%s): the agent polls", strerror(errno));
        close(rpc.bell_fd);
        rpc.bell_fd = -1;
    }
    rpc.pids = calloc((size_t)rpc.size, sizeof(*rpc.pids));
    if (!rpc.pids) {
        return mps_error(PGC_ERR_NOMEM, "pgc_rpc_init: the table of %d pids", rpc.size);
    }
    rc = pg_allgather(rpc.g, &me, rpc.pids, sizeof(me));
    return rc == PGC_OK ? PGC_OK : pgc_wrap(rc, "pgc_rpc_init: exchanging pids");
}

void rpc_bell_close(void)
{
    if (rpc.bell_fd >= 0) {
        close(rpc.bell_fd);
    }
    rpc.bell_fd = -1;
    free(rpc.pids);
    rpc.pids = NULL;
}

/* After a message to dst has left: wakes dst's agent if it sleeps. Never blocks; a full
 * socket buffer means rings are pending there already. */
void rpc_bell_ring(int dst)
{
    struct sockaddr_un a;
    socklen_t len;
    char b = 0;

    if (rpc.bell_fd < 0 || !rpc.pids) {
        return;
    }
    len = bell_addr(rpc.pids[dst], &a);
    (void)sendto(rpc.bell_fd, &b, 1, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&a, len);
}

/* Sleeps until a ring or for at most seconds, then empties the socket. The caller probes
 * the fabric next: a ring that comes between its last probe and this call wakes it at once. */
void rpc_bell_wait(double seconds)
{
    struct pollfd p = {.fd = rpc.bell_fd, .events = POLLIN};
    struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    char buf[64];

    if (rpc.bell_fd < 0) {
        nanosleep(&ts, NULL);
        return;
    }
    if (ppoll(&p, 1, &ts, NULL) > 0) {
        while (recv(rpc.bell_fd, buf, sizeof(buf), MSG_DONTWAIT) > 0) {
        }
    }
}
