#!/usr/bin/env bash
# The progress line of long work (common/vt_progress.h), as a person and as
# a log see it: each command run under a pseudo-terminal (script(1), from
# util-linux) shows "LABEL: DONE/TOTAL UNIT, RATE UNIT/s, ... left" and
# ends with a line that says how long it took; with --quiet it shows none;
# with stderr a file (no terminal) stderr stays empty.
# usage: tests/progress.sh BINDIR SOURCE_DIR
set -uo pipefail
vt=$(cd "$1" && pwd)/vt
src=$(cd "$2" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
fail=0
bad() {
    echo "progress: FAIL: $*" >&2
    fail=1
}
# on_tty NAME CMD...: CMD's output under a pseudo-terminal into NAME.tty
on_tty() {
    local name=$1
    shift
    script -qec "$(printf '%q ' "$@")" /dev/null > "$name.tty" 2>&1 < /dev/null
}
# expect NAME LABEL TOTALPATTERN: the first and the last line of LABEL's progress
expect() {
    grep -aq "$2: 0$3" "$1.tty" || bad "$1: no first progress line '$2: 0$3': $(tr '\r' '\n' < "$1.tty" | head -3)"
    grep -aqE "$2: [0-9]+$3.*took [0-9]+:[0-9]{2}" "$1.tty" ||
        bad "$1: no last progress line '$2: N$3 ..., took M:SS': $(tr '\r' '\n' < "$1.tty" | tail -3)"
}
# quiet NAME LABEL: a run that must show no progress of LABEL
quiet() {
    ! grep -aq "$2:.*/s" "$1" || bad "$1: a progress line of '$2' where none was wanted: $(head -c 300 "$1")"
}

command -v script > /dev/null || { echo "progress: FAIL: script(1) missing (util-linux)" >&2; exit 1; }
on_tty fixture "$vt" fixture make --preset tiny --weights Q8_0 -o t.gguf
expect fixture "vt fixture make" " tensors"
head -4 "$src/fixtures/prompts/default16.jsonl" > p.jsonl
cap=(--runner engine --model t.gguf --prompts p.jsonl --repetitions 3 --max-tokens 8 --no-timestamp)
mkdir tty quiet log
on_tty capture "$vt" capture "${cap[@]}" --out tty/c.json
expect capture vt-capture "/12 runs"
on_tty capture-quiet "$vt" capture "${cap[@]}" --out quiet/c.json --quiet
quiet capture-quiet.tty vt-capture
"$vt" capture "${cap[@]}" --out log/c.json > /dev/null 2> capture-log.err
[ -s capture-log.err ] && bad "capture without a terminal wrote to stderr: $(head -c 300 capture-log.err)"
cmp -s tty/c.json log/c.json || bad "the capture under a terminal differs from the one without"
mkdir ev && cp tty/c.json tty/c.topk ev/
on_tty seal "$vt" seal create ev -o ev.tar.gz
expect seal "vt-seal create" "/2 members"
on_tty verify "$vt" seal verify ev.tar.gz
expect verify "vt-seal verify" "/2 members"
"$vt" seal verify ev.tar.gz > /dev/null 2> verify-log.err
[ -s verify-log.err ] && bad "seal verify without a terminal wrote to stderr: $(head -c 300 verify-log.err)"
on_tty codec "$vt" codec check --types Q8_0,Q4_K --rows 64
expect codec "vt codec check" "/2 types"
on_tty codec-quiet "$vt" codec check --types Q8_0 --rows 64 --quiet
quiet codec-quiet.tty "vt codec check"
[ $fail = 0 ] && echo "progress: OK: fixture make, capture, seal create and verify, codec check under a terminal;" \
    "none with --quiet or without a terminal"
exit $fail
