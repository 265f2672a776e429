#!/usr/bin/env bash
# The committed GPU evidence (fixtures/gpu/*.tar.gz, made on a GPU by
# scripts/gpu-evidence) checked without a GPU, as CI must:
#   1. each archive verifies against its seal (vt-seal verify), and is
#      extracted by vt-seal (which checks every member);
#   2. its capture ran on the GPU backend (runtime.runner.backend "hip"),
#      built from the GPU sources of this checkout: the sources sha256 it
#      records equals scripts/hip-sources-sha256 now, so a change under
#      engine/hip that is not followed by new evidence fails here;
#   3. the model is made again (vt fixture make, seed 1, from the archive's
#      name) and must be the file the capture names (size and sha256);
#   4. the CPU engine (in the capture's --matmul mode) captures the same
#      prompts fresh, and
#      is teacher-forced on the GPU's streams; vt-neartie scores the GPU
#      against the CPU (exit 0: no failed prompt; --allow-unverified: the
#      GPU captures are not strict, two repeats where strict asks for ten;
#      --allow-diff threads: the GPU runs one host thread, and the CPU
#      engine's results do not depend on its thread count);
#   5. every prompt's GPU logits are the CPU engine's bit for bit (the runs'
#      logits_sha256, repeat 0 of each prompt), as the backend is built to.
# Then the checks are shown to refuse: a changed sources hash, and a byte
# changed in an archive.
# usage: tests/gpu_evidence.sh BINDIR [ROOT]
set -uo pipefail
bin=$(cd "$1" && pwd)
root=$(cd "${2:-$(dirname "$0")/..}" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
say() { echo "gpu_evidence: $*"; }
bad() { say "FAIL: $*"; fail=1; }
. "$root/tests/support/evidence.sh"

# The field F's string value in the canonical JSON file (first occurrence).
field() { grep -o "\"$2\":\"[^\"]*\"" "$1" | head -1 | sed 's/^"[^"]*":"//; s/"$//'; }

# check_sources CAPTURE EXPECTED: 0 when the capture's GPU sources sha256 is EXPECTED.
check_sources() {
    local detail
    detail=$(grep -o '"runner":{[^}]*}' "$1" | head -1)
    case $detail in
    *'"backend":"hip"'*) ;;
    *) say "$1: runtime.runner.backend: expected \"hip\" (evidence from the GPU)"; return 1 ;;
    esac
    local got
    got=$(echo "$detail" | grep -o 'sources sha256 [0-9a-f]*' | cut -d' ' -f3)
    if [ "$got" != "$2" ]; then
        say "$1: runtime.runner.detail: sources sha256 '$got': expected $2 (scripts/hip-sources-sha256 of this" \
            "checkout): engine/hip changed since the evidence was made; make it again with scripts/gpu-evidence"
        return 1
    fi
    return 0
}

sources=$("$root/scripts/hip-sources-sha256")
archives=("$root"/fixtures/gpu/*.tar.gz)
if [ ! -e "${archives[0]}" ]; then
    bad "no archive under fixtures/gpu/"
    exit 1
fi
say "${#archives[@]} archives; GPU sources sha256 of this checkout $sources"
for a in "${archives[@]}"; do
    name=$(basename "$a" .tar.gz)
    d=$work/$name
    open_archive "$a" "$d" ev || continue
    gpu=$d/ev/gpu.json
    check_sources "$gpu" "$sources" || { fail=1; continue; }
    case $name in
    q35-tiny-*) arch=qwen35 weights=${name#q35-tiny-} ;;
    tiny-*) arch=qwen3 weights=${name#tiny-} ;;
    *) bad "$name: expected tiny-TYPE or q35-tiny-TYPE"; continue ;;
    esac
    model=$d/$(grep -o '"files":\[{"name":"[^"]*"' "$gpu" | head -1 | sed 's/.*"name":"//; s/"$//')
    "$bin/vt" fixture make --arch "$arch" --preset tiny --weights "$weights" --seed 1 -o "$model" >/dev/null ||
        { bad "$name: vt fixture make failed"; continue; }
    want=$(grep -o '"files":\[{[^}]*}' "$gpu" | head -1 | grep -o '"sha256":"[0-9a-f]*"' | cut -d'"' -f4)
    have=$(sha256sum "$model" | cut -d' ' -f1)
    [ "$want" = "$have" ] || { bad "$name: the fixture made now has sha256 $have: the capture names $want"; continue; }
    # The CPU in the capture's matmul mode (the GPU computes either as the CPU does).
    matmul=$(grep -o '"resolved":{[^}]*}' "$gpu" | head -1 | grep -o '"matmul":"[a-z0-9]*"' | cut -d'"' -f4)
    cpu=(--runner engine --matmul "${matmul:-?}" --model "$model" --no-timestamp)
    if ! "$bin/vt-capture" "${cpu[@]}" --prompts "$d/ev/prompts.jsonl" --repetitions 2 --max-tokens 16 \
        --out "$d/cpu.json" --logits-out "$d/cpu.logits" >"$d/cpu.log" 2>&1; then
        bad "$name: CPU capture: $(tail -1 "$d/cpu.log")"
        continue
    fi
    if ! "$bin/vt-capture" "${cpu[@]}" --score-prefix-of "$gpu" --out "$d/prefix.json" >"$d/prefix.log" 2>&1; then
        bad "$name: CPU prefix scores: $(tail -1 "$d/prefix.log")"
        continue
    fi
    "$bin/vt-neartie" --local "$gpu" --oracle "$d/cpu.json" --prefix-scores "$d/prefix.json" --allow-unverified --allow-diff threads \
        --out "$d/report.json" >"$d/neartie.log" 2>&1
    rc=$?
    summary=$(grep -m1 -i "strict\b.*near-tie\|prompts:" "$d/neartie.log" || tail -1 "$d/neartie.log")
    [ $rc = 0 ] || { bad "$name: vt-neartie GPU vs CPU: exit $rc: $(tail -3 "$d/neartie.log" | tr '\n' ' ')"; continue; }
    # Bit for bit: repeat 0 of each prompt (runs list repeat 0 of every prompt first).
    g=$(grep -o '"logits_sha256":"[0-9a-f]*"' "$gpu" | head -16)
    c=$(grep -o '"logits_sha256":"[0-9a-f]*"' "$d/cpu.json" | head -16)
    if [ -z "$g" ] || [ "$g" != "$c" ]; then
        bad "$name: GPU logits differ from the CPU engine's (runs' logits_sha256, repeat 0)"
        continue
    fi
    say "$name: OK: seal, sources, model $have, vt-neartie exit 0 ($summary), 16/16 prompts' logits bit-identical"
done

# The checks refuse what they must.
first=$work/$(basename "${archives[0]}" .tar.gz)/ev/gpu.json
if [ -f "$first" ]; then
    if check_sources "$first" "0000000000000000000000000000000000000000000000000000000000000000" >/dev/null; then
        bad "negative: a changed sources sha256 was accepted"
    else
        say "negative: a changed sources sha256 is refused"
    fi
fi
tampered_is_refused "${archives[0]}"
[ $fail = 0 ] && say "PASSED" || say "FAILED"
exit $fail
