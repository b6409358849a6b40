#!/bin/sh
# check_summary.sh <repo>: `make check`'s summary (scripts/check.sh, issue 14) with a stand-in
# make whose stages print canned output: the summary counts each stage, prints the reason of a
# skipped ctest test, and its last line is the verdict (PASSED, or FAILED naming the stage,
# with exit status 1).
set -u
repo=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/check_summary.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
cat >"$tmp/LastTest.log" <<'LOG'
267/271 Testing: abi.manifest
267/271 Test: abi.manifest
Output:
----------------------------------------------------------
SKIPPED: the API manifest /x/ishmem-api.tsv does not exist (set ISHMEM_MANIFEST)
<end of output>
LOG
cat >"$tmp/make" <<'MAKE'
#!/bin/sh
t=$2
case "$t" in
check-generated) echo "gen-ptx: current" ;;
test-rust) echo "test result: ok. 7 passed; 0 failed; 0 ignored"; echo "test result: ok. 3 passed; 0 failed; 0 ignored" ;;
test-c) printf '100%% tests passed, 0 tests failed out of 270\n\nThe following tests did not run:\n\t267 - abi.manifest (Skipped)\n'
    [ "${FAKE_FAIL:-}" = ctest ] && exit 2 ;;
test-gpu-mock) echo "mock-gpu-check: 8 passed, 0 failed" ;;
esac
exit 0
MAKE
chmod +x "$tmp/make"
# A PATH of its own (issue 12, a fresh machine): stand-ins for the tools check.sh looks for,
# and the real tools the script itself uses.
mkdir "$tmp/bin"
for t in cc c++ make cmake pkg-config cargo mpirun.openmpi mpiexec.mpich; do
    printf '#!/bin/sh\nexit 0\n' >"$tmp/bin/$t"
    chmod +x "$tmp/bin/$t"
done
for t in cat tee awk sed grep mkdir sort tr dirname rm tail head; do
    ln -s "$(command -v $t)" "$tmp/bin/$t"
done
SH=$(command -v sh)

out=$(PATH="$tmp/bin" MAKE="$tmp/make" CHECK_LOGS="$tmp/logs" CHECK_CTEST_LOG="$tmp/LastTest.log" $SH "$repo/scripts/check.sh")
st=$?
echo "$out" | sed 's/^/    /'
[ "$st" = 0 ] || bad "exit status $st for a passing run"
last=$(echo "$out" | tail -n 1)
[ "$last" = "make check: PASSED (generated files, Rust unit tests, C suite, mock GPU)" ] || bad "last line: '$last'"
echo "$out" | grep -q "^  Rust unit tests: 10 passed, 0 failed$" || bad "no Rust count"
echo "$out" | grep -q "^  C suite (ctest): 100% tests passed, 0 tests failed out of 270, 1 skipped$" || bad "no ctest count"
echo "$out" | grep -q "^    skipped abi.manifest: the API manifest /x/ishmem-api.tsv does not exist (set ISHMEM_MANIFEST)$" ||
    bad "the skip reason is not printed"
echo "$out" | grep -q "^  CUDA backend on the mock driver: 8 passed, 0 failed$" || bad "no mock GPU count"
out=$(FAKE_FAIL=ctest PATH="$tmp/bin" MAKE="$tmp/make" CHECK_LOGS="$tmp/logs" CHECK_CTEST_LOG="$tmp/LastTest.log" $SH "$repo/scripts/check.sh")
st=$?
[ "$st" = 1 ] || bad "exit status $st for a failing stage"
last=$(echo "$out" | tail -n 1)
[ "$last" = "make check: FAILED: ctest" ] || bad "last line of a failing run: '$last'"

# No OpenMPI: the rest runs, the group is shown as skipped with the reason, the verdict says so.
rm "$tmp/bin/mpirun.openmpi"
out=$(PATH="$tmp/bin" MAKE="$tmp/make" CHECK_LOGS="$tmp/logs" CHECK_CTEST_LOG="$tmp/LastTest.log" $SH "$repo/scripts/check.sh")
st=$?
[ "$st" = 0 ] || bad "exit status $st for a passing run without OpenMPI"
echo "$out" | grep -q "^    skipped launcher group openmpi (its tests are not registered): mpirun.openmpi not found (Debian/Ubuntu: apt-get install openmpi-bin)$" ||
    bad "no skip line for the openmpi group: $(echo "$out" | grep -i openmpi)"
echo "$out" | grep -q "mpich" && bad "a skip line for mpich, which is there"
last=$(echo "$out" | tail -n 1)
[ "$last" = "make check: PASSED (generated files, Rust unit tests, C suite, mock GPU; launcher groups skipped, see above)" ] ||
    bad "last line without OpenMPI: '$last'"

# No CMake and no pkg-config: one line saying what to install, at once (no stage runs).
rm "$tmp/bin/cmake" "$tmp/bin/pkg-config" "$tmp/logs"/*.log
out=$(PATH="$tmp/bin" MAKE="$tmp/make" CHECK_LOGS="$tmp/logs" CHECK_CTEST_LOG="$tmp/LastTest.log" $SH "$repo/scripts/check.sh" 2>&1)
st=$?
echo "    $out"
[ "$st" = 2 ] || bad "exit status $st without cmake"
[ "$out" = "make check: cannot run: cmake pkg-config not found; install (Debian/Ubuntu): apt-get install cmake pkg-config" ] ||
    bad "the message without cmake: '$out'"
ls "$tmp/logs"/*.log >/dev/null 2>&1 && bad "stages ran without cmake"
[ "$fail" = 0 ] && echo "PASS: make check summary"
exit $fail
