/*
 * mps_proc.c - a process's death seen from its node, and the segments it left behind.
 */
#include "config.h"

#include "mps_proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

bool mps_process_gone(pid_t pid)
{
    char path[64], stat[256];
    const char *close_paren;
    ssize_t n;
    int fd;

    if (kill(pid, 0) != 0 && errno == ESRCH) {
        return true;
    }
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return errno == ENOENT;
    }
    n = read(fd, stat, sizeof(stat) - 1);
    close(fd);
    stat[n > 0 ? n : 0] = '\0';
    /* "pid (comm) S ...": the state follows the last parenthesis. */
    close_paren = strrchr(stat, ')');
    return close_paren && close_paren[1] == ' ' && (close_paren[2] == 'Z' || close_paren[2] == 'X');
}

int mps_shm_remove_of(pid_t pid)
{
    char prefix[64], path[300];
    DIR *d = opendir("/dev/shm");
    struct dirent *e;
    size_t n;
    int removed = 0;

    if (!d) {
        return 0;
    }
    n = (size_t)snprintf(prefix, sizeof(prefix), "mpishim-%d-", (int)pid);
    while ((e = readdir(d)) != NULL) {
        if (!strncmp(e->d_name, prefix, n)) {
            snprintf(path, sizeof(path), "/dev/shm/%s", e->d_name);
            removed += unlink(path) == 0;
        }
    }
    closedir(d);
    return removed;
}

int mps_runnable_tasks(void)
{
    /* "0.52 0.58 0.59 3/467 12345": the fourth field is runnable/existing. */
    char buf[128];
    int fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC), running = -1;
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

    if (fd >= 0) {
        close(fd);
    }
    if (n > 0) {
        buf[n] = '\0';
        if (sscanf(buf, "%*s %*s %*s %d/", &running) != 1) {
            running = -1;
        }
    }
    return running;
}
