/* mps_proc.h - whether a process of this node is gone, and removing the shared-memory
 * segments it left (/dev/shm/mpishim-<pid>-*), for every layer that learns of a death:
 * fab_shm's watch over its peers, the store server, mpiexec. */
#ifndef MPS_PROC_H
#define MPS_PROC_H

#include <stdbool.h>
#include <sys/types.h>

/* Whether pid no longer runs: it does not exist, or it is a zombie (it exited and its
 * parent, a shell or a launcher, has not reaped it yet). */
bool mps_process_gone(pid_t pid);

/* Removes /dev/shm/mpishim-<pid>-*: fab_shm's rings (mpishim-<pid>-<nonce>) and libfabric
 * shm's regions, which fab_open names mpishim-<pid>-<time>-<seq>. Call it only for a pid
 * that is gone (and not reaped long ago, when the pid may have been reused): nothing new
 * can appear under it then. Peers that still map a segment keep their mapping. Returns
 * how many it removed. */
int mps_shm_remove_of(pid_t pid);

/* Tasks runnable on this machine right now (the kernel's count in /proc/loadavg, this
 * thread included), or -1 when it cannot be read. An open and a read: not for every poll. */
int mps_runnable_tasks(void);

#endif
