#!/bin/sh
# check_shmem_abi.sh <nm> <libishmem.so> <shmem-symbols.txt> (issue 25): the OpenSHMEM names of
# the installed library against the generated list.
# - every row marked `exported` is a defined dynamic symbol of type T at the same address as the
#   ishmem symbol it aliases (also type T): an alias, not a second implementation;
# - every row marked `native` (libishmem's own: contexts, realloc, malloc_with_hints) is a
#   defined dynamic symbol of type T, and SHMEM_CTX_DEFAULT is a defined data symbol;
# - no row marked `missing` is exported (the list says what is true);
# - every exported shmem_* / shmemx_* name (and the deprecated _my_pe, _num_pes, shmalloc,
#   shfree, shmemalign, start_pes, shrealloc) is a row marked exported.
# Prints "PASS: ..." or a "FAIL: ..." line per problem.
set -u
nm=$1
lib=$2
list=$3
[ -r "$list" ] || { echo "FAIL: no list $list"; exit 1; }
syms=$("$nm" -D --defined-only "$lib") || { echo "FAIL: $nm -D --defined-only $lib"; exit 1; }
printf '%s\n' "$syms" | awk -v list="$list" '
    BEGIN { FS = " " }
    FILENAME == "-" && NF == 3 { addr[$3] = $1; type[$3] = $2; next }
    END {
        FS = "\t"
        bad = 0; nexp = 0; nmiss = 0; nnat = 0
        while ((getline line < list) > 0) {
            if (line ~ /^#/ || line == "") continue
            n = split(line, f, "\t")
            if (n != 4) { print "FAIL: malformed row: " line; bad++; continue }
            listed[f[1]] = f[2]
            if (f[2] == "exported") {
                nexp++
                if (!(f[1] in addr)) { print "FAIL: " f[1] " is not exported"; bad++; continue }
                if (!(f[4] in addr)) { print "FAIL: " f[1] ": its target " f[4] " is not exported"; bad++; continue }
                if (type[f[1]] != "T" || type[f[4]] != "T") { print "FAIL: " f[1] " (" type[f[1]] ") / " f[4] " (" type[f[4]] "): not both type T"; bad++ }
                if (addr[f[1]] != addr[f[4]]) { print "FAIL: " f[1] " at " addr[f[1]] ", its target " f[4] " at " addr[f[4]] ": not an alias"; bad++ }
            } else if (f[2] == "native") {
                nnat++
                if (!(f[1] in addr)) { print "FAIL: " f[1] " (native) is not exported"; bad++; continue }
                if (type[f[1]] != "T") { print "FAIL: " f[1] " (native) is of type " type[f[1]] ", not T"; bad++ }
            } else if (f[2] == "missing") {
                nmiss++
                if (f[1] in addr) { print "FAIL: " f[1] " is listed missing but exported"; bad++ }
            } else { print "FAIL: bad status in row: " line; bad++ }
        }
        for (s in addr) {
            if (s ~ /^shmemx?_/ || s ~ /^(_my_pe|_num_pes|shmalloc|shfree|shmemalign|start_pes|shrealloc)$/) {
                if (listed[s] != "exported" && listed[s] != "native") { print "FAIL: " s " is exported but not listed as exported or native in " list; bad++ }
            }
        }
        if (nnat > 0 && !("SHMEM_CTX_DEFAULT" in addr && type["SHMEM_CTX_DEFAULT"] ~ /^[RDB]$/)) { print "FAIL: SHMEM_CTX_DEFAULT is not a defined data symbol"; bad++ }
        if (nexp < 1000) { print "FAIL: only " nexp " exported rows in " list; bad++ }
        if (bad) exit 1
        printf "PASS: %d OpenSHMEM names are aliases of their ishmem symbols (same address, type T), %d native ones are exported (type T); %d listed missing are not exported\n", nexp, nnat, nmiss
    }' -
