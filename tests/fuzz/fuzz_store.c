/*
 * fuzz_store.c - a libFuzzer target for the TCP store server's frame parser and request
 * handling (pmix_boot/boot_store_server.c), run by tests/fuzz/run_fuzz.sh.
 *
 * Each input is what one connection sends: byte 0 chooses whether the server requires a
 * token ("fuzz-token"; odd: yes), the rest is fed to a detached server (no socket, no
 * thread) exactly as the server thread would process it, answers dropped. The caps are
 * small so that inputs reach every limit's error path. The seeds in tests/fuzz/corpus/ are
 * well-formed conversations and one of each refusal, written by tests/fuzz/make_seeds.py.
 */
#include "config.h"

#include "boot_store_impl.h"
#include "pgc_status.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    setenv("MPISHIM_STORE_FRAME_MAX", "65536", 1);
    setenv("MPISHIM_STORE_BUFFER_MAX", "262144", 1);
    setenv("MPISHIM_STORE_KEYS_MAX", "64", 1);
    setenv("MPISHIM_STORE_DATA_MAX", "4096", 1);
    setenv("MPISHIM_LOG_LEVEL", "error", 1);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct boot_store_server *s = NULL;

    if (size < 1 || boot_store_server_detached(data[0] & 1 ? "fuzz-token" : "", &s) != PGC_OK) {
        return 0;
    }
    boot_store_server_feed(s, data + 1, size - 1);
    boot_store_server_stop(s);
    return 0;
}
