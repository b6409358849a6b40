#!/bin/sh
# scripts/python-check.sh PREFIX [WORKDIR]: `make check-python`. Installs shmem4py 1.0.0 (the
# OpenSHMEM binding for Python, a CFFI module built by the OpenSHMEM compiler wrapper given as
# OSHCC) unchanged from PyPI against the ishmem installation in PREFIX, in a fresh virtual
# environment, and runs shmem4py's own test suite (from its source distribution) under ishmrun
# and under OpenMPI's mpirun at 1, 2 and 4 PEs on the CPU backend. Fails unless every run ends
# with every PE reporting its tests OK.
#
# NumPy is pinned below 2: shmem4py 1.0.0 predates NumPy 2, whose changed copy=False and integer
# conversion rules make its own code fail ("Unable to avoid copy while creating an array",
# "Python integer -1 out of bounds for uint64"); with NumPy 1.26 every test passes.
# Needs python3 with venv and pip, and the network to PyPI. WORKDIR (default build/python-check)
# is recreated.
set -eu
prefix=$(cd "${1:?usage: python-check.sh PREFIX [WORKDIR]}" && pwd)
work=${2:-build/python-check}
py=${PYTHON:-python3}
oshcc="$prefix/bin/ishmem-oshcc"
ishmrun="$prefix/bin/ishmrun"
[ -x "$oshcc" ] || { echo "python-check: $oshcc not found (make install first)" >&2; exit 1; }

rm -rf "$work"
mkdir -p "$work"
work=$(cd "$work" && pwd)
"$py" -m venv "$work/venv"
vpy="$work/venv/bin/python"
"$vpy" -m pip install -q --upgrade pip
"$vpy" -m pip install -q --only-binary numpy "numpy<2" cffi setuptools wheel
# The binding itself: built here, against this installation (no cached wheel from another).
OSHCC="$oshcc" "$vpy" -m pip install -q --no-cache-dir --no-build-isolation shmem4py==1.0.0
"$vpy" -m pip download -q --no-deps --no-binary :all: --no-build-isolation -d "$work/sdist" shmem4py==1.0.0
tar -xzf "$work"/sdist/shmem4py-1.0.0.tar.gz -C "$work"
tests="$work/shmem4py-1.0.0/test"
echo "python-check: shmem4py $("$vpy" -c 'import importlib.metadata as m; print(m.version("shmem4py"))')," \
    "NumPy $("$vpy" -c 'import numpy; print(numpy.__version__)'), libishmem:" \
    "$(ldd "$("$vpy" -c 'import shmem4py.api as a; print(a.__file__)')" | sed -n 's/.*libishmem[^ ]* => \([^ ]*\).*/\1/p')"

mpirun=$(command -v mpirun.openmpi || command -v mpirun || true)
fail=0
runs=0
run() { # launcher np command...
    l=$1
    n=$2
    shift 2
    log="$work/$l.$n.log"
    runs=$((runs + 1))
    set +e
    (cd "$tests" && timeout 600 "$@" "$vpy" -m unittest discover -s . >"$log" 2>&1)
    rc=$?
    set -e
    # each PE prints "Ran N tests" and "OK" (lines of several PEs may share a line)
    ok=$(grep -o 'OK' "$log" | wc -l)
    ran=$(grep -o 'Ran [0-9]* tests' "$log" | head -n 1)
    if [ "$rc" -eq 0 ] && [ "$ok" -ge "$n" ] && ! grep -q 'FAILED (' "$log"; then
        echo "python-check: PASS: $l -n $n: $ran on each of $n PEs, all OK"
    else
        echo "python-check: FAIL: $l -n $n (exit $rc; log $log):"
        grep -E '^(FAIL|ERROR):|Error|FAILED' "$log" | head -n 20
        fail=$((fail + 1))
    fi
}
for n in 1 2 4; do
    run ishmrun "$n" "$ishmrun" -n "$n"
done
if [ -n "$mpirun" ]; then
    for n in 1 2 4; do
        run mpirun "$n" "$mpirun" --allow-run-as-root --oversubscribe -np "$n"
    done
else
    echo "python-check: no OpenMPI mpirun: the mpirun runs are skipped"
fi
if [ "$fail" -ne 0 ]; then
    echo "python-check: FAILED: $fail of $runs runs"
    exit 1
fi
echo "python-check: PASSED: shmem4py's test suite in $runs runs"
