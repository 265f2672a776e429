#!/usr/bin/env bash
# The committed transformers evidence (fixtures/transformers/*.tar.gz, made
# on the lent GPU by scripts/transformers-evidence) checked without a GPU
# or transformers, as CI must: the primary oracle's verdict reproduced.
#   1. each archive verifies against its seal and is extracted by vt-seal;
#   2. its oracle capture is transformers' (runtime.runner.name), strict,
#      with the package verified from the imported bytes (kind "imports",
#      no problem) -- vt-neartie re-checks strictness below;
#   3. the model is made again (vt fixture make, seed 1, from the archive's
#      name) and must be the file the captures name (sha256);
#   4. the CPU engine captures the prompts fresh with the committed CPU
#      capture's settings (two repeats, not ten: the committed capture shows
#      ten identical ones, and ten under the sanitizers take minutes), and
#      must give its repeat-0 tokens and logits bit for bit (each run's
#      logits_sha256) on the same workload: the streams transformers scored
#      are the ones this checkout's engine computes;
#   5. vt-neartie scores the committed CPU capture against transformers'
#      with transformers' prefix scores (replay and batched): exit 0, every
#      prompt strict, both captures strict evidence.
# Then the checks are shown to refuse: a fresh capture that differs (cache
# bf16), prefix scores bound to another capture, one capture twice, and a
# byte changed in an archive.
# usage: tests/transformers_evidence.sh BINDIR [ROOT]
set -uo pipefail
bin=$(cd "$1" && pwd)
root=$(cd "${2:-$(dirname "$0")/..}" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
say() { echo "transformers_evidence: $*"; }
bad() { say "FAIL: $*"; fail=1; }
. "$root/tests/support/evidence.sh"

# same_streams A B: 0 when B's repeat-0 runs have A's tokens and logits digests, prompt by prompt,
# and both computed the same workload (model, prompts, settings.resolved) but for the repeat count.
same_streams() {
    python3 - "$1" "$2" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
def streams(d):
    return [(r["prompt"], r["tokens"], r.get("logits_sha256")) for r in d["runs"] if r["repeat"] == 0]
def workload(d):
    s = dict(d["settings"]["resolved"])
    s.pop("repetitions", None)
    return (d["model"]["files"], d["model"]["gguf"], d["prompts"], s)
sa, sb = streams(a), streams(b)
if sa != sb:
    i = next(i for i, (x, y) in enumerate(zip(sa + [None], sb + [None])) if x != y)
    print("prompt %d's repeat 0 differs" % i)
    sys.exit(1)
if workload(a) != workload(b):
    print("the workloads differ (model, prompts or settings)")
    sys.exit(1)
print("%d prompts' streams identical" % len(sa))
PY
}

archives=("$root"/fixtures/transformers/*.tar.gz)
if [ ! -e "${archives[0]}" ]; then
    bad "no archive under fixtures/transformers/"
    exit 1
fi
say "${#archives[@]} archives"
for a in "${archives[@]}"; do
    name=$(basename "$a" .tar.gz)
    d=$work/$name
    open_archive "$a" "$d" x || continue
    ev=$(find "$d/x" -name "$name.hf-f32-eager.json" -printf '%h\n' | head -1)
    hf=$ev/$name.hf-f32-eager.json cpu=$ev/$name.cpu-auto.json
    scores=$ev/$name.hf-f32-eager.scores-cpu-auto.json batched=$ev/$name.hf-f32-eager.batched-cpu-auto.json
    for f in "$hf" "$cpu" "$scores" "$batched"; do
        [ -f "$f" ] || { bad "$name: $(basename "$f"): missing from the archive"; continue 2; }
    done
    why=$(python3 - "$hf" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
p, r = d["package"], d["runtime"]["runner"]
if r["name"] != "transformers":
    print("runtime.runner.name %s: expected transformers" % r["name"])
elif p is None or p["kind"] != "imports" or not p["verified"] or p["problems"]:
    print("package: expected kind imports, verified, no problem")
elif d["settings"]["resolved"]["repetitions"] < 10 or not d["determinism"]["identical_logits"]:
    print("determinism: expected 10 identical repeats")
else:
    print("ok %s, %s" % (r["version"], p["notes"][0]))
PY
)
    case $why in ok*) ;; *) bad "$name: $why"; continue ;; esac
    case $name in
    q35-tiny-*) arch=qwen35 weights=${name#q35-tiny-} ;;
    tiny-*) arch=qwen3 weights=${name#tiny-} ;;
    *) bad "$name: expected tiny-TYPE or q35-tiny-TYPE"; continue ;;
    esac
    model=$ev/$name.gguf
    "$bin/vt" fixture make --arch "$arch" --preset tiny --weights "$weights" --seed 1 -o "$model" >/dev/null ||
        { bad "$name: vt fixture make failed"; continue; }
    want=$(grep -o '"files":\[{[^}]*}' "$hf" | head -1 | grep -o '"sha256":"[0-9a-f]*"' | cut -d'"' -f4)
    have=$(sha256sum "$model" | cut -d' ' -f1)
    [ "$want" = "$have" ] || { bad "$name: the fixture made now has sha256 $have: the captures name $want"; continue; }
    # The CPU engine, fresh, with the committed capture's settings.
    fresh=(--runner engine --matmul exact --threads 1 --model "$model" --prompts "$ev/prompts.jsonl" --repetitions 2
           --max-tokens 16 --no-timestamp --model-manifest "$ev/$name.manifest.json"
           --launcher-manifest "$ev/$name.launcher.json")
    if ! "$bin/vt-capture" "${fresh[@]}" --out "$d/fresh.json" >"$d/fresh.log" 2>&1; then
        bad "$name: fresh CPU capture: $(tail -1 "$d/fresh.log")"
        continue
    fi
    same=$(same_streams "$cpu" "$d/fresh.json") || { bad "$name: the fresh CPU capture differs from the scored one: $same"; continue; }
    "$bin/vt-neartie" --local "$cpu" --oracle "$hf" --prefix-scores "$scores" --prefix-scores "$batched" \
        --allow-diff dtype --allow-diff attention --out "$d/report.json" >"$d/neartie.log" 2>&1
    rc=$?
    [ $rc = 0 ] || { bad "$name: vt-neartie CPU vs transformers: exit $rc: $(tail -3 "$d/neartie.log" | tr '\n' ' ')"; continue; }
    grep -q "^totals: 16 prompts: 16 strict," "$d/neartie.log" || { bad "$name: $(grep '^totals' "$d/neartie.log")"; continue; }
    grep -q "^evidence: strict" "$d/neartie.log" || { bad "$name: $(grep '^evidence' "$d/neartie.log")"; continue; }
    say "$name: OK: seal, transformers $why; model $have; fresh CPU capture: $same; vt-neartie exit 0:" \
        "$(grep '^totals' "$d/neartie.log" | cut -c9-)"
done

# The checks refuse what they must.
name=$(basename "${archives[0]}" .tar.gz)
d=$work/$name
ev=$(find "$d/x" -name "$name.hf-f32-eager.json" -printf '%h\n' 2>/dev/null | head -1)
if [ -n "$ev" ] && [ -f "$ev/$name.gguf" ]; then
    "$bin/vt-capture" --runner engine --matmul exact --threads 1 --cache-dtype bf16 --model "$ev/$name.gguf" \
        --prompts "$ev/prompts.jsonl" --repetitions 2 --max-tokens 16 --no-timestamp --out "$d/other.json" >/dev/null 2>&1
    if same_streams "$ev/$name.cpu-auto.json" "$d/other.json" >/dev/null; then
        bad "negative: a CPU capture in another cache dtype passed as the scored one"
    else
        say "negative: a fresh capture that differs (cache bf16) is refused"
    fi
    # Every other difference allowed, so that the binding is what refuses.
    "$bin/vt-neartie" --local "$d/other.json" --oracle "$ev/$name.hf-f32-eager.json" --allow-unverified \
        --prefix-scores "$ev/$name.hf-f32-eager.scores-cpu-auto.json" --allow-diff dtype --allow-diff attention \
        --allow-diff cache_dtype --allow-diff repetitions >"$d/binding.log" 2>&1
    rc=$?
    if [ $rc = 2 ] && grep -q "rule binding" "$d/binding.log"; then
        say "negative: prefix scores bound to another capture are refused"
    else
        bad "negative: prefix scores of another capture's streams: exit $rc, expected 2 by rule binding:" \
            "$(head -1 "$d/binding.log")"
    fi
    if "$bin/vt-neartie" --local "$ev/$name.hf-f32-eager.json" --oracle "$ev/$name.hf-f32-eager.json" \
        --prefix-scores "$ev/$name.hf-f32-eager.scores-cpu-auto.json" >/dev/null 2>&1; then
        bad "negative: transformers' capture against itself was accepted"
    else
        say "negative: one capture twice is refused"
    fi
fi
tampered_is_refused "${archives[0]}"
[ $fail = 0 ] && say "PASSED" || say "FAILED"
exit $fail
