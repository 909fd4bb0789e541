/* The MPISHIM_* variable table and its cached lookups. */
#include "config.h"

#include "mps_config.h"

#include <stdlib.h>

static const struct mps_config_desc table[MPS_CFG_COUNT] = {
#define MPS_CONFIG_DESC(id, name, type, def, doc) [MPS_CFG_##id] = {name, MPS_CFG_##type, def, doc},
    MPS_CONFIG_LIST(MPS_CONFIG_DESC)
#undef MPS_CONFIG_DESC
};

/* Values are looked up once: getenv on a hot path (the spin count, the eager size) costs. */
static const char *cache[MPS_CFG_COUNT];

const struct mps_config_desc *mps_config_desc(enum mps_config_id id)
{
    return &table[id];
}

const char *mps_config_str(enum mps_config_id id)
{
    if (!cache[id]) {
        const char *v = getenv(table[id].name);
        cache[id] = (v && *v) ? v : table[id].def;
    }
    return cache[id];
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
        cache[i] = NULL;
    }
}
