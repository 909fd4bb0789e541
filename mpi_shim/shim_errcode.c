/*
 * shim_errcode.c - dynamic error codes: an error returned to the user is its class plus the
 * slot of a small ring that keeps its detailed message, so that MPI_Error_string on the
 * returned code says what failed ("MPI_Recv (rank 1): message from rank 0 ... is longer")
 * and MPI_Error_class on it gives the class, as MPICH does.
 *
 * A code is laid out as
 *
 *     bits 0-6    the class (the predefined ones are 1 to 58)
 *     bits 7-12   the slot of the ring (64 slots)
 *     bits 13-29  the generation of the slot, 1 to 2^17 - 1, never 0
 *
 * so it is never a bare class (its generation is not 0), it stays at or below
 * MPI_ERR_LASTCODE (0x3fffffff) and so never meets the codes of MPI_Add_error_code/class,
 * which lie above it. The ring keeps the code each slot was last written for: a code whose
 * slot was reused since (64 errors later) no longer matches and reads as its class text.
 */
#include "config.h"

#include "shim.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define CLASS_BITS 7
#define SLOT_BITS 6
#define GEN_BITS 17
#define N_SLOTS (1 << SLOT_BITS)
#define CLASS_MASK ((1 << CLASS_BITS) - 1)
#define GEN_SHIFT (CLASS_BITS + SLOT_BITS)
#define GEN_LIMIT ((1u << GEN_BITS) - 1)

struct slot {
    int code; /* 0: never written */
    char msg[MPI_MAX_ERROR_STRING];
};

/* Errors are rare and any thread may raise one: a plain lock is enough. */
static pthread_mutex_t ring_lock = PTHREAD_MUTEX_INITIALIZER;
static struct slot ring[N_SLOTS];
static uint64_t n_raised;

/* Only classes that fit the class bits are encoded; user classes (above MPI_ERR_LASTCODE)
 * and MPI_SUCCESS pass unchanged. */
static bool encodable(int errclass)
{
    return errclass > MPI_SUCCESS && errclass <= CLASS_MASK;
}

bool shim_errcode_is_dynamic(int code)
{
    /* Class 0 is never encoded: such a value is no code, not a success. */
    return code > 0 && code <= MPI_ERR_LASTCODE && (code >> GEN_SHIFT) != 0 &&
           (code & CLASS_MASK) != 0;
}

int shim_errcode_class(int code)
{
    return shim_errcode_is_dynamic(code) ? code & CLASS_MASK : code;
}

int shim_errcode_make(int errclass, const char *msg)
{
    struct slot *s;
    unsigned slot, gen;
    int code;

    errclass = shim_errcode_class(errclass);
    if (!encodable(errclass)) {
        return errclass;
    }
    pthread_mutex_lock(&ring_lock);
    slot = (unsigned)(n_raised % N_SLOTS);
    gen = (unsigned)((n_raised / N_SLOTS) % GEN_LIMIT) + 1;
    n_raised++;
    code = (int)((gen << GEN_SHIFT) | (slot << CLASS_BITS) | (unsigned)errclass);
    s = &ring[slot];
    s->code = code;
    snprintf(s->msg, sizeof(s->msg), "%s", msg);
    pthread_mutex_unlock(&ring_lock);
    return code;
}

bool shim_errcode_string(int code, char *out)
{
    struct slot *s;
    bool found = false;

    if (!shim_errcode_is_dynamic(code)) {
        return false;
    }
    s = &ring[(code >> CLASS_BITS) & (N_SLOTS - 1)];
    pthread_mutex_lock(&ring_lock);
    if (s->code == code) {
        memcpy(out, s->msg, sizeof(s->msg));
        found = true;
    }
    pthread_mutex_unlock(&ring_lock);
    return found;
}
