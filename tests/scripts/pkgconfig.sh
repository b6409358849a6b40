#!/bin/sh
# pkgconfig.sh <prefix> <prog.c> <workdir>: builds prog.c with exactly
#   cc prog.c $(pkg-config --cflags --libs ishmem)
# (PKG_CONFIG_PATH into the install, no LD_LIBRARY_PATH) and runs it on 4 PEs under ishmrun
# and under OpenMPI's mpirun.
set -u
prefix=$1
src=$2
work=$3
mkdir -p "$work" || exit 1
cd "$work" || exit 1
unset LD_LIBRARY_PATH
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
fail=0

echo "pkg-config --cflags --libs ishmem: $(pkg-config --cflags --libs ishmem)"
pkg-config --exists ishmem || { echo "FAIL: pkg-config does not find ishmem"; exit 1; }
rm -f a.out
cc "$src" $(pkg-config --cflags --libs ishmem) || { echo "FAIL: cc"; exit 1; }
[ -x a.out ] || { echo "FAIL: no a.out"; exit 1; }

# the program finds the installed library through its rpath, not through the environment
# (by its versioned soname, libishmem.so.1)
lib=$(ldd ./a.out | sed -n 's/^[[:space:]]*libishmem\.so\.[0-9]* => \([^ ]*\) .*/\1/p')
if [ -z "$lib" ] || [ "$(readlink -f "$lib")" != "$(readlink -f "$prefix/lib/libishmem.so")" ]; then
    echo "FAIL: a.out resolves libishmem.so.N to '$lib', not $prefix/lib/libishmem.so"
    ldd ./a.out
    fail=1
else
    echo "ok: $(ldd ./a.out | grep -o 'libishmem\.so\.[0-9]*') => $lib"
fi
# the pkg-config file: a real URL or none (issue 14: it had https://example.invalid/ishmem)
url=$(sed -n 's/^URL: *//p' "$prefix/lib/pkgconfig/ishmem.pc")
case "$url" in
"" | https://*) ;;
*) echo "FAIL: ishmem.pc has URL '$url'"; fail=1 ;;
esac
case "$url" in
*.invalid* | *example*) echo "FAIL: ishmem.pc has a placeholder URL '$url'"; fail=1 ;;
esac

check() { # launcher-name output-file status
    if [ "$3" -ne 0 ]; then
        echo "FAIL: $1: exit status $3"
        fail=1
    fi
    for pe in 0 1 2 3; do
        if [ "$(grep -c "^pkgconfig: PE $pe of 4 ok\$" "$2")" -ne 1 ]; then
            echo "FAIL: $1: no (single) line 'pkgconfig: PE $pe of 4 ok'"
            fail=1
        fi
    done
    sed "s/^/    $1: /" "$2"
}

"$prefix/bin/ishmrun" --timeout 60 -n 4 ./a.out >out.ishmrun 2>&1
check ishmrun out.ishmrun $?

if command -v mpirun.openmpi >/dev/null 2>&1; then
    mpirun.openmpi --allow-run-as-root --oversubscribe -np 4 ./a.out >out.openmpi 2>&1
    check openmpi out.openmpi $?
else
    echo "**************************************************************"
    echo "WARNING: mpirun.openmpi not found: the OpenMPI run is SKIPPED"
    echo "**************************************************************"
fi
[ "$fail" = 0 ] && echo "PASS: pkg-config build, runs under ishmrun and mpirun"
exit $fail
