#!/bin/sh
# `make check`: runs every stage (generated files, Rust unit tests, the C suite under ctest, the
# CUDA backend on a mock driver) even when one fails, and ends with one summary: a line per
# stage with its counts, the reason of every skipped ctest test, and the total as the last
# line, `make check: PASSED (...)` or `make check: FAILED (...)`. Exit status 0 only when every
# stage passed. Each stage's output is also kept in build/check/<stage>.log.
#   scripts/check.sh        (MAKE, CTEST_ARGS as in the Makefile; CHECK_LOGS and CHECK_CTEST_LOG
#                            move the logs, for tests/scripts/check_summary.sh)
set -u
cd "$(dirname "$0")/.."
MAKE=${MAKE:-make}
LOGS=${CHECK_LOGS:-build/check}
CTEST_LOG=${CHECK_CTEST_LOG:-build/tests/Testing/Temporary/LastTest.log}
failed=""
summary=""
add() { summary="$summary$1
"; }

# What a fresh machine may lack (issue 12): without the tools every stage needs, stop at once
# with one line saying what to install; without a launcher, run the rest and show its group as
# skipped (tests/CMakeLists.txt registers no test for a launcher it does not find).
missing=""
pkgs=""
need() { command -v "$1" >/dev/null 2>&1 || { missing="$missing $1"; pkgs="$pkgs $2"; }; }
need cc build-essential
need c++ build-essential
need make build-essential
need cmake cmake
need pkg-config pkg-config
if [ -n "$missing" ]; then
    pkgs=$(printf '%s\n' $pkgs | sort -u | tr '\n' ' ')
    echo "make check: cannot run:$missing not found; install (Debian/Ubuntu): apt-get install ${pkgs% }" >&2
    exit 2
fi
if ! command -v "${CARGO:-cargo}" >/dev/null 2>&1; then
    echo "make check: cannot run: cargo not found: install Rust >= 1.87 (https://rustup.rs, or Debian: apt-get install cargo)" >&2
    exit 2
fi
launcher_skips=""
for l in "mpirun.openmpi openmpi openmpi-bin" "mpiexec.mpich mpich mpich"; do
    set -- $l
    command -v "$1" >/dev/null 2>&1 ||
        launcher_skips="$launcher_skips    skipped launcher group $2 (its tests are not registered): $1 not found (Debian/Ubuntu: apt-get install $3)
"
done
mkdir -p "$LOGS"

# stage NAME TARGET: runs `make TARGET`, output to the screen and to build/check/NAME.log;
# sets $rc.
stage() {
    echo "==== make $2"
    # (the status of make, not of tee)
    { $MAKE --no-print-directory "$2" 2>&1; echo $? >"$LOGS/$1.rc"; } | tee "$LOGS/$1.log"
    rc=$(cat "$LOGS/$1.rc")
    [ "$rc" = 0 ] || failed="$failed $1"
}

stage generated check-generated
if [ "$rc" = 0 ]; then add "  generated files: current"; else add "  generated files: FAILED (see $LOGS/generated.log)"; fi

stage rust test-rust
counts=$(awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
    END { printf "%d passed, %d failed", p, f }' "$LOGS/rust.log")
if [ "$rc" = 0 ]; then add "  Rust unit tests: $counts"; else add "  Rust unit tests: FAILED ($counts; see $LOGS/rust.log)"; fi

stage ctest test-c
total=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$LOGS/ctest.log" | tail -n 1)
skipped=$(sed -n 's/^[[:space:]]*[0-9]* - \(.*\) (Skipped)$/\1/p' "$LOGS/ctest.log")
nskip=$(printf '%s' "$skipped" | grep -c . || true)
if [ -n "$total" ]; then
    line="  C suite (ctest): $total, $nskip skipped"
else
    line="  C suite (ctest): did not run to the end (see $LOGS/ctest.log)"
fi
[ "$rc" = 0 ] || line="$line: FAILED"
add "$line"
# the reason each skipped test gave (its SKIPPED: line in ctest's log)
if [ -n "$skipped" ] && [ -f "$CTEST_LOG" ]; then
    for t in $skipped; do
        why=$(awk -v t="$t" '/^[0-9]+\/[0-9]+ Test: / { cur = $3 } cur == t && /^SKIPPED: / { sub(/^SKIPPED: /, ""); print; exit }' \
            "$CTEST_LOG")
        add "    skipped $t: ${why:-no reason given}"
    done
fi

[ -n "$launcher_skips" ] && summary="$summary$launcher_skips"

stage gpu-mock test-gpu-mock
counts=$(sed -n 's/^mock-gpu-check: \([0-9]* passed, [0-9]* failed\)$/\1/p' "$LOGS/gpu-mock.log" | tail -n 1)
if [ "$rc" = 0 ]; then add "  CUDA backend on the mock driver: ${counts:-ok}"; else add "  CUDA backend on the mock driver: FAILED (${counts:-see $LOGS/gpu-mock.log})"; fi

echo
echo "==== make check summary"
printf '%s' "$summary"
if [ -z "$failed" ]; then
    if [ -n "$launcher_skips" ]; then
        echo "make check: PASSED (generated files, Rust unit tests, C suite, mock GPU; launcher groups skipped, see above)"
    else
        echo "make check: PASSED (generated files, Rust unit tests, C suite, mock GPU)"
    fi
    exit 0
fi
echo "make check: FAILED:$failed"
exit 1
