#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_wire.c into tests/fuzz/corpus/wire/: rings of records as
fabric/fab_shm.c lays them out (byte 0 even) and single active messages of pg_core's
envelope (byte 0 odd, byte 1 the sender's world rank), little-endian as on x86-64. The
layouts are those of fabric/fab_shm_wire.h and pg_core/pg_wire.h."""
import os
import struct
import sys

AM, DATA, FIN, WRAP, HELP, CTS, CHUNK = 1, 2, 3, 4, 5, 6, 7
EAGER, RTS, ACK, CANCEL = 1, 2, 3, 4
RING = 256 * 1024
RNDV = 1 << 63


def rec(kind, body, length=None):
    """One ring record: a 16-byte header (stamp, len, kind, pad), padded to 64 bytes."""
    n = len(body) if length is None else length
    r = struct.pack('<QIHH', 1, n, kind, 0) + body
    return r + b'\0' * (-len(r) % 64)


def env(kind, src, tag, payload=b'', ctx=2, ext=None):
    """pg's envelope: ctx, src, tag, 16-bit len, kind, has_ext, then (len, rndv_tag,
    sync_id) when ext is given, then the payload."""
    h = struct.pack('<IiiHBB', ctx, src, tag, len(payload) & 0xffff, kind, 1 if ext else 0)
    return h + (struct.pack('<QQQ', *ext) if ext else b'') + payload


def msg(peer, body):
    return b'\1' + bytes([peer]) + body


RTS_TAG = RNDV | (1 << 32) | 7
SEEDS = {
    'ring_am': b'\0' + rec(AM, env(EAGER, 1, 5, b'12345678'))
    + rec(AM, env(RTS, 1, 6, ext=(1 << 20, RTS_TAG, 0)))
    + rec(AM, env(ACK, 0, 0, ext=(0, 0, 0x7f0000001000))),
    'ring_ctl': b'\0' + rec(DATA, struct.pack('<QQQQII', RNDV | 9, 0x7f0000002000, 4096,
                                              0x7f0000003000, 0, 0))
    + rec(FIN, struct.pack('<QiI', 0x7f0000003000, 0, 0))
    + rec(CTS, struct.pack('<QQQQ', 0x7f0000003000, 0x7f0000002000, 4096, 0x7f0000004000))
    + rec(HELP, struct.pack('<I', 3))
    + rec(CHUNK, struct.pack('<QQ', 0x7f0000004000, 0) + b'c' * 100),
    'ring_wrap': b'\0' + rec(WRAP, b'', RING),
    'ring_bad': b'\0' + rec(9, b'xx') + rec(DATA, b'short') + rec(HELP, struct.pack('<I', 99))
    + rec(AM, b'', RING),
    'msg_eager': msg(1, env(EAGER, 1, 5, b'hello wire')),
    'msg_sync': msg(1, env(EAGER, 1, 5, b'sync', ext=(4, 0, 0x7f0000005000))),
    'msg_rts': msg(1, env(RTS, 1, 6, ext=(1 << 30, RTS_TAG, 0))),
    'msg_ack': msg(2, env(ACK, 0, 0, ext=(0, 0, 0x7f0000005000))),
    'msg_cancel': msg(1, env(CANCEL, 1, 6, ext=(0, RTS_TAG, 0x7f0000006000))),
    'msg_bad': msg(1, env(EAGER, 1, 5, b'') + b'trailing'),
}

if __name__ == '__main__':
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, 'corpus', 'wire')
    os.makedirs(out, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(out, name), 'wb') as f:
            f.write(data)
