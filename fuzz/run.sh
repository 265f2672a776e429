#!/usr/bin/env bash
# make fuzz SECONDS=N: every fuzz target (libFuzzer, ASan + UBSan, built in
# BUILD by the Makefile) for N seconds, two at a time (2 cores), each from
# its kept corpus (fuzz/corpus/T, read only), fresh seeds where make fuzz
# made them (BUILD/seeds/T, fuzz/make_corpus.sh) and what earlier runs here
# found (BUILD/corpus/T, where new inputs go). One line per target:
# executions, seconds (measured), result. A crash, a leak, a hang (an input
# running over 10 s) or a memory blow-up (over 2 GiB) fails it, its input
# saved under BUILD/artifacts/T/; that input then goes into
# fuzz/regressions/T/, which make test replays. A run stopped by a signal
# (libFuzzer's exit 72) fails too, told apart. Appends each run to
# BUILD/fuzz-runs.tsv (the totals in docs/fuzz.md come from there).
# usage: fuzz/run.sh BUILD SECONDS [TARGET...]
set -uo pipefail
build=$(cd "$1" && pwd)
secs=$2
shift 2
src=$(cd "$(dirname "$0")/.." && pwd)
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(fuzz_gguf fuzz_codec fuzz_tokenizer fuzz_capture fuzz_neartie fuzz_logits
    fuzz_topk fuzz_prompts fuzz_wheel fuzz_wheel_record fuzz_npm fuzz_seal fuzz_manifest)
one() {
    local t=$1 start
    start=$(date +%s)
    mkdir -p "$build/corpus/$t" "$build/artifacts/$t" "$build/logs"
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        timeout $((secs + 120)) "$build/$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$build/artifacts/$t/" \
        "$build/corpus/$t" "$src/fuzz/corpus/$t" "$src/fuzz/regressions/$t" \
        $([ -d "$build/seeds/$t" ] && echo "$build/seeds/$t") > "$build/logs/$t.log" 2>&1
    local rc=$? took=$(($(date +%s) - start))
    local execs
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$build/logs/$t.log" | tail -1)
    local result=ok
    [ $rc = 0 ] || result="FAILED (exit $rc; $(ls "$build/artifacts/$t" | head -1); log $build/logs/$t.log)"
    [ $rc = 72 ] && result="INTERRUPTED (exit 72: libFuzzer got a signal; log $build/logs/$t.log)"
    printf '%-18s %12s executions %6s s  %s\n' "$t" "${execs:-?}" "$took" "$result"
    printf '%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$t" "${execs:-0}" "$took" "$rc" >> "$build/fuzz-runs.tsv"
    [ $rc = 0 ]
}
export -f one
export build secs src
printf '%s\n' "${targets[@]}" | xargs -P 2 -I{} bash -c 'one {}'
rc=$?
[ $rc = 0 ] && echo "fuzz: ${#targets[@]} targets, $secs s each: no crash, leak or hang" ||
    echo "fuzz: FAILED: a target found a crash, a leak or a hang (above)"
exit $rc
