#!/bin/sh
# ishmemcc.sh <prefix> <prog.c> <workdir> (issue 14): the compiler wrappers (and, issue 25,
# the same wrapper as ishmem-oshcc / ishmem-oshc++).
# - `ishmemcc -show` prints the compiler with exactly the flags of pkg-config (link flags only
#   when linking), `ishmemc++ -show` the C++ compiler;
# - ishmemcc and ishmemc++ build prog.c (as C and as C++) into programs that find the
#   installed library by their rpath and run on 4 PEs, launched as `ishmrun -np 4 prog` from
#   their directory (-np as mpirun spells it, the program found without ./).
set -u
prefix=$1
src=$2
work=$3
mkdir -p "$work" || exit 1
cd "$work" || exit 1
unset LD_LIBRARY_PATH ISHMEM_CC ISHMEM_CXX
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
fail=0
bad() { echo "FAIL: $*"; fail=1; }
cc_w=$prefix/bin/ishmemcc
cxx_w=$prefix/bin/ishmemc++

# -show: cc, the cflags, the arguments, the libs (pkg-config's, token by token)
show=$("$cc_w" -show -O2 prog.c -o prog) || bad "ishmemcc -show exited $?"
echo "ishmemcc -show: $show"
# (pkg-config's prefix is ${pcfiledir}/../..: the same directory, not normalized)
pc() { pkg-config --define-variable=prefix="$prefix" "$@" ishmem; }
want="cc $(pc --cflags) -O2 prog.c -o prog $(pc --libs)"
[ "$(echo $show)" = "$(echo $want)" ] || bad "ishmemcc -show: '$show', want '$want'"
show=$("$cc_w" --showme -c prog.c) || bad "ishmemcc --showme exited $?"
want="cc $(pc --cflags) -c prog.c"
[ "$(echo $show)" = "$(echo $want)" ] || bad "ishmemcc --showme -c: '$show' (link flags when only compiling?)"
show=$("$cxx_w" -show x.cpp) || bad "ishmemc++ -show exited $?"
case "$show" in "c++ -I$prefix/include x.cpp -L$prefix/lib -lishmem "*) ;; *) bad "ishmemc++ -show: '$show'" ;; esac
show=$(ISHMEM_CC=gcc "$cc_w" -show x.c) || bad "ISHMEM_CC=gcc ishmemcc -show"
case "$show" in "gcc "*) ;; *) bad "ISHMEM_CC=gcc ishmemcc -show: '$show'" ;; esac
"$cc_w" --version | head -n 1 | grep -q "^ishmemcc: ishmem [0-9]" || bad "ishmemcc --version"
# ishmem-oshcc / ishmem-oshc++ (OpenSHMEM programs): the same wrapper, C and C++
show=$("$prefix/bin/ishmem-oshcc" -show x.c) || bad "ishmem-oshcc -show exited $?"
case "$show" in "cc -I$prefix/include x.c -L$prefix/lib -lishmem "*) ;; *) bad "ishmem-oshcc -show: '$show'" ;; esac
show=$("$prefix/bin/ishmem-oshc++" -show x.cpp) || bad "ishmem-oshc++ -show exited $?"
case "$show" in "c++ -I$prefix/include x.cpp -L$prefix/lib -lishmem "*) ;; *) bad "ishmem-oshc++ -show: '$show'" ;; esac

# build and run
rm -f hello_cc hello_cxx
"$cc_w" -O2 -Wall -Wextra "$src" -o hello_cc || bad "ishmemcc failed"
"$cxx_w" -O2 -Wall -x c++ "$src" -o hello_cxx || bad "ishmemc++ failed"
for p in hello_cc hello_cxx; do
    [ -x "$p" ] || { bad "no $p"; continue; }
    "$prefix/bin/ishmrun" --timeout 60 -np 4 "$p" >"out.$p" 2>&1
    st=$?
    sed "s/^/    $p: /" "out.$p"
    [ "$st" = 0 ] || bad "ishmrun -np 4 $p: exit status $st"
    for pe in 0 1 2 3; do
        [ "$(grep -c "^pkgconfig: PE $pe of 4 ok\$" "out.$p")" = 1 ] || bad "$p: no (single) line for PE $pe"
    done
done
[ "$fail" = 0 ] && echo "PASS: ishmemcc and ishmemc++"
exit $fail
