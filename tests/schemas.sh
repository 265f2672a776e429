#!/usr/bin/env bash
# Every format vt writes against its JSON Schema, with an independent
# validator (tests/support/validate_schema.py: Debian's python3-jsonschema,
# Draft 2020-12, not vt's own checker):
#  - the schemas themselves: each a valid Draft 2020-12 schema, every
#    *.schema.json of the repository in the validator's table;
#  - an end-to-end run of the built tools that writes every format (captures
#    by the engine, by llama.cpp and by an engine with an error planted, their
#    logits and top-k side files, prefix scores replayed, batched and by
#    vt-neartie --score-with, near-tie reports with JUnit XML and the in-toto
#    verdict, a model manifest, a sealed archive with its seal, manifest and
#    in-toto statement, vt bench, vt op check, vt gguf info, vt run and
#    vt provenance identity --json, the --json of vt agree, vt kld, vt codec
#    list and check, vt provenance manifest verify, verify-wheel, verify-npm
#    and verify-imports, vt-capture and vt-seal verify, vt export's
#    vt_tokens.json, and the
#    vt.imports/1 list of a Python process): every file it wrote, found with
#    find, is valid (a file of no known format fails: every file vt writes
#    has a schema; only the formats of others, named in FOREIGN, are left
#    out); the JUnit files are parsed as XML and checked for their structure;
#  - the older versions vt still reads (vt.capture/1, vt.prefix-scores/1, /2,
#    and /4, vt.neartie-report/1 to /3), derived from the current outputs as
#    those versions differ (tests/test_neartie_cli.c derives them so too), are
#    valid against their frozen schemas;
#  - for every format of the table a copy of a real output mutated (a
#    required member removed, a wrong type, a bad sha256, an unknown member,
#    a value outside its enum, a corrupted binary header) that its schema
#    rejects, and a few files no schema applies to (JSON with NaN, a side
#    file of an unknown version, an unknown schema id).
# A new format: its row in validate_schema.py's FORMATS, a step below that
# writes it under out/ (or a derivation, for an older version), and its line
# in M (the mutation its schema must reject); the test fails while one lacks.
# usage: tests/schemas.sh BIN_DIR SOURCE_DIR [DEPS_DIR (scripts/bootstrap's output; default SOURCE_DIR/deps)]
set -uo pipefail
bin=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
deps=$(cd "${3:-$src/deps}" && pwd)
vt=$bin/vt
py=/usr/bin/python3 # Debian's, with python3-jsonschema (scripts/bootstrap installs it)
validate() { "$py" "$src/tests/support/validate_schema.py" --root "$src" "$@"; }
work=$(mktemp -d /tmp/vt-schemas-XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
fail=0
bad() {
    echo "schemas: FAIL: $*" >&2
    fail=1
}
# run NAME CMD...: CMD must exit 0; its output goes to NAME.log
run() {
    local name=$1
    shift
    "$@" > "log/$name.log" 2>&1 || bad "$name: exit $?: $(tail -3 "log/$name.log")"
}
# json NAME OUT CMD...: CMD's stdout (a --json document) to OUT
json() {
    local name=$1 out=$2
    shift 2
    "$@" > "$out" 2> "log/$name.log" || bad "$name: exit $?: $(tail -3 "log/$name.log")"
}

"$py" -c 'import jsonschema' 2> /dev/null || { echo "schemas: FAIL: $py has no jsonschema (scripts/bootstrap)" >&2; exit 1; }
validate --check-schemas > check-schemas.txt || bad "--check-schemas: $(cat check-schemas.txt)"

# ---- the end-to-end run: inputs in in/, everything vt writes under out/
mkdir in out log
run fixture "$vt" fixture make --preset tiny --weights Q8_0 -o in/tiny.gguf
head -4 "$src/fixtures/prompts/default16.jsonl" > in/prompts.jsonl
printf '{"launcher": "tests/schemas.sh", "host": "%s", "command": ["tests/schemas.sh"]}\n' "$(uname -n)" \
    > in/launcher.json
run manifest "$vt" provenance manifest make in/tiny.gguf -o out/model-manifest.json
cap=(--model in/tiny.gguf --prompts in/prompts.jsonl --repetitions 2 --max-tokens 8 --threads 1 --no-timestamp --quiet
     --model-manifest out/model-manifest.json --launcher-manifest in/launcher.json)
run capture-engine "$bin/vt-capture" --runner engine "${cap[@]}" \
    --logits-out out/engine.logits --topk-out out/engine.topk --out out/engine.json
run capture-llamacpp "$bin/vt-capture" --runner llamacpp "${cap[@]}" \
    --logits-out out/oracle.logits --topk-out out/oracle.topk --out out/oracle.json
# An engine error planted on purpose: its streams diverge, so the report
# below has first divergences, largest gaps and failed prompts.
VT_ENGINE_PLANT=blk.0.ffn_down.weight:5:8 run capture-planted "$bin/vt-capture" --runner engine "${cap[@]}" \
    --topk-out out/planted.topk --out out/planted.json
sc=(--runner llamacpp --model in/tiny.gguf --threads 1 --no-timestamp --quiet)
run scores-replay "$bin/vt-capture" "${sc[@]}" --score-prefix-of out/engine.json --out out/scores-replay.json
run scores-batched "$bin/vt-capture" "${sc[@]}" --score-prefix-of out/engine.json --score-shape batched \
    --out out/scores-batched.json
run neartie "$bin/vt-neartie" --local out/engine.json --oracle out/oracle.json --prefix-scores out/scores-replay.json \
    --prefix-scores out/scores-batched.json --allow-unverified --out out/report.json --junit out/report.xml \
    --intoto out/report.intoto.json
# --score-with: three shapes and the oracle's noise floor; the gate fails (exit 1)
"$bin/vt-neartie" --local out/planted.json --oracle out/oracle.json --score-with llamacpp --model in/tiny.gguf \
    --scores-out out/planted-scores.json --allow-unverified --out out/planted-report.json \
    --junit out/planted-report.xml --intoto out/planted-report.intoto.json --quiet > log/neartie-planted.log 2>&1
rc=$?
[ $rc = 1 ] || bad "neartie-planted: exit $rc, expected 1 (the gate fails): $(tail -3 log/neartie-planted.log)"
json identity out/identity.json "$vt" provenance identity --json
json gguf-info out/gguf-info.json "$vt" gguf info in/tiny.gguf --json
json run-generate out/run-generate.json "$vt" run --runner engine --model in/tiny.gguf --prompt "The capital" \
    --max-tokens 4 --json
json run-score out/run-score.json "$vt" run --runner llamacpp --model in/tiny.gguf --prompt-tokens 71,72 \
    --score 125,473 --show-top 3 --json
json bench out/bench.json "$vt" bench --vs llamacpp --model in/tiny.gguf --threads 1 --prefill 16 --decode 8 \
    --runs 2 --bandwidth-mib 64 --json
# its verdict (exit 0, or 1 where a type misses the standard) is tests/test_op_check.c's
"$vt" op check --types Q8_0,Q4_K,F32 --kinds random,adversarial,fixture --model in/tiny.gguf --rows 16 --cols 256 \
    --batch 4 --threads 1 --json > out/op-check.json 2> log/op-check.log
rc=$?
[ $rc -le 1 ] || bad "op-check: exit $rc: $(tail -3 log/op-check.log)"
# the --json of the other tables (tests/json_tables.sh also runs their failing checks)
json agree out/agree.json "$vt" agree --model in/tiny.gguf --prompts 2 --max-tokens 4 --json
json kld out/kld.json "$vt" kld --model in/tiny.gguf --corpus "$src/README.md" --ctx 64 --chunks 1 --by-position 16 \
    --threads 1 --json
json codec-list out/codec-list.json "$vt" codec list --json
json codec-check out/codec-check.json "$vt" codec check --types Q8_0 --rows 16 --quiet --json
json manifest-verify out/manifest-verify.json "$vt" provenance manifest verify out/model-manifest.json --json
json capture-summary out/capture-summary.json "$bin/vt-capture" --runner engine "${cap[@]}" \
    --out out/summary-capture.json --json
mkdir out/export
run export "$vt" export --safetensors out/export in/tiny.gguf
run imports "$py" -c 'import sys; sys.path.insert(0, sys.argv[1]); import vt_imports; vt_imports.write(sys.argv[2], ["json"])' \
    "$src/oracle/transformers" out/imports.json
# the packages' verification (the same list with nothing required verifies;
# tests/json_tables.sh also runs the failing checks)
run imports-none "$py" -c 'import sys; sys.path.insert(0, sys.argv[1]); import vt_imports; vt_imports.write(sys.argv[2], [])' \
    "$src/oracle/transformers" in/imports-none.json
json imports-verify out/imports-verify.json "$vt" provenance verify-imports in/imports-none.json --json
json wheel-verify out/wheel-verify.json "$vt" provenance verify-wheel \
    "$(ls /usr/share/python-wheels/pip-*.whl | tail -1)" --json
json npm-verify out/npm-verify.json "$vt" provenance verify-npm "$deps/npm/node-llama-cpp-linux-x64-3.22.1.tgz" \
    --lock "$src/oracle/llamacpp.lock.json" --name @node-llama-cpp/linux-x64 --root "$deps/linux-x64" \
    --loaded "$deps/linux-x64/bins/linux-x64/libggml-base.so" --json
run seal "$bin/vt-seal" create out -o sealed.tar.gz --attestation --quiet
run seal-verify "$bin/vt-seal" verify sealed.tar.gz --quiet
mkdir sealed
mv sealed.tar.gz sealed.tar.gz.seal.json sealed.tar.gz.intoto.json sealed/
tar -xzf sealed/sealed.tar.gz -C sealed manifest.json || bad "manifest.json: not in the archive"
json seal-verify-json sealed/verify.json "$bin/vt-seal" verify sealed/sealed.tar.gz --quiet --json

# ---- every file written, validated (FOREIGN: others' formats, checked otherwise)
FOREIGN=(
    out/report.xml out/planted-report.xml                  # JUnit XML: parsed below
    out/export/config.json out/export/tokenizer.json       # transformers' own formats
    out/export/tokenizer_config.json out/export/model.safetensors
    sealed/sealed.tar.gz                                   # its manifest.json is validated
)
mapfile -t written < <(find out sealed -type f | sort)
files=()
for f in "${written[@]}"; do
    skip=0
    for x in "${FOREIGN[@]}"; do [ "$f" = "$x" ] && skip=1; done
    [ $skip = 1 ] || files+=("$f")
done
validate "${files[@]}" > valid.txt
rc=$?
[ $rc = 0 ] || bad "validate: exit $rc: $(grep -v '^ok ' valid.txt)"
n_files=$(grep -c '^ok ' valid.txt)
[ "$n_files" = "${#files[@]}" ] || bad "validate: $n_files of ${#files[@]} files valid"

for x in out/report.xml out/planted-report.xml; do
    "$py" - "$x" "$(wc -l < in/prompts.jsonl)" > log/junit.log 2>&1 <<'EOF' ||
import sys
import xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == "testsuites", root.tag
suites = root.findall("testsuite")
assert len(suites) == 1, "expected one testsuite"
s = suites[0]
cases = s.findall("testcase")
assert len(cases) == int(sys.argv[2]), "testcases: %d, expected %s" % (len(cases), sys.argv[2])
assert int(s.get("tests")) == len(cases) == int(root.get("tests")), "tests= does not count the testcases"
failed = sum(1 for c in cases if c.find("failure") is not None)
assert int(s.get("failures")) == failed == int(root.get("failures")), "failures= does not count the failures"
assert all(c.get("name") and c.get("classname") for c in cases), "a testcase without name or classname"
assert s.find("properties") is not None and all(p.get("name") and p.get("value") is not None
                                                 for p in s.find("properties")), "properties"
print(len(cases), failed)
EOF
        bad "$x: not the JUnit structure: $(tail -2 log/junit.log)"
done

# ---- older versions (readers read them all), derived from the current outputs,
# then one mutated copy per format of the table that its schema must reject
mkdir derived neg
"$py" - "$src" > mutations.txt 2> log/mutations.log <<'EOF' || bad "deriving versions and mutations: $(tail -3 log/mutations.log)"
import copy, json, os, sys
sys.path.insert(0, os.path.join(sys.argv[1], "tests/support"))
from validate_schema import FORMATS

def load(p):
    with open(p) as f:
        return json.load(f)

def save(doc, p):
    with open(p, "w") as f:
        json.dump(doc, f, ensure_ascii=False)
        f.write("\n")

def drop(doc, *keys):
    for k in keys:
        doc.pop(k, None)

# The versions vt wrote before, as they differ from the next one.
cap1 = load("out/engine.json")                      # vt.capture/1: no vocab_sha256, problems, device
cap1["schema"] = "vt.capture/1"
drop(cap1["model"]["gguf"], "vocab_sha256")
drop(cap1["model"], "problems")
drop(cap1["runtime"]["runner"], "device")
save(cap1, "derived/capture-v1.json")
bench1 = load("out/bench.json")                     # vt.bench/1: one bandwidth for the command
bench1["format"] = "vt.bench/1"
drop(bench1["decode_limit"], "read_bytes_per_s_runs", "read_bytes_per_s_before", "read_bytes_per_s_after")
for r in bench1["runners"]:
    drop(r, "decode_fraction_of_limit_runs")
save(bench1, "derived/bench-v1.json")
ps3 = load("out/scores-replay.json")
ps4 = copy.deepcopy(ps3)                            # vt.prefix-scores/4: runs[].bound
ps4["schema"] = "vt.prefix-scores/4"
for r in ps4["runs"]:
    r["bound"] = [len(r["tokens"]) - 1] if r["tokens"] else []  # positions told an upper bound
save(ps4, "derived/scores-v4.json")
ps2 = copy.deepcopy(ps3)                            # vt.prefix-scores/2: no shape
ps2["schema"] = "vt.prefix-scores/2"
drop(ps2, "shape")
save(ps2, "derived/scores-v2.json")
ps1 = copy.deepcopy(ps2)                            # /1: of a vt.capture/1, its model and runtime /1's
ps1["schema"] = "vt.prefix-scores/1"
ps1["local"]["schema"] = "vt.capture/1"
drop(ps1["model"]["gguf"], "vocab_sha256")
drop(ps1["model"], "problems")
drop(ps1["runtime"]["runner"], "device")
save(ps1, "derived/scores-v1.json")
rep = load("out/planted-report.json")
r3 = copy.deepcopy(rep)                             # /3: no third shape, noise_shape, by-shape gaps
r3["schema"] = "vt.neartie-report/3"
drop(r3["prefix_scores"], "noise_shape")
drop(r3["noise"], "third_shape")
if r3["noise"]["second_shape"]:
    drop(r3["noise"]["second_shape"], "noise_shape")
for p in r3["prompts"]:
    drop(p, "max_gap_by_shape_mnats", "bound_gaps")
drop(r3["totals"], "shapes", "bound_gaps")
save(r3, "derived/report-v3.json")
r2 = copy.deepcopy(r3)                              # /2: no noise at all
r2["schema"] = "vt.neartie-report/2"
drop(r2, "noise")
drop(r2["prefix_scores"], "shape")
for p in r2["prompts"]:
    drop(p, "within_noise_gaps", "beyond_noise_gaps", "noise_floor_mnats", "noise_floor_position")
    if p["class"] == "within-noise":
        p["class"] = "failed"
drop(r2["totals"], "within_noise", "within_noise_gaps", "beyond_noise_gaps", "noise_floor_max_mnats")
drop(r2["gate"], "within_noise")
save(r2, "derived/report-v2.json")
r1 = copy.deepcopy(r2)                              # /1: no evidence, token text without text_hex
r1["schema"] = "vt.neartie-report/1"
drop(r1, "evidence")
def no_hex(x):
    if isinstance(x, dict):
        x.pop("text_hex", None)
        for v in x.values():
            no_hex(v)
    elif isinstance(x, list):
        for v in x:
            no_hex(v)
no_hex(r1)
save(r1, "derived/report-v1.json")

# One mutation per format: (format, the file mutated, what is done, the path, the value).
DEL, SET = "del", "set"
M = [
    ("vt.capture/1", "derived/capture-v1.json", DEL, ["runs"], None),
    ("vt.capture/2", "out/engine.json", SET, ["model", "files", 0, "sha256"], "ABC123"),
    ("vt.prefix-scores/1", "derived/scores-v1.json", SET, ["unknown_member"], 1),
    ("vt.prefix-scores/2", "derived/scores-v2.json", SET, ["runs"], {}),
    ("vt.prefix-scores/3", "out/scores-replay.json", SET, ["local", "schema"], "vt.capture/9"),
    ("vt.prefix-scores/4", "derived/scores-v4.json", SET, ["runs", 0, "bound"], "all"),
    ("vt.neartie-report/1", "derived/report-v1.json", SET, ["gate", "passed"], "no"),
    ("vt.neartie-report/2", "derived/report-v2.json", DEL, ["evidence", "strict"], None),
    ("vt.neartie-report/3", "derived/report-v3.json", SET, ["prompts", 0, "class"], "beyond-noise"),
    ("vt.neartie-report/4", "out/planted-report.json", SET, ["seal"], "0" * 63),
    ("https://in-toto.io/attestation/test-result/v0.1", "out/report.intoto.json", SET, ["predicate", "result"], "OK"),
    ("vt.seal/1", "sealed/sealed.tar.gz.seal.json", SET, ["archive", "sha256"], "sha256:" + "0" * 64),
    ("vt.seal.manifest/1", "sealed/manifest.json", SET, ["members", 0, "path"], "../escape.json"),
    ("https://vt.dev/evidence/v1", "sealed/sealed.tar.gz.intoto.json", SET, ["subject", 1],
     {"name": "other.tar.gz", "digest": {"sha256": "0" * 64}}),
    ("vt.manifest/1", "out/model-manifest.json", SET, ["files", 0, "size"], -1),
    ("vt.runtime-identity/1", "out/identity.json", SET, ["binary", "sha256"], "abc"),
    ("vt.imports/1", "out/imports.json", SET, ["modules", 0, "path"], "relative/path.py"),
    ("vt.token-check/1", "out/export/vt_tokens.json", SET, ["prompts", 0, "ids", 0], -1),
    ("vt.bench/2", "out/bench.json", SET, ["runners", 0, "unknown_member"], True),
    ("vt.bench/2", "out/bench.json", DEL, ["decode_limit", "read_bytes_per_s_runs"], None),
    ("vt.bench/1", "derived/bench-v1.json", SET, ["decode_limit", "read_bytes_per_s_runs"], {}),
    ("vt.op-check/1", "out/op-check.json", SET, ["results", 0, "layout"], "tiled"),
    ("vt.gguf-info/1", "out/gguf-info.json", DEL, ["tensors"], None),
    ("vt.run/1", "out/run-generate.json", SET, ["positions", 0, "logprob"], 0.5),
    ("vt.agree/1", "out/agree.json", DEL, ["summary", "failed"], None),
    ("vt.kld/1", "out/kld.json", SET, ["kld", "mean"], "0"),
    ("vt.codec-list/1", "out/codec-list.json", DEL, ["codecs", 0, "block_bytes"], None),
    ("vt.codec-check/1", "out/codec-check.json", SET, ["types", 0, "passed"], "yes"),
    ("vt.seal-verify/1", "sealed/verify.json", DEL, ["verified"], None),
    ("vt.manifest-verify/1", "out/manifest-verify.json", SET, ["files", 0, "status"], "fine"),
    ("vt.capture-summary/1", "out/capture-summary.json", SET, ["seal"], 12),
    ("vt.wheel-verify/1", "out/wheel-verify.json", SET, ["wheel", "sha256"], "sha256:" + "0" * 64),
    ("vt.npm-verify/1", "out/npm-verify.json", SET, ["loaded", 0, "sha256"], "0" * 64),
    ("vt.imports-verify/1", "out/imports-verify.json", SET, ["problems"], ["a problem, yet verified"]),
    # binary side files: (offset, bytes) written over a copy, or a negative offset: cut that many bytes
    ("vt.logits/1", "out/engine.logits", "bytes", 16, b"VTLX"),          # the first frame's magic
    ("vt.topk/1", "out/engine.topk", "bytes", -4, None),                 # not whole positions
]
todo = set(FORMATS)
for i, (fmt, base, op, where, value) in enumerate(M):
    todo.discard(fmt)
    ext = os.path.splitext(base)[1]
    out = "neg/%02d%s" % (i, ext)
    if op == "bytes":
        data = bytearray(open(base, "rb").read())
        if where < 0:
            data = data[:where]
        else:
            data[where:where + len(value)] = value
        open(out, "wb").write(data)
    else:
        doc = load(base)
        node = doc
        for k in where[:-1]:
            node = node[k]
        if op == DEL:
            del node[where[-1]]
        elif isinstance(node, list) and where[-1] == len(node):
            node.append(value)
        else:
            node[where[-1]] = value
        save(doc, out)
    print("%s\t%s\t%s" % (out, fmt, base))
if todo:
    sys.exit("formats of the table without a negative case: " + ", ".join(sorted(todo)))
EOF
validate derived/*.json > derived.txt || bad "derived older versions: $(grep -v '^ok ' derived.txt)"
n_derived=$(grep -c '^ok ' derived.txt)
# Which formats were shown valid: every row of the table, by a file written or derived.
formats=$(cat valid.txt derived.txt | awk '/^ok /{print $3}' | sort -u)
n_formats=$(echo "$formats" | grep -c .)
"$py" -c 'import sys; sys.path.insert(0, sys.argv[1]); from validate_schema import FORMATS; print("\n".join(sorted(FORMATS)))' \
    "$src/tests/support" > table.txt
missing=$(comm -23 table.txt <(echo "$formats"))
[ -z "$missing" ] || bad "formats of the table no file showed valid: $(echo $missing)"

n_neg=0
if [ -s mutations.txt ]; then
    mapfile -t negs < <(cut -f1 mutations.txt)
    validate --expect-invalid "${negs[@]}" > negatives.txt
    rc=$?
    [ $rc = 0 ] || bad "negatives: exit $rc: $(grep -v '^rejected ' negatives.txt)"
    # each rejected by its own format's schema, not for want of a format
    while IFS=$'\t' read -r f fmt base; do
        if grep -qF "rejected $f $fmt \$" negatives.txt; then
            n_neg=$((n_neg + 1))
        else
            bad "$f ($fmt, $base mutated): not rejected by its schema: $(grep -F " $f " negatives.txt)"
        fi
    done < mutations.txt
fi

# Files no schema applies to: NaN is not JSON, a side file of a version no
# schema covers and an unknown schema id are unknown formats (exit 2).
sed '0,/"logprob":[-0-9.e]*/s//"logprob":NaN/' out/run-generate.json > neg/nan.json
"$py" -c 'import sys; d = bytearray(open(sys.argv[1], "rb").read()); d[8] = 2; open(sys.argv[2], "wb").write(d)' \
    out/engine.logits neg/version2.logits
sed 's|"vt.manifest/1"|"vt.manifest/9"|' out/model-manifest.json > neg/unknown-schema.json
validate --expect-invalid neg/nan.json > nan.txt && grep -q "^rejected neg/nan.json ? \$: not strict JSON" nan.txt ||
    bad "NaN in JSON: $(cat nan.txt)"
for f in neg/version2.logits neg/unknown-schema.json; do
    validate "$f" > unknown.txt
    rc=$?
    [ $rc = 2 ] && grep -q "^unknown $f: " unknown.txt || bad "$f: exit $rc, expected 2 (unknown format): $(cat unknown.txt)"
done

if [ $fail = 0 ]; then
    echo "schemas: $((n_files + n_derived)) files valid across $n_formats formats ($n_files written by the tools," \
         "$n_derived older versions derived); $n_neg negatives rejected, each by its format's schema"
fi
exit $fail
