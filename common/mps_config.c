/* The MPISHIM_* variable table and its cached lookups. */
#include "config.h"

#include "mps_config.h"

#include <stdlib.h>

static const struct mps_config_desc table[MPS_CFG_COUNT] = {
#define MPS_CONFIG_DESC(id, name, type, def, doc) [MPS_CFG_##id] = {name, MPS_CFG_##type, def, doc},
    MPS_CONFIG_LIST(MPS_CONFIG_DESC)
#undef MPS_CONFIG_DESC
};

/* Values are looked up once: getenv on a hot path (the spin count, the eager size) costs.
 * Threads may look a value up at the same time (a schedule is built outside the world
 * lock): each finds the same string, and the atomics make the caching race-free. */
static const char *cache[MPS_CFG_COUNT];

const struct mps_config_desc *mps_config_desc(enum mps_config_id id)
{
    return &table[id];
}

const char *mps_config_str(enum mps_config_id id)
{
    const char *c = __atomic_load_n(&cache[id], __ATOMIC_ACQUIRE);

    if (!c) {
        const char *v = getenv(table[id].name);
        c = (v && *v) ? v : table[id].def;
        __atomic_store_n(&cache[id], c, __ATOMIC_RELEASE);
    }
    return c;
}

long mps_config_int(enum mps_config_id id)
{
    return strtol(mps_config_str(id), NULL, 0);
}

double mps_config_double(enum mps_config_id id)
{
    return strtod(mps_config_str(id), NULL);
}

bool mps_config_is_set(enum mps_config_id id)
{
    const char *v = getenv(table[id].name);

    return v && *v;
}

void mps_config_reset(void)
{
    for (int i = 0; i < MPS_CFG_COUNT; i++) {
        __atomic_store_n(&cache[i], NULL, __ATOMIC_RELEASE);
    }
}
