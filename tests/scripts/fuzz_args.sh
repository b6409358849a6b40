#!/bin/sh
# fuzz_args.sh [-n JOBS] [-s FIRST_SEED] PROGRAM LAUNCHER [ARGS...]: runs `LAUNCHER ARGS...
# PROGRAM SEED` for JOBS seeds in a row (tests/c/fuzz_args.c: each job one call with a random
# invalid argument) and checks each job:
#   - it ends with a nonzero status, not by a signal (no status >= 128, no "signal",
#     "Segmentation", "core dumped", "panicked" or sanitizer line in its output),
#   - a line "[PE n] ERROR: <function>: ..." names the PE and the function that the program
#     announced ("FUZZ: [PE n] <function>: <what>"),
#   - no "FAIL: " line (a bad call that returned, or a barrier that did), no hang (60 s).
# Each job's time is measured and reported (median, max, how many took 5 s or more): the
# issue's bound, reported, not asserted. The last line is "<n> passed, <m> failed".
set -u
jobs=20
seed=1
while :; do
    case "${1:-}" in
    -n) jobs=$2; shift 2 ;;
    -s) seed=$2; shift 2 ;;
    *) break ;;
    esac
done
if [ $# -lt 2 ]; then
    echo "usage: fuzz_args.sh [-n JOBS] [-s FIRST_SEED] PROGRAM LAUNCHER [ARGS...]" >&2
    exit 2
fi
prog=$1
shift
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fuzz_args.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
over=0
: >"$tmp/times"
: >"$tmp/funcs"
i=0
while [ "$i" -lt "$jobs" ]; do
    s=$((seed + i))
    i=$((i + 1))
    t0=$(date +%s%N)
    timeout -k 2 60 "$@" "$prog" "$s" >"$tmp/out" 2>&1
    st=$?
    t1=$(date +%s%N)
    ms=$(((t1 - t0) / 1000000))
    echo "$ms" >>"$tmp/times"
    [ "$ms" -ge 5000 ] && over=$((over + 1))
    why=""
    fuzz=$(grep -m 1 '^FUZZ: \[PE [0-9]*\] ' "$tmp/out")
    pe=$(echo "$fuzz" | sed -n 's/^FUZZ: \[PE \([0-9]*\)\] \([a-z0-9_]*\): .*/\1/p')
    func=$(echo "$fuzz" | sed -n 's/^FUZZ: \[PE \([0-9]*\)\] \([a-z0-9_]*\): .*/\2/p')
    if [ -z "$func" ]; then
        why="$why; no FUZZ line (the program did not reach its bad call)"
    elif ! grep -q -E "^\[PE $pe\] ERROR: $func: " "$tmp/out"; then
        why="$why; no line '[PE $pe] ERROR: $func: ...'"
    fi
    [ "$st" = 0 ] && why="$why; exit status 0"
    [ "$st" -ge 124 ] && why="$why; exit status $st (timeout or signal)"
    if grep -q -E 'killed by signal|Segmentation fault|core dumped|panicked|Sanitizer|runtime error|signal [0-9]+ \(SIG' "$tmp/out"; then
        why="$why; a crash line: $(grep -m 1 -E 'killed by signal|Segmentation fault|core dumped|panicked|Sanitizer|runtime error|signal [0-9]+ \(SIG' "$tmp/out")"
    fi
    grep -q 'FAIL: ' "$tmp/out" && why="$why; $(grep -m 1 'FAIL: ' "$tmp/out")"
    if [ -z "$why" ]; then
        pass=$((pass + 1))
        echo "$func" >>"$tmp/funcs"
        echo "ok   seed $s: ${fuzz#FUZZ: } (status $st, $ms ms)"
    else
        fail=$((fail + 1))
        echo "FAIL: seed $s: ${why#; } ($ms ms)"
        echo "---- command: $* $prog $s"
        sed 's/^/    /' "$tmp/out"
    fi
done
med=$(sort -n "$tmp/times" | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
max=$(sort -n "$tmp/times" | tail -n 1)
nf=$(sort -u "$tmp/funcs" | grep -c .)
echo "fuzz_args: $jobs jobs (seeds $seed..$((seed + jobs - 1))) under $1: $nf functions hit; time per job median $med ms, max $max ms, $over of 5 s or more"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
