#!/usr/bin/env python3
"""Takes ping-pong hops apart from bench/syscall_trace.c's records.

    bench/syscall_trace.py SIZE TRACE [TRACE ...]

For each trace (one process), over the last two thirds of its hops (a hop: from one send of
SIZE bytes or more to the next), the medians in microseconds of:
  send   the send call of the message (the kernel's copy and loopback delivery);
  recv   the receive calls of the peer's message, first to last, and how many;
  gap    from the end of the last receive call to the start of the next send: the user-space
         work of both libraries between a message's arrival and the reply, with the write
         call libfabric's tcp provider makes there (its completion signal), shown apart;
  wait   from the end of the send to the start of the next receive (the peer's share);
  off    the page offset of the sent payload (sendmsg's last iovec), the most frequent one:
         the kernel's copy of it slows 2.5x at some offsets (bench/sock_copy_align).
"""
import statistics
import struct
import sys

SENDMSG, SEND, RECV, WRITE = 1, 2, 3, 7  # syscall_trace.c's kinds (SEND: send and sendto)


def load(path):
    data = open(path, "rb").read()
    return [struct.unpack_from("ddlii", data, i * 32) for i in range(len(data) // 32)]


def hops(recs, size):
    sends = [i for i, r in enumerate(recs) if r[3] in (SENDMSG, SEND) and r[2] >= size]
    sends = sends[len(sends) // 3:]
    for a, b in zip(sends, sends[1:]):
        recvs = [i for i in range(a + 1, b) if recs[i][3] == RECV and recs[i][2] > 0]
        writes = [i for i in range(a + 1, b) if recs[i][3] == WRITE]
        if recvs and writes and writes[-1] > recvs[-1]:
            yield recs[a], [recs[i] for i in recvs], recs[writes[-1]], recs[b]


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    size = int(sys.argv[1])
    print("%-12s %6s %7s %5s %8s %7s %8s %7s %5s" %
          ("trace", "hops", "send", "recv", "(calls)", "gap", "(write)", "wait", "off"))
    for path in sys.argv[2:]:
        cols = {k: [] for k in ("send", "recv", "calls", "gap", "write", "wait")}
        offs = []
        for snd, rcv, wr, nxt in hops(load(path), size):
            cols["send"].append(snd[1] - snd[0])
            cols["recv"].append(rcv[-1][1] - rcv[0][0])
            cols["calls"].append(len(rcv))
            cols["gap"].append(nxt[0] - rcv[-1][1])
            cols["write"].append(wr[1] - wr[0])
            cols["wait"].append(rcv[0][0] - snd[1])
            offs.append(snd[4])
        if not cols["send"]:
            print("%-12s no hops of %d bytes" % (path.rsplit("/", 1)[-1], size))
            continue
        med = {k: statistics.median(v) * (1 if k == "calls" else 1e6) for k, v in cols.items()}
        print("%-12s %6d %7.2f %5.2f %8.0f %7.2f %8.2f %7.2f %5d" %
              (path.rsplit("/", 1)[-1], len(cols["send"]), med["send"], med["recv"],
               med["calls"], med["gap"], med["write"], med["wait"], statistics.mode(offs)))


if __name__ == "__main__":
    main()
