#!/bin/sh
# sanitize-check.sh asan|tsan [ctest arguments...]: the library, ishmrun and the C/C++ suite
# built with a sanitizer, then the Rust unit tests and the C suite run under it (issue 12,
# docs/RELIABILITY.md). `make check-asan` / `make check-tsan`.
#
#   asan: AddressSanitizer + LeakSanitizer + UndefinedBehaviorSanitizer. The Rust side
#         (libishmem.so, ishmrun, the unit tests) with -Zsanitizer=address, the C/C++ tests
#         with -fsanitize=address,undefined (their libasan serves the library's checks too).
#   tsan: ThreadSanitizer: the library with -Zsanitizer=thread, the C/C++ tests with
#         -fsanitize=thread; by default only the threaded tests of one node (ctest
#         -R 'threads|setup_thread3' -E 'fabric|pretend', see below).
#
# The Rust flags are unstable: they are used on the stable toolchain with RUSTC_BOOTSTRAP=1 and
# an explicit --target (so build scripts stay uninstrumented). Rust's std comes prebuilt and
# uninstrumented (no -Zbuild-std without the rust-src component): only the code of this
# repository (and the generic std code it instantiates) is checked.
#
# Every report goes to a file under build/<san>/reports (so a report inside a test that is
# expected to fail is counted too); the run passes when the tests pass and there is no report.
# Suppressions, each with its reason: tests/sanitizers/*.supp.
# Environment: SAN_CTEST_ARGS (default for asan: the whole suite but install.*; tsan: the
# threaded tests),
# SAN_SKIP_RUST=1 (no Rust unit tests), CARGO, CARGO_BUILD_JOBS.
set -u
cd "$(dirname "$0")/.."
root=$(pwd)
san=${1:-}
[ $# -gt 0 ] && shift
CARGO=${CARGO:-cargo}
target=x86_64-unknown-linux-gnu
case "$san" in
asan)
    rustflags="-Zsanitizer=address -Cforce-frame-pointers=yes"
    cflags="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
    ldflags="-fsanitize=address,undefined"
    ;;
tsan)
    # (std is prebuilt without TSan: rustc asks for -Zbuild-std; without rust-src we accept the
    # mismatch, so that races in std's own uninstrumented code are not seen)
    rustflags="-Zsanitizer=thread -Cunsafe-allow-abi-mismatch=sanitizer -Cforce-frame-pointers=yes"
    cflags="-fsanitize=thread -fno-omit-frame-pointer"
    # GCC's libtsan is older than the instrumentation rustc emits (no __tsan_memcpy): the test
    # programs are instrumented by GCC but linked with Rust's TSan runtime (exported to the
    # library), not GCC's
    rt="$(rustc --print sysroot)/lib/rustlib/$target/lib/librustc-stable_rt.tsan.a"
    ldflags="-fno-sanitize=thread -Wl,--whole-archive $rt -Wl,--no-whole-archive -Wl,--export-dynamic -lm -ldl -lpthread -lrt"
    ;;
*)
    echo "usage: scripts/sanitize-check.sh asan|tsan [ctest arguments...]" >&2
    exit 2
    ;;
esac
if [ "$(uname -m)" != x86_64 ]; then
    echo "sanitize-check: only x86_64 Linux is set up (target $target)" >&2
    exit 2
fi
for tool in "$CARGO" cmake cc c++; do
    command -v "$tool" >/dev/null 2>&1 || {
        echo "sanitize-check: $tool not found (Debian: apt-get install build-essential cmake; Rust from rustup)" >&2
        exit 2
    }
done
out=build/$san
reports=$root/$out/reports
rm -rf "$reports"
mkdir -p "$reports"
start=$(date +%s)
failed=""

echo "==== sanitize-check $san: building the library with $rustflags"
RUSTC_BOOTSTRAP=1 RUSTFLAGS="$rustflags" $CARGO build --release --workspace --target $target --target-dir target/$san ||
    { echo "sanitize-check $san: FAILED: the build"; exit 1; }
STRIP=0 scripts/install-prefix.sh "$out/prefix" target/$san/$target/release >/dev/null ||
    { echo "sanitize-check $san: FAILED: the install"; exit 1; }
cmake -S tests -B "$out/tests" -DCMAKE_PREFIX_PATH="$root/$out/prefix" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_FLAGS="$cflags" -DCMAKE_CXX_FLAGS="$cflags" -DCMAKE_EXE_LINKER_FLAGS="$ldflags" >"$reports/../cmake.log" 2>&1 ||
    { cat "$reports/../cmake.log"; echo "sanitize-check $san: FAILED: cmake"; exit 1; }
cmake --build "$out/tests" -j 2 >"$reports/../build.log" 2>&1 ||
    { tail -n 40 "$reports/../build.log"; echo "sanitize-check $san: FAILED: building the C suite"; exit 1; }

# Where the reports go, and the suppressions (each line of these files says why).
supp=$root/tests/sanitizers
export ASAN_OPTIONS="log_path=$reports/asan:detect_leaks=1:abort_on_error=0"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="log_path=$reports/ubsan:print_stacktrace=1:halt_on_error=1"
export TSAN_OPTIONS="log_path=$reports/tsan:suppressions=$supp/tsan.supp:print_suppressions=0:halt_on_error=0:second_deadlock_stack=1"

rust_line="Rust unit tests: not run (SAN_SKIP_RUST=1)"
if [ "${SAN_SKIP_RUST:-0}" != 1 ]; then
    echo "==== sanitize-check $san: Rust unit tests"
    # (only the library: ishmrun's and the generator's tests run their programs, which would
    # need the sanitizer's runtime preloaded; the library's tests are where the unsafe code is)
    RUSTC_BOOTSTRAP=1 RUSTFLAGS="$rustflags" $CARGO test --release -p ishmem --lib --target $target \
        --target-dir target/$san 2>&1 | tee "$reports/../rust.log"
    rc=$(grep -c '^test result: FAILED' "$reports/../rust.log")
    counts=$(awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
        END { printf "%d passed, %d failed", p, f }' "$reports/../rust.log")
    grep -q '^test result:' "$reports/../rust.log" || rc=1
    [ "$rc" = 0 ] || failed="$failed rust"
    rust_line="Rust unit tests: $counts"
fi

if [ $# -gt 0 ]; then
    set -- "$@"
elif [ -n "${SAN_CTEST_ARGS:-}" ]; then
    # shellcheck disable=SC2086
    set -- $SAN_CTEST_ARGS
elif [ "$san" = tsan ]; then
    # (not the runs across pretend nodes: the fabric's AMO slots are handed over through a
    # std::sync::Mutex, whose synchronization TSan cannot see in the uninstrumented std: each
    # such run gives false race reports; an instrumented std, -Zbuild-std, needs rust-src)
    set -- -R 'threads|setup_thread3' -E 'fabric|pretend'
else
    # (the install.* tests compile programs without the sanitizer's flags and check that the
    # installed library is stripped: they cannot pass against this build by construction)
    set -- -E '^install\.'
fi
echo "==== sanitize-check $san: C suite (ctest $*)"
(cd "$out/tests" && ctest --output-on-failure "$@") 2>&1 | tee "$reports/../ctest.log"
ctest_line=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$reports/../ctest.log" | tail -n 1)
case "$ctest_line" in
"") ctest_line="did not run to the end"; failed="$failed ctest" ;;
*" 0 tests failed"*) ;;
*) failed="$failed ctest" ;;
esac

# The reports: every non-empty file the sanitizers wrote.
nrep=0
for f in "$reports"/*; do
    [ -s "$f" ] || continue
    nrep=$((nrep + 1))
    echo "---- sanitizer report $f:"
    head -n 60 "$f"
done
[ "$nrep" = 0 ] || failed="$failed reports"
end=$(date +%s)

echo
echo "==== sanitize-check $san summary ($((end - start)) s)"
echo "  $rust_line"
echo "  C suite (ctest $*): $ctest_line"
echo "  sanitizer reports: $nrep (files under $out/reports)"
if [ -z "$failed" ]; then
    echo "sanitize-check $san: PASSED"
    exit 0
fi
echo "sanitize-check $san: FAILED:$failed"
exit 1
