#!/usr/bin/env python3
"""gen_large_count.py MPICH_MPI_PROTO_H - writes mpi_shim/shim_large_count.c and the block of
include/mpi.h between the "MPI-4.0 large-count functions" markers.

A developer's tool, not part of the build: its output is committed. The input is the
prototype header of an MPICH 4.x install (Debian: /usr/include/x86_64-linux-gnu/mpich/
mpi_proto.h), which lists every MPI_<name>_c function with MPICH's signature (the ABI the
functions must have). For each one whose int version include/mpi.h declares, the signatures
are compared argument by argument:
  - the same type: passed on;
  - MPI_Count or MPI_Aint where the int version takes an int: checked to fit an int
    (MPI_ERR_COUNT otherwise), then passed as an int; where it takes an MPI_Aint: passed on;
  - MPI_Count * or MPI_Aint * where the int version takes int * or MPI_Aint *: an output
    (an input too when it is called "position", as MPI_Pack's is), through a temporary;
  - anything else (count or displacement arrays, a user function of another type, extra
    arguments) is not mapped: the function is left out here, and the MPICH ABI stubs
    (tools/gen_abi_stubs.sh) make it return MPI_ERR_UNSUPPORTED_OPERATION.
Run it from the source tree: python3 tools/gen_large_count.py /usr/include/.../mpi_proto.h
"""
import re
import sys

HEADER = "include/mpi.h"
SOURCE = "mpi_shim/shim_large_count.c"
BEGIN = ("/* ---- MPI-4.0 large-count functions (tools/gen_large_count.py writes this block). "
         "---- */")
END = "/* ---- End of the large-count functions. ---- */"


def params(text):
    """[(type, name)] of a parameter list, arrays as pointers; None if one is not plain."""
    out = []
    text = " ".join(text.split())
    if text in ("", "void"):
        return out
    for p in text.split(","):
        p = p.strip()
        arr = p.endswith("[]")
        if arr:
            p = p[:-2].strip()
        m = re.match(r"(.*?)([A-Za-z_][A-Za-z0-9_]*)$", p)
        if not m or not m.group(1).strip() or "(" in p:
            return None  # an unnamed argument or a function pointer: not mapped
        typ = " ".join(m.group(1).replace("*", " * ").split())
        if arr:
            typ += " *"
        out.append((typ, m.group(2)))
    return out


def mpich_c_functions(path):
    text = open(path).read()
    pat = re.compile(r"\bint MPI_(\w+)_c\s*\(([^;]*?)\)\s*(?:MPICH_ATTR\w*\([^)]*\)\s*)*"
                     r"MPICH_API_PUBLIC;", re.S)
    return [(m.group(1), params(m.group(2))) for m in pat.finditer(text)]


def our_functions(path):
    text = open(path).read()
    text = text.split(BEGIN)[0] + (text.split(END)[1] if END in text else "")
    pat = re.compile(r"MPISHIM_PROTO\(int, (\w+), \((.*?)\)\)\n", re.S)
    return {m.group(1): params(m.group(2)) for m in pat.finditer(text)}


WIDE = ("MPI_Count", "MPI_Aint")


def plan(cparams, bparams):
    """Per argument: ('pass'|'fit'|'out'|'inout', type, name, base pointee); None if unmapped."""
    if cparams is None or bparams is None or len(cparams) != len(bparams):
        return None
    steps = []
    for (ct, cn), (bt, _) in zip(cparams, bparams):
        if ct == bt:
            steps.append(("pass", ct, cn, None))
        elif ct in WIDE and bt == "int":
            steps.append(("fit", ct, cn, None))
        elif ct in WIDE and bt == "MPI_Aint":
            steps.append(("pass", ct, cn, None))
        elif ct in ("MPI_Count *", "MPI_Aint *") and bt in ("int *", "MPI_Aint *"):
            steps.append(("inout" if cn == "position" else "out", ct, cn, bt[:-2]))
        else:
            return None
    return steps


def decl(ct, cn):
    return ct + cn if ct.endswith("*") else ct + " " + cn


def function(name, cparams, steps):
    args = ", ".join(decl(t, n) for t, n in cparams)
    comm = next((n for t, n in cparams if t == "MPI_Comm"), "MPI_COMM_WORLD")
    head = "int PMPI_%s_c(" % name
    lines = ["#pragma weak MPI_%s_c = PMPI_%s_c" % (name, name),
             wrap(head + args + ")", len(head)), "{"]
    temps = [s for s in steps if s[0] in ("out", "inout")]
    if temps:
        lines.append("    int rc;")
    for _, _, n, bt in temps:
        lines.append("    %s %s_v = 0;" % (bt, n))
    for kind, _, n, _ in steps:
        if kind == "fit":
            lines += ["    if (!fits_int(%s)) {" % n,
                      "        return too_large(%s, SHIM_FN, \"%s\", %s);" % (comm, n, n), "    }"]
        elif kind == "inout":
            lines += ["    if (%s) {" % n, "        if (!fits_int(*%s)) {" % n,
                      "            return too_large(%s, SHIM_FN, \"*%s\", *%s);" % (comm, n, n),
                      "        }", "        %s_v = (int)*%s;" % (n, n), "    }"]
    call = []
    for kind, _, n, _ in steps:
        if kind == "fit":
            call.append("(int)" + n)
        elif kind in ("out", "inout"):
            call.append("%s ? &%s_v : NULL" % (n, n))
        else:
            call.append(n)
    if not temps:
        head = "    return PMPI_%s(" % name
        lines.append(wrap(head + ", ".join(call) + ");", len(head)))
    else:
        head = "    rc = PMPI_%s(" % name
        lines.append(wrap(head + ", ".join(call) + ");", len(head)))
        for _, _, n, _ in temps:
            lines += ["    if (rc == MPI_SUCCESS && %s) {" % n, "        *%s = %s_v;" % (n, n),
                      "    }"]
        lines.append("    return rc;")
    lines.append("}")
    return "\n".join(lines)


def wrap(text, indent, width=100):
    """Breaks a prototype after commas so that it fits in width columns."""
    out, line = [], ""
    for piece in re.split(r"(?<=, )", text):
        if line and len(line) + len(piece.rstrip()) > width:
            out.append(line.rstrip())
            line = " " * indent
        line += piece
    out.append(line)
    return "\n".join(out)


SOURCE_HEAD = """/*
 * shim_large_count.c - the MPI-4.0 large-count functions (MPI_Send_c, MPI_Allreduce_c, ...)
 * whose int versions mpishim implements. Generated by tools/gen_large_count.py from MPICH
 * 4.0's prototypes (the ABI a binary built against MPICH calls); do not edit by hand.
 *
 * Each maps onto its int version (the PMPI_ name, so that a profiling library sees one
 * call): a count that fits in an int is passed on, one that does not fails the call with
 * MPI_ERR_COUNT on the communicator's error handler, naming the argument and its value.
 * mpishim's own paths take int counts; a message of more than INT_MAX elements needs a
 * derived datatype, as before MPI-4.0. Outputs (MPI_Count *) go through an int or MPI_Aint
 * temporary and are written only when the call succeeds. The variants with count or
 * displacement arrays are not here: the blocking collectives are in shim_large_count_v.c,
 * the others refuse (tools/gen_abi_stubs.sh).
 */
#include "config.h"

#include "shim.h"

#include <limits.h>

static int fits_int(long long v)
{
    return v >= INT_MIN && v <= INT_MAX;
}

static int too_large(MPI_Comm comm, const char *fn, const char *arg, long long v)
{
    return shim_error(comm, fn, MPI_ERR_COUNT,
                      "%s = %lld does not fit in an int (mpishim's large-count calls take values "
                      "up to INT_MAX)",
                      arg, v);
}
"""


def unsupported(path):
    """The functions mpi_shim/shim_unsupported.c defines as refusing."""
    return set(re.findall(r"^SHIM_UNSUPPORTED(?:_OUT)?\((\w+),", open(path).read(), re.M))


def main():
    ours = our_functions(HEADER)
    for name in unsupported("mpi_shim/shim_unsupported.c"):
        ours.pop(name, None)
    mapped, protos = [], []
    for name, cparams in mpich_c_functions(sys.argv[1]):
        if name not in ours:  # not implemented (or refused): an ABI stub refuses the _c too
            continue
        steps = plan(cparams, ours[name])
        if steps is None:
            continue
        mapped.append(function(name, cparams, steps))
        args = ", ".join(decl(t, n) for t, n in cparams)
        proto = "MPISHIM_PROTO(int, %s_c, (%s))" % (name, args)
        protos.append(wrap(proto, len("MPISHIM_PROTO(int, %s_c, (" % name)))
    with open(SOURCE, "w") as f:
        f.write(SOURCE_HEAD + "\n" + "\n\n".join(mapped) + "\n")
    text = open(HEADER).read()
    block = BEGIN + "\n/* Large-count functions (MPI-4.0). */\n" + "\n".join(protos) + "\n" + END
    if BEGIN in text:
        head, rest = text.split(BEGIN)
        text = head + block + rest.split(END)[1]
    else:
        anchor = "#undef MPISHIM_PROTO"
        text = text.replace(anchor, block + "\n\n" + anchor)
    with open(HEADER, "w") as f:
        f.write(text)
    print("%d large-count functions mapped" % len(mapped))


if __name__ == "__main__":
    main()
