/*
 * boot_pmi1.h - private to pmix_boot/ and its unit test: the pieces of the PMI-1 method
 * (boot_pmi1.c) that can be checked without a PMI server.
 *
 * The simple PMI-1 wire protocol is one line per message, "cmd=NAME key=value ...\n", a
 * value running up to the next blank or the end of the line. Our allgather bytes travel as
 * base64url characters (A-Z a-z 0-9 - _), which no PMI server parses as a separator.
 */
#ifndef BOOT_PMI1_H
#define BOOT_PMI1_H

#include <stdbool.h>
#include <stddef.h>

/* Characters boot_pmi1_encode writes for len bytes (no terminating NUL counted). */
size_t boot_pmi1_encoded_len(size_t len);
/* Writes boot_pmi1_encoded_len(len) characters and a NUL to out. */
void boot_pmi1_encode(const void *in, size_t len, char *out);
/* Decodes n characters into at most cap bytes: the byte count, or -1 where a character is
 * not of the alphabet, n is not a length encode writes, or the bytes exceed cap. */
long boot_pmi1_decode(const char *in, size_t n, void *out, size_t cap);
/* Copies the value of key in a PMI-1 line ("cmd=get_result rc=0 value=abc") into out, at
 * most n - 1 characters and a NUL: false where the line has no such key or the value does
 * not fit. A key matches a whole word only ("rc" is not found in "src=1"). */
bool boot_pmi1_value(const char *line, const char *key, char *out, size_t n);

#endif
