#!/bin/sh
# info.sh <ishmem-info> <ishmem.h>: ishmem-info runs, names ISHMEM_SYMMETRIC_SIZE and the
# version of the header, and shows a variable's value from the environment.
set -u
info=$1
header=$2
fail=0
major=$(sed -n 's/^#define ISHMEM_MAJOR_VERSION \([0-9]*\).*/\1/p' "$header")
minor=$(sed -n 's/^#define ISHMEM_MINOR_VERSION \([0-9]*\).*/\1/p' "$header")
out=$("$info") || { echo "FAIL: ishmem-info exited $?"; fail=1; }
echo "$out"
echo "$out" | grep -q "ISHMEM_SYMMETRIC_SIZE" || { echo "FAIL: no ISHMEM_SYMMETRIC_SIZE"; fail=1; }
echo "$out" | grep -q "$major\.$minor" || { echo "FAIL: no version $major.$minor"; fail=1; }
for v in ISHMEM_DEBUG ISHMEM_PEER_CHECK_MS ISHMEM_BOOTSTRAP; do
    echo "$out" | grep -q "$v" || { echo "FAIL: no $v"; fail=1; }
done
out2=$(ISHMEM_SYMMETRIC_SIZE=3G "$info") || { echo "FAIL: ishmem-info exited $?"; fail=1; }
echo "$out2" | grep -q "ISHMEM_SYMMETRIC_SIZE.*3G" ||
    { echo "FAIL: the value of ISHMEM_SYMMETRIC_SIZE=3G is not shown"; fail=1; }
[ "$fail" = 0 ] && echo "PASS: ishmem-info"
exit $fail
