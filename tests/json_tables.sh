#!/usr/bin/env bash
# Every table a person reads also exists as --json (issue 18): each command
# below runs with --json on the tiny fixture, its stdout saved; every saved
# document must be one JSON document that tests/support/validate_schema.py
# (Draft 2020-12, python3-jsonschema: not vt's own checker) validates against
# its format's schema, the documents of a check that ran and failed (exit 1)
# included; and for each format a copy with one defect (a required member
# removed, a wrong type, a value outside its enum) must be rejected by
# --expect-invalid, naming the format (not as an unknown file).
#   vt.agree/1             vt agree --json (and with an engine error planted: exit 1)
#   vt.kld/1               vt kld --json --by-position
#   vt.codec-list/1        vt codec list --json
#   vt.codec-check/1       vt codec check --json
#   vt.capture-summary/1   vt-capture --json (and refused by the strict gate: exit 1)
#   vt.manifest-verify/1   vt provenance manifest verify --json (and a file changed: exit 1)
#   vt.seal-verify/1       vt-seal verify --json (and the archive changed: exit 1)
#   vt.wheel-verify/1      vt provenance verify-wheel --json: Debian's pip wheel (and a member changed: exit 1)
#   vt.npm-verify/1        vt provenance verify-npm --json: the pinned tarball and a library loaded from
#                          it (and a lock pinning other bytes for it: exit 1)
#   vt.imports-verify/1    vt provenance verify-imports --json: a python3 that imported a distribution's
#                          module and one from outside every RECORD (and that one required: exit 1)
# usage: tests/json_tables.sh BINDIR SOURCE_DIR [DEPS_DIR (scripts/bootstrap's output; default SOURCE_DIR/deps)]
set -uo pipefail
vt=$(cd "$1" && pwd)/vt
src=$(cd "$2" && pwd)
deps=$(cd "${3:-$src/deps}" && pwd)
py=/usr/bin/python3
validate=$src/tests/support/validate_schema.py
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
fail=0
bad() {
    echo "json_tables: FAIL: $*" >&2
    fail=1
}
# json NAME RC CMD...: CMD's stdout into out/NAME.json; CMD must exit RC and
# write something on stdout (what it wrote on stderr is kept in NAME.err)
mkdir out
json() {
    local name=$1 want=$2
    shift 2
    "$@" > "out/$name.json" 2> "$name.err"
    local rc=$?
    [ "$rc" = "$want" ] || bad "$name: exit $rc, expected $want: $(head -c 400 "$name.err")"
    [ -s "out/$name.json" ] || bad "$name: nothing on stdout"
}

"$vt" fixture make --preset tiny --weights Q8_0 --seed 1 -o t.gguf > /dev/null || { bad "fixture make"; exit 1; }
json agree 0 "$vt" agree --model t.gguf --prompts 2 --max-tokens 4 --json
json agree-failed 1 env VT_ENGINE_PLANT=blk.0.ffn_down.weight:5:8 "$vt" agree --model t.gguf --prompts 2 \
    --max-tokens 4 --json
json kld 0 "$vt" kld --model t.gguf --corpus "$src/README.md" --ctx 64 --chunks 1 --by-position 16 \
    --local-cache-dtype bf16 --threads 1 --json
json codec-list 0 "$vt" codec list --json
json codec-check 0 "$vt" codec check --types Q8_0,Q4_K --rows 32 --json

head -2 "$src/fixtures/prompts/default16.jsonl" > p.jsonl
"$vt" provenance manifest make t.gguf -o m.json > /dev/null || bad "manifest make"
printf '{"launcher":"json_tables.sh","host":"test","command":["vt-capture"]}\n' > l.json
cap=(--runner engine --model t.gguf --prompts p.jsonl --max-tokens 4 --top-k 3 --threads 1 --no-timestamp)
json capture-summary 0 "$vt" capture "${cap[@]}" --repetitions 2 --logits-out c.logits --out c.json --json
json capture-summary-refused 1 "$vt" capture "${cap[@]}" --repetitions 2 --strict --model-manifest m.json \
    --launcher-manifest l.json --out s.json --json
[ -e s.json ] && bad "capture-summary-refused: s.json written"

json manifest-verify 0 "$vt" provenance manifest verify m.json --json
cp m.json m2.json
"$py" -c 'import json,sys; d=json.load(open("m2.json")); d["files"][0]["size"] += 1; json.dump(d, open("m2.json", "w"))'
json manifest-verify-failed 1 "$vt" provenance manifest verify m2.json --json

mkdir -p ev/sub && cp c.json ev/ && cp p.jsonl ev/sub/
"$vt" seal create ev -o ev.tar.gz --attestation > /dev/null || bad "seal create"
json seal-verify 0 "$vt" seal verify ev.tar.gz --json
cp ev.tar.gz x.tar.gz && cp ev.tar.gz.seal.json x.tar.gz.seal.json
printf 'x' | dd of=x.tar.gz bs=1 seek=100 conv=notrunc status=none
json seal-verify-failed 1 "$vt" seal verify x.tar.gz --json

# provenance: Debian's pip wheel, then a copy with one member changed
whl=$(ls /usr/share/python-wheels/pip-*.whl | tail -1)
json wheel-verify 0 "$vt" provenance verify-wheel "$whl" --json
"$py" - "$whl" pip-0-py3-none-any.whl <<'EOF' || bad "could not make the changed wheel"
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as a, zipfile.ZipFile(sys.argv[2], "w") as b:
    for i in a.infolist():
        data = a.read(i)
        b.writestr(i, data + b"# changed\n" if i.filename == "pip/__init__.py" else data)
EOF
json wheel-verify-failed 1 "$vt" provenance verify-wheel pip-0-py3-none-any.whl --json
# the pinned npm tarball and a library loaded from it; then a lock pinning
# the main package's bytes for it
npm=(verify-npm "$deps/npm/node-llama-cpp-linux-x64-3.22.1.tgz" --name @node-llama-cpp/linux-x64)
json npm-verify 0 "$vt" provenance "${npm[@]}" --lock "$src/oracle/llamacpp.lock.json" --root "$deps/linux-x64" \
    --loaded "$deps/linux-x64/bins/linux-x64/libggml-base.so" --json
"$py" - "$src/oracle/llamacpp.lock.json" lock.json <<'EOF' || bad "could not make the wrong lock"
import json, sys
d = json.load(open(sys.argv[1]))
by = {p["name"]: p for p in d["packages"]}
by["@node-llama-cpp/linux-x64"]["integrity"] = by["node-llama-cpp"]["integrity"]
json.dump(d, open(sys.argv[2], "w"))
EOF
json npm-verify-failed 1 "$vt" provenance "${npm[@]}" --lock lock.json --json
# a python3 (-I -S: only the imports below) that imported foo, a distribution
# with its RECORD, and helper, from outside every distribution; then helper required
mkdir -p site/foo site/foo-1.0.dist-info outside
printf 'X = 1\n' > site/foo/__init__.py
printf 'H = 3\n' > outside/helper.py
printf 'Name: foo\n' > site/foo-1.0.dist-info/METADATA
"$py" - <<'EOF' || bad "could not write foo's RECORD"
import base64, hashlib
rows = []
for p in ["foo/__init__.py", "foo-1.0.dist-info/METADATA"]:
    b = open("site/" + p, "rb").read()
    d = base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b"=").decode()
    rows.append("%s,sha256=%s,%d" % (p, d, len(b)))
rows.append("foo-1.0.dist-info/RECORD,,")
open("site/foo-1.0.dist-info/RECORD", "w").write("\n".join(rows) + "\n")
EOF
for x in "imports.json foo" "imports-req.json foo helper"; do
    # shellcheck disable=SC2086 # x: the file, then the packages required
    "$py" -B -I -S -c 'import sys; sys.path[:0] = ["site", "outside", sys.argv[1]]; import foo, helper, vt_imports
vt_imports.write(sys.argv[2], sys.argv[3:])' "$src/oracle/transformers" $x || bad "imports: $x"
done
json imports-verify 0 "$vt" provenance verify-imports imports.json --json
json imports-verify-failed 1 "$vt" provenance verify-imports imports-req.json --json

# Every document valid; every format met.
if ! "$py" "$validate" --root "$src" out/*.json > validate.txt 2>&1; then
    bad "validate_schema.py: $(grep -v '^ok ' validate.txt | head -5)"
fi
for f in vt.agree/1 vt.kld/1 vt.codec-list/1 vt.codec-check/1 vt.capture-summary/1 vt.manifest-verify/1 \
    vt.seal-verify/1 vt.wheel-verify/1 vt.npm-verify/1 vt.imports-verify/1; do
    grep -q "^ok .* $f\$" validate.txt || bad "no valid document of $f: $(head -c 400 validate.txt)"
done

# One defect per format, each rejected by its schema.
mkdir bad
"$py" - out bad <<'EOF' || bad "could not make the defective copies"
import json, os, sys
src, dst = sys.argv[1], sys.argv[2]
def drop(path):
    def f(d):
        *head, last = path
        for k in head:
            d = d[k]
        del d[last]
    return f
def put(path, value):
    def f(d):
        *head, last = path
        for k in head:
            d = d[k]
        d[last] = value
    return f
defects = {
    "agree": drop(["summary", "failed"]),                        # a required member removed
    "kld": put(["kld", "mean"], "0"),                            # a number as a string
    "codec-list": drop(["codecs", 0, "block_bytes"]),
    "codec-check": put(["types", 0, "passed"], "yes"),           # a boolean as a string
    "capture-summary": put(["seal"], 12),
    "manifest-verify": put(["files", 0, "status"], "fine"),      # outside the enum
    "seal-verify": drop(["verified"]),
    "wheel-verify": put(["verified"], False),                    # failed, yet no problem
    "npm-verify": drop(["lock", "integrity"]),
    "imports-verify": put(["runtime", 0, "kind"], "library"),
}
for name, defect in defects.items():
    with open(os.path.join(src, name + ".json")) as f:
        d = json.load(f)
    defect(d)
    with open(os.path.join(dst, name + ".json"), "w") as f:
        json.dump(d, f)
EOF
"$py" "$validate" --root "$src" --expect-invalid bad/*.json > invalid.txt 2>&1 ||
    bad "a defective copy accepted: $(grep -v '^rejected ' invalid.txt | head -5)"
for f in bad/*.json; do
    grep -q "^rejected $f vt\." invalid.txt || bad "$f: not rejected by its format's schema: $(grep "$f" invalid.txt)"
done

[ $fail = 0 ] && echo "json_tables: OK: $(ls out | wc -l) documents of 10 formats valid, 10 defective copies rejected"
exit $fail
