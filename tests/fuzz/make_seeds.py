#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_store.c into tests/fuzz/corpus/: conversations in the
store's wire protocol (pmix_boot/boot_store_impl.h). Byte 0 of each seed: 1 when the
server requires the token "fuzz-token"."""
import os
import struct
import sys

SET, GET, ADD, CAS, WAIT, CHECK, DEL, NUM, AUTH = range(1, 10)


def field(b):
    return struct.pack('>I', len(b)) + b


def req(op, fields, timeout=0):
    body = struct.pack('>IQI', op, timeout, len(fields)) + b''.join(field(f) for f in fields)
    return struct.pack('>I', len(body)) + body


SEEDS = {
    'set_get': b'\0' + req(AUTH, [b'']) + req(SET, [b'k', b'v']) + req(GET, [b'k']) + req(NUM, []),
    'token': b'\1' + req(AUTH, [b'fuzz-token']) + req(ADD, [b'c', struct.pack('>Q', 5)])
    + req(CHECK, [b'c', b'd']),
    'wrong_token': b'\1' + req(AUTH, [b'fuzz-tokeN']) + req(SET, [b'k', b'v']),
    'no_auth': b'\1' + req(SET, [b'planted', b'x']),
    'cas_del': b'\0' + req(CAS, [b'k', b'', b'a']) + req(CAS, [b'k', b'a', b'b'])
    + req(DEL, [b'k']) + req(DEL, [b'k']),
    'wait_parked': b'\0' + req(WAIT, [b'x', b'y'], 100) + req(SET, [b'x', b'1']),
    'get_parked': b'\0' + req(GET, [b'late'], 50),
    'big_frame': b'\0' + struct.pack('>I', 70000) + b'\0' * 64,
    'keys': b'\0' + b''.join(req(SET, [b'k%d' % i, b'v']) for i in range(70)),
    'data': b'\0' + req(SET, [b'a', b'x' * 3000]) + req(SET, [b'b', b'x' * 3000]),
    'add_text': b'\0' + req(SET, [b'n', b'abc']) + req(ADD, [b'n', struct.pack('>Q', 1)]),
}

if __name__ == '__main__':
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), 'corpus')
    os.makedirs(out, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(out, name), 'wb') as f:
            f.write(data)
