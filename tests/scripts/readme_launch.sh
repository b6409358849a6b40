#!/bin/sh
# readme_launch.sh <README.md> <prefix> <prog.c> <workdir> [mpirun.openmpi] [mpiexec.mpich]
# (issue 14) The launch lines of the README's user guide work as written, on this machine:
# - the OpenMPI line has --oversubscribe, and runs 4 PEs even where there are fewer cores
#   (`mpirun` replaced by the OpenMPI found, --allow-run-as-root added as root, ./prog by a
#   program built from prog.c);
# - the MPICH line is spelled mpiexec.mpich, and runs;
# - the ishmrun line runs.
set -u
readme=$1
prefix=$2
src=$3
work=$4
openmpi=${5:-}
mpich=${6:-}
case "$openmpi" in *NOTFOUND) openmpi="" ;; esac
case "$mpich" in *NOTFOUND) mpich="" ;; esac
fail=0
bad() { echo "FAIL: $*"; fail=1; }
mkdir -p "$work" && cd "$work" || exit 1
# the code block after "### Launch"
block=$(awk '/^### Launch/ { on = 1; next } on && /^```sh/ { inb = 1; next } inb && /^```/ { exit } inb { print }' "$readme")
echo "README launch block:"
echo "$block" | sed 's/^/    /'
cmd_of() { echo "$block" | grep -E "^$1 " | head -n 1 | sed 's/[[:space:]]*#.*//'; }
ompi_line=$(cmd_of mpirun)
mpich_line=$(cmd_of 'mpiexec[.a-z]*')
run_line=$(cmd_of ishmrun)
[ -n "$ompi_line" ] || bad "no mpirun line"
[ -n "$mpich_line" ] || bad "no mpiexec line"
case "$ompi_line" in *--oversubscribe*) ;; *) bad "the mpirun line lacks --oversubscribe: $ompi_line" ;; esac
case "$mpich_line" in "mpiexec.mpich "*) ;; *) bad "the MPICH line is not spelled mpiexec.mpich: $mpich_line" ;; esac
cc "$src" -I"$prefix/include" -L"$prefix/lib" -lishmem -Xlinker -rpath="$prefix/lib" -o prog || { bad "cc"; exit 1; }
echo "cores: $(nproc)"
# run LABEL COMMAND-LINE: 4 PEs, each prints its ok line once
run() {
    echo "running: $2"
    # shellcheck disable=SC2086
    timeout 60 $2 >"out.$1" 2>&1
    st=$?
    sed "s/^/    $1: /" "out.$1"
    [ "$st" = 0 ] || bad "$1: exit status $st"
    for pe in 0 1 2 3; do
        [ "$(grep -c "^pkgconfig: PE $pe of 4 ok\$" "out.$1")" = 1 ] || bad "$1: no (single) line for PE $pe"
    done
}
run ishmrun "$(echo "$run_line" | sed "s|^ishmrun|$prefix/bin/ishmrun|")"
if [ -n "$openmpi" ]; then
    root=""
    [ "$(id -u)" = 0 ] && root="--allow-run-as-root"
    run openmpi "$(echo "$ompi_line" | sed "s|^mpirun|$openmpi $root|")"
else
    echo "WARNING: no OpenMPI mpirun: its line is not run"
fi
if [ -n "$mpich" ]; then
    run mpich "$(echo "$mpich_line" | sed "s|^mpiexec.mpich|$mpich|")"
else
    echo "WARNING: no mpiexec.mpich: its line is not run"
fi
[ "$fail" = 0 ] && echo "PASS: the README's launch lines"
exit $fail
