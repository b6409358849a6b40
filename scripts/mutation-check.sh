#!/bin/sh
# make check-mutations (issue 26): proves that the suite notices when a semantic is missing.
# Builds libishmem variants ("mutants") with one semantic removed each (build.rs `mutation`,
# ISHMEM_MUTATION=<name>, the `#[cfg(ishmem_mutation = "<name>")]` sites), runs the tests that
# claim to cover that semantic against each (the C suite's programs, built once against the
# real library in build/tests, load the mutant through LD_LIBRARY_PATH; the GPU proxy's mutant
# runs scripts/mock-gpu-check.sh's programs), and fails unless every mutant is killed (at least
# one of its tests fails) in every setting it is listed for: one node, and across 2 pretend
# nodes (ISHMEM_NODE_SPLIT=2, tcp;ofi_rxm on loopback). The same tests must pass on the real
# library first. Every named test must exist and be seen to run (its own output, not the
# phase's log); a name that matches nothing fails the check. The table of mutations and
# killing tests is in docs/RELIABILITY.md.
#   scripts/mutation-check.sh              every mutant
#   scripts/mutation-check.sh NAME...      those mutants only
#   MUTATION_REUSE=1 scripts/mutation-check.sh NAME...
#                                          a mutant's library of an earlier run is used again
#                                          where it is newer than every source file of the
#                                          library (src, build.rs, Cargo.*): tests changed, the
#                                          library not (e.g. a weakened test, docs/RELIABILITY.md)
# Logs: build/mutants/<mutant>.<setting>.log. Needs cargo, cmake, cc (make check's tools).
set -eu
cd "$(dirname "$0")/.."
ROOT=$PWD
B=$ROOT/build/mutants
CARGO=${CARGO:-cargo}
mkdir -p "$B"

# name|setting|tests: a setting is "node" (one node) or "nodes" (2 pretend nodes, or the mock
# GPU across them for mock:...); tests are ctest names (tried in order, the first failure kills
# the mutant), mock:<mock-gpu-check run name>, or rust:<a unit test's path in the library>
# (cargo test, built with the mutation; for semantics whose failure only a test that stops a
# peer on purpose can show, such as the fabric's quiet while the target makes no progress). A
# mutant without a "node" row changes nothing on one node (see docs/RELIABILITY.md).
TABLE='dc_put_counted_at_post|nodes|rust:transport::fabric::tests::quiet_is_delivery_tcp
quiet_noop|nodes|order_mut.fabric_tcp.ishmrun.4 order_mut.fabric_tcp_staged.ishmrun.4
fence_noop|nodes|order_mut.fabric_tcp_staged.ishmrun.4 order_mut.fabric_tcp.ishmrun.4 order_mut.fabric_tcp.amo_net.ishmrun.4
get_nbi_early|nodes|order_mut.fabric_tcp.ishmrun.4 rma.fabric_tcp.ishmrun.4
amo_drop|node|amo.ishmrun.4 order_mut.ishmrun.4
amo_drop|nodes|amo.fabric_tcp.ishmrun.4 order_mut.fabric_tcp.ishmrun.4
barrier_noop|node|order.ishmrun.4 p2p.ishmrun.4
barrier_noop|nodes|order.fabric_tcp.ishmrun.4 p2p.fabric_tcp.ishmrun.4
signal_first|node|order_mut.ishmrun.4 signal.ishmrun.4
signal_first|nodes|order_mut.fabric_tcp.ishmrun.4 signal.fabric_tcp.ishmrun.4
wait_early|node|p2p.ishmrun.4 order_mut.ishmrun.4
wait_early|nodes|p2p.fabric_tcp.ishmrun.4 order_mut.fabric_tcp.ishmrun.4
team_sync_skip|node|order_mut.ishmrun.4 team.ishmrun.4
team_sync_skip|nodes|order_mut.fabric_tcp.ishmrun.4 team.fabric_tcp.ishmrun.4
tree_skip_child|nodes|coll_tree.fabric_tcp.ishmrun.5 coll_tree_all.fabric_tcp.ishmrun.8
tree_scan_prefix|nodes|coll_tree.fabric_tcp.ishmrun.5 coll_tree.fabric_tcp.ishmrun.8
relay_class_flag|nodes|coll_storm.fabric_tcp.ishmrun.4 coll.fabric_tcp.ishmrun.4
reduce_chunk_src|nodes|coll.fabric_tcp.ishmrun.2 coll.fabric_tcp.ishmrun.4
reduce_scatter_slice|nodes|coll.fabric_tcp.ishmrun.4 coll_small_scratch.fabric_tcp.ishmrun.4 coll.fabric_tcp.ishmrun.3
net_scratch_fixed|nodes|coll_small_scratch.fabric_tcp.ishmrun.4
bcast_relay_early|nodes|coll_storm.fabric_tcp.ishmrun.4 coll.fabric_tcp.ishmrun.4 coll_tree.fabric_tcp.ishmrun.8
proxy_quiet_noop|nodes|mock:proxy_quiet_stopped.fabric.4pe mock:proxy_quiet.fabric.4pe
proxy_serve_off|nodes|mock:proxy_serve.fabric.2pe
ctx_quiet_noop|nodes|ctx_quiet.fabric_tcp.ishmrun.4
ctx_quiet_global|nodes|ctx_quiet.fabric_tcp.ishmrun.4
shm_checks_off|node|security.shm_names.ishmrun.2 security.shm_checks.openmpi_env.2
shm_names_from_key|node|security.shm_names.mpich.2 security.shm_names.ishmrun.2'

want=${*:-$(echo "$TABLE" | cut -d'|' -f1 | uniq)}
for m in $want; do
    echo "$TABLE" | grep -q "^$m|" || { echo "mutation-check: unknown mutant '$m'" >&2; exit 2; }
done

# The suite's programs, against the real library (make test-c-build), and the mock GPU's.
echo "mutation-check: building the real library and the test programs"
${MAKE:-make} -s test-c-build >"$B/build.log" 2>&1 || { tail -n 30 "$B/build.log"; exit 1; }
# Each test's own output goes to $B/one.out first (then to $LOG), and only that output is
# judged: a test counts as run only where its own output says so (ctest: "... out of 1", one
# test matched and run; the mock check: its "mock-gpu-check: NAME: ok|FAILED" line). A name
# that matches no test, or matches but did not run, is "!missing:NAME", never a pass or a kill.
ONE=$B/one.out
ran() { # test: did the output in $ONE run exactly that one test?
    case "$1" in
    mock:*) grep -qE "^mock-gpu-check: ${1#mock:}: (ok|FAILED)" "$ONE" ;;
    rust:*) grep -qE "^test result: (ok|FAILED)\. [01] passed; [01] failed" "$ONE" && grep -qxF "running 1 test" "$ONE" ;;
    *) grep -qE "^[0-9]+% tests passed, [01] tests? failed out of 1\$" "$ONE" && ! grep -q "No tests were found" "$ONE" ;;
    esac
}
ctest_of() { # tests... : runs them one at a time in build/tests, stops at the first failure
    for t in "$@"; do
        rc=0
        case "$t" in
        mock:*)
            MOCK_GPU_ONLY=${t#mock:} MOCK_GPU_BUILD=$LIBDIR sh scripts/mock-gpu-check.sh >"$ONE" 2>&1 || rc=$?
            ;;
        rust:*)
            # The library's unit test, built with the mutation MUT (none: the real library).
            if [ -n "$MUT" ]; then
                ISHMEM_MUTATION=$MUT CARGO_TARGET_DIR=$B/target $CARGO test --release -p ishmem --lib -- --exact "${t#rust:}" >"$ONE" 2>&1 || rc=$?
            else
                $CARGO test --release -p ishmem --lib -- --exact "${t#rust:}" >"$ONE" 2>&1 || rc=$?
            fi
            ;;
        *)
            (cd build/tests && ctest -R "^$(echo "$t" | sed 's/\./\\./g')\$" --output-on-failure) >"$ONE" 2>&1 || rc=$?
            ;;
        esac
        cat "$ONE" >>"$LOG"
        if ! ran "$t"; then
            echo "!missing:$t"
            return 0
        fi
        if [ "$rc" != 0 ]; then
            echo "$t"
            return 0
        fi
        echo "$t" >>"$LOG.ran"
    done
}

all=$(echo "$TABLE" | grep -E "^($(echo $want | tr ' ' '|'))\|" | cut -d'|' -f3 | tr ' ' '\n' | sort -u)
# Every named test exists: a ctest name in build/tests' list, a mock name a run of the mock check.
(cd build/tests && ctest -N) >"$B/ctest-names" 2>&1
for t in $all; do
    case "$t" in
    mock:*) grep -qE "^ *(run|expect_fail) \"?${t#mock:}\"? " scripts/mock-gpu-check.sh ;;
    rust:*) grep -rqE "^ *fn ${t##*::}\(\)" src ;;
    *) grep -qE "^ *Test +#[0-9]+: $(echo "$t" | sed 's/\./\\./g')\$" "$B/ctest-names" ;;
    esac || { echo "mutation-check: FAILED: no test is named $t (ctest -N in build/tests, scripts/mock-gpu-check.sh)"; exit 1; }
done

# Baseline: every listed test passes with the real library (else a kill means nothing).
LIBDIR=$ROOT/target/release
MUT=
LOG=$B/real.log
: >"$LOG"
: >"$LOG.ran"
echo "mutation-check: the real library against the $(echo "$all" | wc -l) tests"
# A test that fails here is run once more alone (on a loaded machine a job may pass its
# launcher's timeout); a second failure ends the check.
left=$all
while :; do
    # shellcheck disable=SC2086
    f=$(LD_LIBRARY_PATH= ctest_of $left)
    [ -n "$f" ] || break
    case "$f" in '!missing:'*) echo "mutation-check: FAILED: ${f#!missing:} did not run (log: $LOG)"; exit 1 ;; esac
    if [ -n "$(LD_LIBRARY_PATH= ctest_of "$f")" ]; then
        echo "mutation-check: FAILED: $f fails on the real library, twice (log: $LOG)"
        exit 1
    fi
    echo "mutation-check: $f failed on the real library once and passed when run again (log: $LOG)"
    left=$(echo "$left" | sed "1,/^$(echo "$f" | sed 's/\./\\./g')\$/d")
done
for t in $all; do
    grep -qxF "$t" "$LOG.ran" || { echo "mutation-check: FAILED: $t did not pass on the real library (log: $LOG)"; exit 1; }
done
missing() { case "$1" in '!missing:'*) echo "mutation-check: FAILED: ${1#!missing:} did not run (log: $LOG)"; exit 1 ;; esac; }

survived=""
killed=0
for m in $want; do
    T=$B/target
    # its own directory: the soname's file, and the name the mock check installs from
    LIBDIR=$B/lib-$m
    MUT=$m
    if [ "${MUTATION_REUSE:-0}" = 1 ] && [ -f "$LIBDIR/libishmem.so" ] &&
        [ -z "$(find src build.rs Cargo.toml Cargo.lock -newer "$LIBDIR/libishmem.so" | head -n 1)" ]; then
        echo "mutation-check: the mutant $m of $LIBDIR (MUTATION_REUSE=1: built after every source file)"
    else
        echo "mutation-check: building the mutant $m"
        if ! ISHMEM_MUTATION=$m CARGO_TARGET_DIR=$T $CARGO build --release -p ishmem >"$B/$m.build.log" 2>&1; then
            tail -n 30 "$B/$m.build.log"
            exit 1
        fi
        rm -rf "$LIBDIR"
        mkdir -p "$LIBDIR"
        cp "$T/release/libishmem.so" "$LIBDIR/libishmem.so"
        ln -s libishmem.so "$LIBDIR/libishmem.so.1"
        cp "$ROOT/target/release/ishmrun" "$T/release/ishmem-info" "$LIBDIR/"
    fi
    grep -q "ishmem-mutant: $m" "$LIBDIR/libishmem.so" || {
        echo "mutation-check: $LIBDIR/libishmem.so does not carry the mutation $m" >&2; exit 1; }
    LD_LIBRARY_PATH=$LIBDIR ldd build/tests/order_mut | grep -q "$LIBDIR/libishmem.so.1" || {
        echo "mutation-check: the test programs do not load $LIBDIR/libishmem.so.1" >&2; exit 1; }
    for setting in node nodes; do
        tests=$(echo "$TABLE" | grep "^$m|$setting|" | cut -d'|' -f3)
        [ -n "$tests" ] || continue
        LOG=$B/$m.$setting.log
        : >"$LOG"
        : >"$LOG.ran"
        # shellcheck disable=SC2086
        by=$(LD_LIBRARY_PATH=$LIBDIR ctest_of $tests)
        missing "$by"
        if [ -n "$by" ]; then
            killed=$((killed + 1))
            # the killing test's first complaint (its output is the last in $ONE)
            why=$(grep -v -e "Test *#[0-9]" -e "^---- command" "$ONE" >"$ONE.why" || true
                { grep -m 1 -E "^FAIL|\] ERROR|DEADLOCK" "$ONE.why" || grep -m 1 -E "FAIL|ERROR|[Tt]imeout|^ishmrun: " "$ONE.why"; } |
                sed "s|$ROOT/||g" | cut -c 1-300 || true)
            echo "mutation-check: $m ($setting): killed by $by${why:+: $why}"
        else
            for t in $tests; do
                grep -qxF "$t" "$LOG.ran" || { echo "mutation-check: FAILED: $t did not run against $m (log: $LOG)"; exit 1; }
            done
            survived="$survived $m($setting)"
            echo "mutation-check: $m ($setting): SURVIVED $tests (log: $LOG)"
        fi
    done
done
if [ -n "$survived" ]; then
    echo "mutation-check: FAILED: survived:$survived ($killed killed)"
    exit 1
fi
echo "mutation-check: PASSED: every mutant killed ($killed mutant/setting pairs)"
