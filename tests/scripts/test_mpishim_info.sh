#!/bin/bash
# test_mpishim_info.sh - the info tool's modes: --version names the version configure.ac
# declares; --parsable gives one key:value line set per MPISHIM_* variable of
# common/mps_config.h (all of them, and no other), with the environment's value and source
# when set and the default otherwise; --all has the features and every variable with its
# default and doc; an unknown option is an error (exit 2) naming it.
set -uo pipefail

top_builddir=${top_builddir:-$PWD}
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
# shellcheck source=tests/scripts/expect.sh
. "$(dirname "$0")/expect.sh"
info=$top_builddir/tools/mpishim_info
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The variables below are set by this test only.
unset MPISHIM_TIMEOUT MPISHIM_LOG_LEVEL

version=$(sed -n 's/^AC_INIT(\[mpishim\], \[\([^]]*\)\].*/\1/p' "$top_srcdir/configure.ac")
expect "--version prints the version of configure.ac" "mpishim $version" "$("$info" --version)"

# The variables, from the table's source (an independent reading of it).
grep -Eo '^ +X\([A-Z0-9_]*, "MPISHIM_[A-Z0-9_]*"' "$top_srcdir/common/mps_config.h" |
    sed 's/.*"\(.*\)"/\1/' | sort -u >"$tmp/table"
"$info" --parsable >"$tmp/parsable"
expect "--parsable exits 0" 0 $?
sed -n 's/^var:\([^:]*\):value:.*/\1/p' "$tmp/parsable" | sort -u >"$tmp/listed"
expect "the table has variables (the parser found them)" yes \
    "$([ "$(wc -l <"$tmp/table")" -gt 10 ] && echo yes || echo no)"
expect "--parsable lists exactly the variables of mps_config.h" "" \
    "$(diff "$tmp/table" "$tmp/listed" | grep '^[<>]' | tr '\n' ' ')"
for field in type default source doc; do
    expect "--parsable gives every variable a $field" "$(wc -l <"$tmp/table")" \
        "$(grep -c "^var:[^:]*:$field:" "$tmp/parsable")"
done
expect "--parsable: every line is key:value" "" \
    "$(grep -v '^[a-z_]*:' "$tmp/parsable" | head -3)"
expect "--parsable names the package and version" "package:mpishim version:$version" \
    "$(grep -E '^(package|version):' "$tmp/parsable" | tr '\n' ' ' | sed 's/ $//')"
expect "--parsable says the MPICH ABI library's directory" yes \
    "$(grep -q '^path:mpich_abi_libdir:.*/mpich-abi$' "$tmp/parsable" && echo yes || echo no)"

# A value from the environment, and the default otherwise.
t=var:MPISHIM_TIMEOUT
expect "an unset variable shows its default, from the default" \
    "$t:value:300 $t:default:300 $t:source:default" \
    "$(grep -E '^var:MPISHIM_TIMEOUT:(value|default|source):' "$tmp/parsable" | tr '\n' ' ' |
        sed 's/ $//')"
expect "a set variable shows the environment's value" \
    "var:MPISHIM_TIMEOUT:value:17 var:MPISHIM_TIMEOUT:source:environment" \
    "$(MPISHIM_TIMEOUT=17 "$info" --parsable | grep -E '^var:MPISHIM_TIMEOUT:(value|source):' |
        tr '\n' ' ' | sed 's/ $//')"

# --all: the human form, with features and every variable's default and doc.
MPISHIM_LOG_LEVEL=error "$info" --all >"$tmp/all"
expect "--all exits 0" 0 $?
expect "--all has the features and install paths" "Features: Install paths:" \
    "$(grep -E '^(Features|Install paths):' "$tmp/all" | tr '\n' ' ' | sed 's/ $//')"
missing=
while read -r name; do
    grep -q "^  $name (" "$tmp/all" || missing="$missing $name"
done <"$tmp/table"
expect "--all lists every variable" "" "$missing"
expect "--all gives each variable a default" "$(wc -l <"$tmp/table")" \
    "$(grep -c '^      default: ' "$tmp/all")"
expect "--all shows a value set in the environment" yes \
    "$(grep -q 'current: "error"' <<<"$(grep -A1 '^  MPISHIM_LOG_LEVEL (' "$tmp/all")" &&
        echo yes || echo no)"

"$info" --bogus >"$tmp/out" 2>&1
expect "an unknown option exits 2 and names the option" "2 yes" \
    "$? $(grep -q "unknown option '--bogus'" "$tmp/out" && echo yes || echo no)"

expect_done
