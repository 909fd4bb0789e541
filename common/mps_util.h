/* mps_util.h - small helpers every layer uses: container_of, time, an intrusive list. */
#ifndef MPS_UTIL_H
#define MPS_UTIL_H

#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#ifndef container_of /* libfabric's headers define the same macro */
#define container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))
#endif
#define MPS_MIN(a, b) ((a) < (b) ? (a) : (b))
#define MPS_MAX(a, b) ((a) > (b) ? (a) : (b))
#define mps_likely(x) __builtin_expect(!!(x), 1)
#define mps_unlikely(x) __builtin_expect(!!(x), 0)

/* One spin-wait pause: tells the core (and its hyperthread sibling) that this is a poll. */
static inline void mps_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield" ::: "memory");
#endif
}

/* The cores this process may run on (its affinity mask), or 0 if unknown. Needs
 * _GNU_SOURCE (config.h) before the first system header. */
static inline int mps_usable_cores(void)
{
    cpu_set_t set;

    return sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 0;
}

/* Monotonic time in seconds. */
static inline double mps_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Intrusive doubly linked list with a sentinel head (as in the Linux kernel). */
struct mps_list {
    struct mps_list *prev, *next;
};

static inline void mps_list_init(struct mps_list *h)
{
    h->prev = h->next = h;
}

static inline int mps_list_empty(const struct mps_list *h)
{
    return h->next == h;
}

static inline void mps_list_push_back(struct mps_list *h, struct mps_list *e)
{
    e->prev = h->prev;
    e->next = h;
    h->prev->next = e;
    h->prev = e;
}

static inline void mps_list_remove(struct mps_list *e)
{
    e->prev->next = e->next;
    e->next->prev = e->prev;
    e->prev = e->next = e;
}

#define mps_list_for_each(pos, head) for (pos = (head)->next; pos != (head); pos = pos->next)
#define mps_list_for_each_safe(pos, tmp, head)                                                     \
    for (pos = (head)->next, tmp = pos->next; pos != (head); pos = tmp, tmp = pos->next)

#endif
