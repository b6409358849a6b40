#!/bin/sh
# expect_fail.sh [--once] [--success | --status N] [--merge] [--repeat N] [--also REGEX]...
#                [--absent REGEX]... <regex> <timeout_s> cmd [args...]
#
# Runs cmd and passes when
#   - it exits with a nonzero status (with --success: with status 0; --status N: with N),
#   - a line of its stderr matches the extended regular expression <regex>
#     (with --once: exactly one line matches),
#   - it finished within <timeout_s> seconds (it is killed 5 s after that).
# --merge: search stdout and stderr (for launchers that report on stdout).
# --repeat N: run it N times; every run must pass (for failures that show only sometimes).
# --also REGEX: a line of stdout or stderr must match REGEX too (may be given several times).
# --absent REGEX: no line of stdout or stderr may match REGEX (may be given several times).
# Prints the command's output and what was wrong on failure.
once=0
success=0
merge=0
repeat=1
want_status=""
also=""
absent=""
nl='
'
while :; do
    case "$1" in
    --once) once=1; shift ;;
    --success) success=1; shift ;;
    --status) want_status=$2; shift 2 ;;
    --merge) merge=1; shift ;;
    --repeat) repeat=$2; shift 2 ;;
    --also) also="$also$2$nl"; shift 2 ;;
    --absent) absent="$absent$2$nl"; shift 2 ;;
    *) break ;;
    esac
done
if [ $# -lt 3 ]; then
    echo "usage: expect_fail.sh [--once] [--success | --status N] [--merge] [--repeat N] [--also REGEX]... [--absent REGEX]... <regex> <timeout_s> cmd [args...]" >&2
    exit 2
fi
regex=$1
limit=$2
shift 2

tmp=$(mktemp -d "${TMPDIR:-/tmp}/expect_fail.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT

run_once() {
    start=$(date +%s%N)
    timeout -k 2 $((limit + 5)) "$@" >"$tmp/out" 2>"$tmp/err"
    status=$?
    end=$(date +%s%N)
    elapsed_ms=$(((end - start) / 1000000))

    bad=0
    msg=""
    if [ -n "$want_status" ]; then
        if [ "$status" -ne "$want_status" ]; then
            msg="$msg
EXPECT_FAIL: expected exit status $want_status, got $status"
            bad=1
        fi
    elif [ "$success" = 1 ]; then
        if [ "$status" -ne 0 ]; then
            msg="$msg
EXPECT_FAIL: expected exit status 0, got $status"
            bad=1
        fi
    elif [ "$status" -eq 0 ]; then
        msg="$msg
EXPECT_FAIL: expected a nonzero exit status, got 0"
        bad=1
    fi
    if [ "$merge" = 1 ]; then
        cat "$tmp/out" "$tmp/err" >"$tmp/search"
    else
        cp "$tmp/err" "$tmp/search"
    fi
    matches=$(grep -E -c -e "$regex" "$tmp/search")
    if [ "$matches" -eq 0 ]; then
        msg="$msg
EXPECT_FAIL: no output line matches: $regex"
        bad=1
    elif [ "$once" = 1 ] && [ "$matches" -ne 1 ]; then
        msg="$msg
EXPECT_FAIL: $matches stderr lines match (expected exactly one): $regex"
        bad=1
    fi
    if [ -n "$also" ]; then
        cat "$tmp/out" "$tmp/err" >"$tmp/all"
        printf '%s' "$also" >"$tmp/also"
        while IFS= read -r re; do
            if ! grep -E -q -e "$re" "$tmp/all"; then
                msg="$msg
EXPECT_FAIL: no output line matches: $re"
                bad=1
            fi
        done <"$tmp/also"
    fi
    if [ -n "$absent" ]; then
        cat "$tmp/out" "$tmp/err" >"$tmp/all"
        printf '%s' "$absent" >"$tmp/absent"
        while IFS= read -r re; do
            if grep -E -q -e "$re" "$tmp/all"; then
                msg="$msg
EXPECT_FAIL: an output line matches what must not appear: $re"
                bad=1
            fi
        done <"$tmp/absent"
    fi
    if [ "$elapsed_ms" -gt $((limit * 1000)) ]; then
        msg="$msg
EXPECT_FAIL: took ${elapsed_ms} ms, limit ${limit} s"
        bad=1
    fi
    return $bad
}

i=1
while [ "$i" -le "$repeat" ]; do
    run_once "$@"
    rc=$?
    if [ "$rc" -ne 0 ] || [ "$i" -eq "$repeat" ]; then
        echo "---- command: $*"
        [ "$repeat" -gt 1 ] && echo "---- run $i of $repeat"
        echo "---- exit status $status after ${elapsed_ms} ms"
        echo "---- stdout:"
        cat "$tmp/out"
        echo "---- stderr:"
        cat "$tmp/err"
        echo "----$msg"
    fi
    if [ "$rc" -ne 0 ]; then
        exit 1
    fi
    i=$((i + 1))
done
echo "EXPECT_OK: status $status, output matches, ${elapsed_ms} ms <= ${limit} s ($repeat run(s))"
exit 0
