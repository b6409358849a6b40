#!/bin/sh
# info.sh <ishmem-info> <ishmem.h>: ishmem-info runs, names ISHMEM_SYMMETRIC_SIZE and the
# version of the header, shows a variable's value from the environment in aligned columns;
# --version is one line (release and Intel SHMEM API version), --help prints usage, an
# unknown option or argument exits 2; without a CUDA driver the CUDA line is one calm line.
set -u
info=$1
header=$2
fail=0
bad() { echo "FAIL: $*"; fail=1; }
major=$(sed -n 's/^#define ISHMEM_MAJOR_VERSION \([0-9]*\).*/\1/p' "$header")
minor=$(sed -n 's/^#define ISHMEM_MINOR_VERSION \([0-9]*\).*/\1/p' "$header")
out=$("$info") || bad "ishmem-info exited $?"
echo "$out"
echo "$out" | grep -q "ISHMEM_SYMMETRIC_SIZE" || bad "no ISHMEM_SYMMETRIC_SIZE"
echo "$out" | grep -q "$major\.$minor" || bad "no version $major.$minor"
for v in ISHMEM_DEBUG ISHMEM_PEER_CHECK_MS ISHMEM_BOOTSTRAP; do
    echo "$out" | grep -q "$v" || bad "no $v"
done
out2=$(ISHMEM_SYMMETRIC_SIZE=3G ISHMEM_QUEUE_REDUCE_SPLIT_MIN=512K "$info") || bad "ishmem-info exited $?"
echo "$out2" | grep -q "ISHMEM_SYMMETRIC_SIZE  *3G " ||
    bad "the value of ISHMEM_SYMMETRIC_SIZE=3G is not shown"
# aligned columns: every variable's value starts in the same column, and so does its default
cols=$(echo "$out2" | awk '/^  ISHMEM_/ { v = index($0, $2); d = index(substr($0, v + length($2)), $3) + v + length($2) - 1; print v, d }' | sort -u)
[ "$(echo "$cols" | wc -l)" = 1 ] || bad "the value and default columns are not aligned: $cols"
[ -n "$cols" ] || bad "no variable lines"
# --version: exactly one line, the release and the API version
ver=$("$info" --version) || bad "--version exited $?"
[ "$(echo "$ver" | wc -l)" = 1 ] || bad "--version printed more than one line: $ver"
echo "$ver" | grep -Eq "^ishmem [0-9]+\.[0-9]+\.[0-9]+ \(Intel SHMEM API $major\.$minor\)$" ||
    bad "--version: '$ver'"
"$info" -V | grep -q "Intel SHMEM API" || bad "-V"
# --help: usage on stdout, status 0
"$info" --help | grep -q "^Usage: ishmem-info" || bad "--help prints no usage"
# unknown options and arguments: status 2 and a message on stderr
for a in --bogus -x extra; do
    "$info" "$a" >/dev/null 2>"${TMPDIR:-/tmp}/info.err.$$"
    st=$?
    [ "$st" = 2 ] || bad "ishmem-info $a exited $st, not 2"
    grep -q "^ishmem-info: .*'$a'" "${TMPDIR:-/tmp}/info.err.$$" || bad "ishmem-info $a: no message naming it"
done
rm -f "${TMPDIR:-/tmp}/info.err.$$"
# no driver here (or a GPU machine): one calm CUDA line
cuda=$(echo "$out" | grep -c "^CUDA: ")
[ "$cuda" = 1 ] || bad "$cuda CUDA lines"
echo "$out" | grep -Eq "^CUDA: (no driver; CPU backend|[0-9]+ device\(s\) visible; GPU backend|driver loaded, but not usable .*; CPU backend)" ||
    bad "the CUDA line: $(echo "$out" | grep '^CUDA')"
[ "$fail" = 0 ] && echo "PASS: ishmem-info"
exit $fail
