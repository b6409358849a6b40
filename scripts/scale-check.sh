#!/usr/bin/env bash
# scale-check.sh: the functional suite's host tests and the scale measurements at 16, 32 and 64
# PEs across 8, 16 and 32 pretend nodes (issue 29; `make check-scale`, not part of `make check`).
#
#   scripts/scale-check.sh [test|measure|all]     (default all)
#
# test:    each program of SCALE_PROGS (RMA, AMO, signals, waits, teams, collectives) at each
#          size of SCALE_SIZES (NP:NODES), under each launcher of SCALE_LAUNCHERS:
#            ishmrun   ishmrun -n NP, ISHMEM_NODE_SPLIT=NODES
#            srun      srun --mpi=pmix -n NP on the suite's private one-node Slurm
#                      (tests/scripts/slurm.sh, started here and stopped at the end; root only,
#                      else skipped with the reason), ISHMEM_NODE_SPLIT=NODES
#          Nodes are pretend nodes of consecutive PEs (2 PEs each), reached over tcp;ofi_rxm on
#          loopback. Each run must exit 0 and print "PASS: <prog> (<NP> PEs)".
# measure: bench/scale.c (built here with the installed ishmemcc) under ishmrun at each size:
#          init and finalize time, RSS, fds, threads, TCP connections, the library's footprint
#          line (ISHMEM_INFO=1: registered memory, address vector, team areas, liveness
#          connections), barrier_all / broadcast / sum_reduce / fcollect 8 B latency, each the
#          maximum over the PEs. Results: build/scale/results.csv (one row per size) and the
#          logs beside it; plots: bench/scale_plot.py build/scale/results.csv docs/scaling.
#
# Environment: PREFIX (default build/prefix: `make install` first), SCALE_SIZES (default
# "16:8 32:16 64:32"), SCALE_PROGS (default "rma amo signal p2p team coll"), SCALE_LAUNCHERS
# (default "ishmrun srun"), SCALE_TIMEOUT (seconds per run of 16 PEs, scaled with NP; default
# 600), SCALE_ITERS (bench iterations, default 50), SCALE_OUT (default build/scale).
# Time-slicing many PEs on few cores makes these runs slow: ISHMEM_BOOTSTRAP_TIMEOUT is raised
# to 600 s (the default 60 s counts every PE's start, which takes minutes at 64 PEs on 2 busy
# cores); nothing else is changed. Exit status: 0 when every run passed, 1 otherwise.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:-all}
PREFIX=${PREFIX:-$root/build/prefix}
SIZES=${SCALE_SIZES:-"16:8 32:16 64:32"}
PROGS=${SCALE_PROGS:-"rma amo signal p2p team coll"}
LAUNCHERS=${SCALE_LAUNCHERS:-"ishmrun srun"}
T16=${SCALE_TIMEOUT:-600}
ITERS=${SCALE_ITERS:-50}
OUT=${SCALE_OUT:-$root/build/scale}
TESTS=$root/build/tests
SCRIPTS=$root/tests/scripts
mkdir -p "$OUT"
export ISHMEM_BOOTSTRAP_TIMEOUT=600 FI_TCP_IFACE=lo "ISHMEM_OFI_PROVIDER=tcp;ofi_rxm" ISHMEM_GPU=0
failures=()
passes=0
skips=()

case "$mode" in test | measure | all) ;; *) echo "usage: scale-check.sh [test|measure|all]" >&2; exit 2 ;; esac
[ -x "$PREFIX/bin/ishmrun" ] || { echo "scale-check.sh: $PREFIX/bin/ishmrun missing: make install" >&2; exit 2; }

slurm_dir=""
stop_slurm() { [ -z "$slurm_dir" ] || "$SCRIPTS/slurm.sh" down "$slurm_dir" >/dev/null 2>&1 || true; }
trap stop_slurm EXIT

# run NAME NP TIMEOUT LOG cmd...: runs cmd, records pass/fail by its status and PASS line.
run_one() {
    local name=$1 np=$2 to=$3 log=$4 prog=$5
    shift 5
    local t0 s
    t0=$(date +%s.%N)
    timeout -k 20 "$to" "$@" >"$log" 2>&1
    s=$?
    local dt
    dt=$(echo "$(date +%s.%N) - $t0" | bc)
    if [ "$s" = 0 ] && grep -q "^PASS: $prog ($np PEs)$" "$log" && ! grep -q "FAIL: " "$log"; then
        printf 'PASS %-28s %7.1f s\n' "$name" "$dt"
        passes=$((passes + 1))
    else
        printf 'FAIL %-28s %7.1f s (status %s; log %s)\n' "$name" "$dt" "$s" "$log"
        grep -m 5 -E "ERROR|FAIL|error" "$log" | sed 's/^/    /'
        failures+=("$name")
    fi
}

if [ "$mode" != measure ]; then
    for p in $PROGS; do
        [ -x "$TESTS/$p" ] || { echo "scale-check.sh: $TESTS/$p missing: make test-c-build" >&2; exit 2; }
    done
    for l in $LAUNCHERS; do
        if [ "$l" = srun ]; then
            slurm_dir=/tmp/ishmem-slurm-scale-$$
            msg=$("$SCRIPTS/slurm.sh" up "$slurm_dir" 2>&1)
            st=$?
            if [ "$st" = 77 ]; then
                skips+=("srun: $(echo "$msg" | grep skipped | head -1)")
                slurm_dir=""
                continue
            elif [ "$st" != 0 ]; then
                echo "$msg" | tail -5
                failures+=("slurm.up")
                slurm_dir=""
                continue
            fi
            export SLURM_CONF=$slurm_dir/etc/slurm.conf
        fi
        for sz in $SIZES; do
            np=${sz%%:*} nodes=${sz##*:}
            to=$((T16 * np / 16))
            for p in $PROGS; do
                name="$p.$l.$np.nodes$nodes"
                if [ "$l" = ishmrun ]; then
                    run_one "$name" "$np" "$((to + 30))" "$OUT/$name.log" "$p" env ISHMEM_NODE_SPLIT="$nodes" \
                        "$PREFIX/bin/ishmrun" --timeout "$to" -n "$np" "$TESTS/$p"
                else
                    run_one "$name" "$np" "$to" "$OUT/$name.log" "$p" env ISHMEM_NODE_SPLIT="$nodes" \
                        "$SCRIPTS/srun-local.sh" pmix "$np" "$TESTS/$p"
                fi
            done
        done
        if [ "$l" = srun ]; then stop_slurm; slurm_dir=""; fi
    done
fi

if [ "$mode" != test ]; then
    "$PREFIX/bin/ishmemcc" -O2 -Wall -Wextra -Werror -o "$OUT/scale" "$root/bench/scale.c" || exit 1
    csv=$OUT/results.csv
    keys="init_s rss_init_kib rss_after_kib fds fds_after sockets tcp_conns tcp_conns_after threads threads_after barrier_all_us broadcast8_us sum_reduce8_us fcollect8_us"
    fkeys="registered_bytes registered_regions av_entries av_name_bytes team_area_bytes live_conns"
    echo "npes,nodes,$(echo $keys | tr ' ' ,),finalize_s,$(echo $fkeys | tr ' ' ,),wall_s" >"$csv"
    for sz in $SIZES; do
        np=${sz%%:*} nodes=${sz##*:}
        to=$((T16 * np / 16))
        log=$OUT/measure.$np.log
        t0=$(date +%s.%N)
        cmd=(env ISHMEM_INFO=1 ISHMEM_NODE_SPLIT="$nodes" "$PREFIX/bin/ishmrun" --timeout "$to" -n "$np" "$OUT/scale" "$ITERS")
        echo "+ ${cmd[*]}" >"$log"
        timeout -k 20 "$((to + 30))" "${cmd[@]}" >>"$log" 2>&1
        s=$?
        wall=$(echo "$(date +%s.%N) - $t0" | bc)
        if [ "$s" != 0 ] || ! grep -q "^SCALE failed max 0$" "$log"; then
            printf 'FAIL measure.%s (status %s; log %s)\n' "$np" "$s" "$log"
            failures+=("measure.$np")
            continue
        fi
        row="$np,$nodes"
        for k in $keys; do row="$row,$(awk -v k="$k" '$1 == "SCALE" && $2 == k { print $4 }' "$log")"; done
        row="$row,$(awk '$1 == "SCALE_FIN" && $3 > m { m = $3 } END { printf "%.3f", m }' "$log")"
        for k in $fkeys; do row="$row,$(grep -o "footprint:.*" "$log" | head -1 | tr ' ;,' '\n\n\n' | awk -F= -v k="$k" '$1 == k { print $2 }')"; done
        row="$row,$wall"
        echo "$row" >>"$csv"
        printf 'PASS measure.%-20s %7.1f s\n' "$np" "$wall"
        passes=$((passes + 1))
    done
    echo "results: $csv"
    column -s, -t "$csv"
fi

for s in "${skips[@]}"; do echo "skipped: $s"; done
if [ ${#failures[@]} -gt 0 ]; then
    echo "check-scale: FAILED (${#failures[@]} of $((passes + ${#failures[@]}))): ${failures[*]}"
    exit 1
fi
echo "check-scale: PASSED ($passes runs)"
