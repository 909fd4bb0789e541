/* shim_table.c - handle tables for user objects (see shim.h). */
#include "config.h"

#include "shim.h"

#include <pthread.h>
#include <stdlib.h>

/* One lock for every table, taken only under MPI_THREAD_MULTIPLE: objects are created and
 * looked up far less often than messages are sent. */
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;

static void lock(void)
{
    if (shim_thread_multiple) {
        pthread_mutex_lock(&table_lock);
    }
}

static void unlock(void)
{
    if (shim_thread_multiple) {
        pthread_mutex_unlock(&table_lock);
    }
}

static int table_grow(struct shim_table *t)
{
    int cap = t->cap ? t->cap * 2 : 64;
    void **slots = realloc(t->slots, sizeof(void *) * (size_t)cap);

    if (!slots) {
        return -1;
    }
    for (int j = t->cap; j < cap; j++) {
        slots[j] = NULL;
    }
    t->slots = slots;
    t->cap = cap;
    return 0;
}

static int table_add_locked(struct shim_table *t, void *p)
{
    int i = t->first;

    /* Reuse the first free slot so handles stay small; tables hold few live objects. */
    while (i < t->n && t->slots[i]) {
        i++;
    }
    while (i >= t->cap) {
        if (table_grow(t) != 0) {
            return 0;
        }
    }
    t->slots[i] = p;
    if (i >= t->n) {
        t->n = i + 1;
    }
    return MPISHIM_HANDLE_MAKE(MPISHIM_KIND_INDIRECT, t->obj, i);
}

int shim_table_add(struct shim_table *t, void *p)
{
    int h;

    lock();
    h = table_add_locked(t, p);
    unlock();
    return h;
}

static void *table_get_locked(const struct shim_table *t, int handle)
{
    int i = MPISHIM_HANDLE_INDEX(handle);

    if (MPISHIM_HANDLE_KIND(handle) != MPISHIM_KIND_INDIRECT ||
        MPISHIM_HANDLE_OBJ(handle) != t->obj || i >= t->n) {
        return NULL;
    }
    return t->slots[i];
}

/* Kept out of line, so that shim_table_get's common case saves no registers for it. */
static __attribute__((noinline)) void *table_get_mt(const struct shim_table *t, int handle)
{
    void *p;

    lock();
    p = table_get_locked(t, handle);
    unlock();
    return p;
}

void *shim_table_get(const struct shim_table *t, int handle)
{
    /* Without MPI_THREAD_MULTIPLE no other thread grows the table: a plain read (every
     * window call looks its handle up, three times in a lock-get-unlock). */
    if (shim_thread_multiple) {
        return table_get_mt(t, handle);
    }
    return table_get_locked(t, handle);
}

void *shim_table_remove(struct shim_table *t, int handle)
{
    void *p;

    lock();
    p = table_get_locked(t, handle);
    if (p) {
        t->slots[MPISHIM_HANDLE_INDEX(handle)] = NULL;
    }
    unlock();
    return p;
}
