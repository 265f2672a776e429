#!/usr/bin/env bash
# Issue 19, hostile input, first class: every input file vt opens, given as a
# FIFO, a directory, or a symbolic link to a FIFO, is refused with exit 2 and
# one stderr line naming the file and saying what was expected, and nothing
# is written. Each command runs under `timeout 60` (a watchdog, not a timing
# assert): exit 124 is a hang, reported as a failure. Side-file names recorded
# inside a capture ("../x", "/etc/passwd", a link) are refused before reading.
# Second class: an output that exists (without --overwrite) or that is one of
# the command's inputs (by path, symlink or hard link; even with --overwrite)
# is refused with exit 2 and the file keeps its bytes. Third: numbers, lists
# and single-valued options parsed strictly, sizes bounded by the inputs.
# usage: tests/hostile_inputs.sh BINDIR SOURCE_DIR
set -uo pipefail
bin=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
vt=$bin/vt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
fail=0
n_points=0
n_runs=0
bad() {
    echo "hostile_inputs: FAIL: $*" >&2
    fail=1
}

# ---- real documents to substitute into
"$vt" fixture make --preset tiny --weights Q8_0 -o t.gguf > /dev/null || { bad "fixture make"; exit 1; }
head -3 "$src/fixtures/prompts/default16.jsonl" > p.jsonl
cap=(--model t.gguf --prompts p.jsonl --max-tokens 6 --no-timestamp)
"$bin/vt-capture" --runner engine "${cap[@]}" --out e.json --logits-out e.logits > /dev/null &&
    "$bin/vt-capture" --runner llamacpp "${cap[@]}" --out o.json --logits-out o.logits > /dev/null &&
    "$bin/vt-capture" --runner llamacpp --model t.gguf --score-prefix-of e.json --out s.json --no-timestamp \
        > /dev/null || { bad "captures"; exit 1; }
nt=(--allow-unverified --allow-diff matmul)
"$bin/vt-neartie" --local e.json --oracle o.json --prefix-scores s.json "${nt[@]}" --out r.json > /dev/null
rc=$?
[ $rc = 0 ] || [ $rc = 1 ] || { bad "vt-neartie on the real documents: exit $rc"; exit 1; }
mkdir ev && cp e.json e.topk ev/ && "$bin/vt-seal" create ev -o ev.tar.gz --attestation > /dev/null ||
    { bad "seal create"; exit 1; }
head -c 4096 /dev/urandom > m.bin && "$vt" provenance manifest make m.bin -o m.json > /dev/null ||
    { bad "manifest make"; exit 1; }
printf '{"launcher":"hostile_inputs.sh","host":"ci","command":["vt-capture"]}\n' > l.json
printf 'The quick brown fox jumps over the lazy dog. %.0s' $(seq 60) > corpus.txt
mkdir pkg && echo '{}' > pkg/package.json && tar czf pkg.tgz pkg
lock=$src/oracle/llamacpp.lock.json
npm_tgz=$(ls "$src"/deps/npm/node-llama-cpp-[0-9]*.tgz 2> /dev/null | head -1)

# ---- the hostile files: h/<kind>/NAME, made on demand
# make_hostile KIND PATH: a FIFO, a directory, or a symbolic link to a FIFO
make_hostile() {
    rm -rf "$2"
    case $1 in
    fifo) mkfifo "$2" ;;
    directory) mkdir "$2" ;;
    symlink) mkfifo "$2.target" && ln -s "$(basename "$2").target" "$2" ;;
    esac
}

# probe NAME KINDS HOSTILE_PATH CMD...: CMD (with @H@ replaced by HOSTILE_PATH
# and @OUT@ by an empty output directory) must exit 2 within the watchdog,
# print one stderr line naming HOSTILE_PATH's file name with "expected", and
# leave @OUT@ empty. KINDS: which of fifo,directory,symlink apply.
probe() {
    local name=$1 kinds=$2 hpath=$3
    shift 3
    n_points=$((n_points + 1))
    local kind
    for kind in ${kinds//,/ }; do
        n_runs=$((n_runs + 1))
        local out=$work/out/$name.$kind
        rm -rf "$out" && mkdir -p "$out" "$(dirname "$hpath")"
        make_hostile "$kind" "$hpath"
        local args=() a
        for a in "$@"; do
            a=${a//@H@/$hpath}
            args+=("${a//@OUT@/$out}")
        done
        timeout 60 "${args[@]}" > "$out.stdout" 2> "$out.stderr" < /dev/null
        local rc=$?
        local base
        base=$(basename "$hpath")
        if [ $rc = 124 ] || [ $rc = 137 ]; then
            bad "$name ($kind): hung (killed by the 60 s watchdog): ${args[*]}"
        elif [ $rc != "${want_rc:-2}" ]; then
            bad "$name ($kind): exit $rc, expected ${want_rc:-2}: $(head -c 300 "$out.stderr")"
        elif [ "$(wc -l < "$out.stderr")" != 1 ]; then
            bad "$name ($kind): $(wc -l < "$out.stderr") stderr lines, expected one: $(head -c 400 "$out.stderr")"
        elif ! grep -q "$base.*expected" "$out.stderr" && ! { [ "${want_rc:-2}" = 1 ] &&
            grep -q "$base.*expected a regular file" "$out.stdout"; }; then
            bad "$name ($kind): stderr does not name $base and what was expected: $(cat "$out.stderr")"
        elif [ -n "$(ls -A "$out")" ]; then
            bad "$name ($kind): wrote $(ls -A "$out" | head -3 | tr '\n' ' ')"
        fi
        rm -rf "$hpath" "$hpath.target"
    done
}

all=fifo,directory,symlink
H=$work/h
# vt-neartie
probe neartie-local $all "$H/L.json" "$bin/vt-neartie" --local @H@ --oracle o.json --prefix-scores s.json "${nt[@]}" --out @OUT@/r.json
probe neartie-oracle $all "$H/O.json" "$bin/vt-neartie" --local e.json --oracle @H@ --prefix-scores s.json "${nt[@]}" --out @OUT@/r.json
probe neartie-prefix-scores $all "$H/S.json" "$bin/vt-neartie" --local e.json --oracle o.json --prefix-scores @H@ "${nt[@]}" --out @OUT@/r.json
# side files named inside a capture: the document copied beside a hostile one
mkdir -p side && cp e.json e.topk side/
probe side-logits-file $all "$work/side/e.logits" "$bin/vt-neartie" --local side/e.json --oracle o.json --prefix-scores s.json "${nt[@]}" --out @OUT@/r.json
mkdir -p side2 && cp e.json e.logits side2/
probe side-topk-file $all "$work/side2/e.topk" "$bin/vt-neartie" --local side2/e.json --oracle o.json --prefix-scores s.json "${nt[@]}" --out @OUT@/r.json
# vt-capture
ecap=(--runner engine --model t.gguf --max-tokens 2 --no-timestamp --out @OUT@/c.json)
probe capture-prompts $all "$H/P.jsonl" "$bin/vt-capture" --runner engine --model t.gguf --prompts @H@ --max-tokens 2 --no-timestamp --out @OUT@/c.json
probe capture-model $all "$H/M.gguf" "$bin/vt-capture" --runner engine --model @H@ --prompts p.jsonl --max-tokens 2 --no-timestamp --out @OUT@/c.json
probe capture-model-manifest $all "$H/MM.json" "$bin/vt-capture" "${ecap[@]}" --prompts p.jsonl --model-manifest @H@
probe capture-launcher-manifest $all "$H/LM.json" "$bin/vt-capture" "${ecap[@]}" --prompts p.jsonl --launcher-manifest @H@
probe capture-score-prefix-of $all "$H/SP.json" "$bin/vt-capture" --runner llamacpp --model t.gguf --score-prefix-of @H@ --no-timestamp --out @OUT@/s.json
probe capture-package $all "$H/pkg.tgz" "$bin/vt-capture" --runner llamacpp --model t.gguf --prompts p.jsonl --max-tokens 2 --no-timestamp --out @OUT@/c.json --package @H@
if [ -n "$npm_tgz" ]; then
    probe capture-lock $all "$H/lock.json" "$bin/vt-capture" --runner llamacpp --model t.gguf --prompts p.jsonl --max-tokens 2 --no-timestamp --out @OUT@/c.json --package "$npm_tgz" --lock @H@
else
    bad "capture-lock: no npm tarball under $src/deps/npm (run scripts/bootstrap)"
fi
probe capture-package-root fifo,symlink "$H/root" "$bin/vt-capture" --runner llamacpp --model t.gguf --prompts p.jsonl --max-tokens 2 --no-timestamp --out @OUT@/c.json --package "$npm_tgz" --package-root @H@
probe neartie-score-with-model $all "$H/sw.gguf" "$bin/vt-neartie" --local e.json --oracle o.json --score-with llamacpp --model @H@ "${nt[@]}" --out @OUT@/r.json
probe neartie-package $all "$H/np.tgz" "$bin/vt-neartie" --local e.json --oracle o.json --score-with llamacpp --model t.gguf --package @H@ "${nt[@]}" --out @OUT@/r.json
probe agree-model $all "$H/a.gguf" "$vt" agree --model @H@ --prompts 1 --max-tokens 1
# vt provenance
probe verify-npm-root fifo,symlink "$H/nroot" "$vt" provenance verify-npm "$npm_tgz" --lock "$lock" --name node-llama-cpp --root @H@ --loaded x.so
mkdir -p man && cp m.json man/
# A listed file that is not a regular file is a verification outcome, as a
# missing one is (exit 1, status "unreadable" in vt.manifest-verify/1), not
# bad input: exit 1, and its MISMATCH line on stdout says what it is.
want_rc=1 probe manifest-verify-listed $all "$work/man/m.bin" "$vt" provenance manifest verify man/m.json
probe manifest-verify $all "$H/MV.json" "$vt" provenance manifest verify @H@
probe verify-wheel $all "$H/w-1.0-py3-none-any.whl" "$vt" provenance verify-wheel @H@
probe verify-npm-tarball $all "$H/t.tgz" "$vt" provenance verify-npm @H@ --lock "$lock" --name node-llama-cpp
probe verify-npm-lock $all "$H/lock.json" "$vt" provenance verify-npm pkg.tgz --lock @H@ --name node-llama-cpp
probe verify-imports $all "$H/imports.json" "$vt" provenance verify-imports @H@
# vt-seal
# The archive itself: its seal beside it, so that the archive is what is read.
mkdir -p sealarch && cp ev.tar.gz.seal.json sealarch/
probe seal-verify $all "$work/sealarch/ev.tar.gz" "$bin/vt-seal" verify @H@
probe seal-verify-seal $all "$H/a.seal.json" "$bin/vt-seal" verify ev.tar.gz --seal @H@
mkdir -p sealdir && cp ev.tar.gz ev.tar.gz.seal.json sealdir/
probe seal-verify-intoto $all "$work/sealdir/ev.tar.gz.intoto.json" "$bin/vt-seal" verify sealdir/ev.tar.gz
probe seal-extract $all "$work/sealarch/ev.tar.gz" "$bin/vt-seal" extract @H@ -C @OUT@/x
probe seal-extract-seal $all "$H/x.seal.json" "$bin/vt-seal" extract ev.tar.gz --seal @H@ -C @OUT@/x
probe seal-create fifo,symlink "$H/dir" "$bin/vt-seal" create @H@ -o @OUT@/a.tar.gz
# vt
probe gguf-info $all "$H/g.gguf" "$vt" gguf info @H@
probe gguf-rewrite $all "$H/g.gguf" "$vt" gguf rewrite @H@ @OUT@/g2.gguf
probe kld-corpus $all "$H/corpus.txt" "$vt" kld --model t.gguf --corpus @H@ --ctx 32
probe kld-model $all "$H/k.gguf" "$vt" kld --model @H@ --corpus corpus.txt --ctx 32
probe export $all "$H/x.gguf" "$vt" export --safetensors @OUT@/st @H@
probe run-model $all "$H/r.gguf" "$vt" run --runner engine --model @H@ --prompt hi --max-tokens 1
probe run-plugin $all "$H/p.so" "$vt" run --runner plugin:@H@ --model t.gguf --prompt hi --max-tokens 1

# ---- names inside a capture: re-sealed (as anyone can), refused before reading
# forge NAME: e.json with logits_file.name set to NAME, its seal recomputed
forge() {
    python3 "$src/tests/support/reseal.py" e.json forged/e.json '"name":"e.logits"' "\"name\":\"$1\""
}
mkdir -p forged && cp e.topk forged/ && echo secret > forged/x && mkfifo forged/fifo
for name in "../x" "/etc/passwd" "sub/x" ".." 'e\u001b[31m.logits' "fifo"; do
    n_points=$((n_points + 1))
    n_runs=$((n_runs + 1))
    forge "$name" || { bad "forge $name"; continue; }
    rm -rf out/forged && mkdir -p out/forged
    timeout 60 "$bin/vt-neartie" --local forged/e.json --oracle o.json --prefix-scores s.json "${nt[@]}" \
        --out out/forged/r.json > /dev/null 2> forged.err < /dev/null
    rc=$?
    if [ $rc = 124 ]; then
        bad "logits_file.name $name: hung (killed by the 60 s watchdog)"
    elif [ $rc != 2 ] || [ "$(wc -l < forged.err)" != 1 ] || ! grep -q "e.json" forged.err ||
        ! grep -q "expected" forged.err; then
        bad "logits_file.name $name: exit $rc, expected 2 and one line naming the document: $(head -c 300 forged.err)"
    elif [ "$name" != fifo ] && ! grep -q "logits_file.name" forged.err; then
        bad "logits_file.name $name: the field is not named: $(cat forged.err)"
    elif [ -n "$(ls -A out/forged)" ]; then
        bad "logits_file.name $name: wrote $(ls -A out/forged)"
    fi
done

# a model manifest naming an absolute path: refused (relative names, '..'
# included, are its design)
n_points=$((n_points + 1))
n_runs=$((n_runs + 1))
mkdir -p abs && sed -E 's|"name": *"m.bin"|"name": "/etc/passwd"|' m.json > abs/m.json
grep -q '/etc/passwd' abs/m.json || bad "the absolute-name manifest was not made: $(head -c 200 abs/m.json)"
timeout 60 "$vt" provenance manifest verify abs/m.json > abs.out 2> abs.err
rc=$?
{ [ $rc = 2 ] && [ "$(wc -l < abs.err)" = 1 ] && grep -q 'abs/m.json: files\[0\].name: "/etc/passwd": expected' abs.err; } ||
    bad "manifest with an absolute name: exit $rc, expected 2 and one line: $(head -c 300 abs.err)"

# vt-capture refuses to write a side file outside the capture's directory
n_points=$((n_points + 1))
n_runs=$((n_runs + 1))
mkdir -p out/cap out/elsewhere
timeout 60 "$bin/vt-capture" --runner engine "${cap[@]}" --out out/cap/c.json --logits-out out/elsewhere/c.logits \
    > /dev/null 2> cap.err
rc=$?
{ [ $rc = 2 ] && grep -q "c.logits" cap.err && [ -z "$(find out/cap out/elsewhere -mindepth 1)" ]; } ||
    bad "--logits-out outside --out's directory: exit $rc, expected 2 and nothing written: $(head -c 300 cap.err)"

# verify-wheel --installed: a file of the installed tree, or its RECORD, that
# is a FIFO is a verification outcome (exit 1), told as what it is, never a hang
python3 - << 'EOF'
import base64, hashlib, os, zipfile
files = {"w/__init__.py": b"x = 1\n", "w-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: w\nVersion: 1.0\n",
         "w-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: t\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
rec = "".join("%s,sha256=%s,%d\n" % (n, base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b"=").decode(),
                                    len(b)) for n, b in files.items()) + "w-1.0.dist-info/RECORD,,\n"
with zipfile.ZipFile("w-1.0-py3-none-any.whl", "w") as z:
    for n, b in files.items():
        z.writestr(n, b)
    z.writestr("w-1.0.dist-info/RECORD", rec)
for n, b in list(files.items()) + [("w-1.0.dist-info/RECORD", rec.encode())]:
    os.makedirs(os.path.dirname("inst/" + n), exist_ok=True)
    open("inst/" + n, "wb").write(b)
EOF
"$vt" provenance verify-wheel w-1.0-py3-none-any.whl --installed inst > /dev/null ||
    bad "verify-wheel --installed on a good tree: exit $?"
for f in w/__init__.py w-1.0.dist-info/RECORD; do
    n_points=$((n_points + 1))
    n_runs=$((n_runs + 1))
    mv "inst/$f" "inst/$f.keep" && mkfifo "inst/$f"
    timeout 60 "$vt" provenance verify-wheel w-1.0-py3-none-any.whl --installed inst > wi.out 2> wi.err < /dev/null
    rc=$?
    { [ $rc = 1 ] && grep -q "$(basename "$f").*a FIFO: expected a regular file" wi.out; } ||
        bad "verify-wheel --installed with $f a FIFO: exit $rc, expected 1 and a PROBLEM line saying so:" \
            "$(head -c 300 wi.out) $(head -c 200 wi.err)"
    rm "inst/$f" && mv "inst/$f.keep" "inst/$f"
done

# ---- outputs: no clobber, no aliasing an input (DESIGN: safe publication)
# clobber NAME TARGET CMD...: TARGET exists (a file with known bytes); CMD,
# which would write TARGET, must exit 2 within the watchdog with one stderr
# line naming TARGET and saying what was expected, and TARGET must keep its
# bytes. For an alias, TARGET is one of CMD's inputs (or a link to one) and
# CMD carries --overwrite: an input is never replaced.
n_clobber=0
clobber() {
    local name=$1 target=$2
    shift 2
    n_clobber=$((n_clobber + 1))
    local before
    before=$(sha256sum < "$target")
    timeout 60 "$@" > clobber.out 2> clobber.err < /dev/null
    local rc=$?
    local base
    base=$(basename "$target")
    if [ $rc = 124 ]; then
        bad "clobber $name: hung"
    elif [ $rc != 2 ] || [ "$(wc -l < clobber.err)" != 1 ] || ! grep -q "$base.*expected" clobber.err; then
        bad "clobber $name: exit $rc, expected 2 and one line naming $base: $(head -c 300 clobber.err)"
    elif [ "$(sha256sum < "$target")" != "$before" ]; then
        bad "clobber $name: $target was changed"
    fi
    ls -A "$(dirname "$target")" | grep -q 'vt-tmp\|vt-bak\|\.tmp' && bad "clobber $name: a temp file was left"
}
mkdir -p nc && cd nc || exit 1
cp ../t.gguf ../m.bin ../p.jsonl ../e.json ../e.topk ../e.logits ../o.json ../o.topk ../o.logits ../s.json . &&
    echo old > old.txt
cp old.txt g.gguf && clobber gguf-rewrite g.gguf "$vt" gguf rewrite t.gguf g.gguf
clobber gguf-rewrite-in-place t.gguf "$vt" gguf rewrite t.gguf t.gguf --overwrite
ln -s t.gguf tl.gguf && clobber gguf-rewrite-symlink t.gguf "$vt" gguf rewrite t.gguf tl.gguf --overwrite
ln t.gguf th.gguf && clobber gguf-rewrite-hardlink t.gguf "$vt" gguf rewrite t.gguf th.gguf --overwrite
cp old.txt f.gguf && clobber fixture-make f.gguf "$vt" fixture make --preset codecs -o f.gguf
cp old.txt v.gguf && clobber fixture-make-vocab v.gguf "$vt" fixture make --preset tiny --vocab v.gguf -o v.gguf --overwrite
cp old.txt mm.json && clobber manifest-make mm.json "$vt" provenance manifest make m.bin -o mm.json
clobber manifest-make-own-input m.bin "$vt" provenance manifest make m.bin -o m.bin --overwrite
cp old.txt c.json && clobber capture c.json "$bin/vt-capture" --runner engine --model t.gguf --prompts p.jsonl \
    --max-tokens 2 --no-timestamp --out c.json
clobber capture-prompts p.jsonl "$bin/vt-capture" --runner engine --model t.gguf --prompts p.jsonl \
    --max-tokens 2 --no-timestamp --out p.jsonl --overwrite
cp old.txt r.json && clobber neartie r.json "$bin/vt-neartie" --local e.json --oracle o.json --prefix-scores s.json \
    "${nt[@]}" --out r.json
clobber neartie-local e.json "$bin/vt-neartie" --local e.json --oracle o.json --prefix-scores s.json \
    "${nt[@]}" --out e.json --overwrite
mkdir -p sd && cp e.json sd/ && cp old.txt a.tar.gz && clobber seal-create a.tar.gz "$bin/vt-seal" create sd -o a.tar.gz
# and with --overwrite each of these writes (the refusals above are not unconditional)
cp old.txt g.gguf && "$vt" gguf rewrite t.gguf g.gguf --overwrite && cmp -s t.gguf g.gguf ||
    bad "gguf rewrite --overwrite onto an existing file did not write IN's bytes"
cp old.txt mm.json && "$vt" provenance manifest make m.bin -o mm.json --overwrite > /dev/null &&
    grep -q '"m.bin"' mm.json || bad "manifest make --overwrite onto an existing file did not write"
cd .. || exit 1

# ---- strict options and bounds: each command line exits 2 with one line
# naming the option (or the input) and saying what was expected, writes
# nothing, and does not run (a hang or a long run is caught by the watchdog).
n_strict=0
strict() { # strict WHAT CMD...: WHAT must appear in the one stderr line
    local what=$1
    shift
    n_strict=$((n_strict + 1))
    rm -rf out/strict && mkdir -p out/strict
    timeout 60 "$@" > strict.out 2> strict.err < /dev/null
    local rc=$?
    if [ $rc = 124 ]; then
        bad "strict: hung: $*"
    elif [ $rc != 2 ] || [ "$(wc -l < strict.err)" != 1 ] || ! grep -qF -- "$what" strict.err ||
        ! grep -q "expected" strict.err; then
        bad "strict: exit $rc, expected 2 and one line naming '$what': $* -> $(head -c 300 strict.err)"
    elif [ -n "$(ls -A out/strict)" ]; then
        bad "strict: wrote $(ls -A out/strict): $*"
    fi
}
run=("$vt" run --runner engine --model t.gguf)
for v in " 5" "+5" "-0" "5 " "0x5" "5e0" ""; do
    strict "--max-tokens" "${run[@]}" --prompt hi --max-tokens "$v"
done
for v in "1,,2" "1,2," ",1" "1, 2" "+1" ""; do
    strict "--prompt-tokens" "${run[@]}" --prompt-tokens "$v" --max-tokens 1
done
strict "--score" "${run[@]}" --prompt-tokens 1,2 --score "3,,4"
for v in "inf" "nan" "0x10" " 5" "+5" "-1" "1e999"; do
    strict "--threshold-mnats" "$bin/vt-neartie" --local e.json --oracle o.json --prefix-scores s.json "${nt[@]}" \
        --threshold-mnats "$v" --out out/strict/r.json
    strict "--temperature" "${run[@]}" --prompt hi --max-tokens 1 --temperature "$v"
done
strict "-o" "$bin/vt-neartie" --local e.json --oracle o.json --prefix-scores s.json "${nt[@]}" \
    --out out/strict/a.json -o out/strict/b.json
strict "--out" "$bin/vt-capture" --runner engine --model t.gguf --prompts p.jsonl --max-tokens 2 --no-timestamp \
    --out out/strict/a.json --out out/strict/b.json
strict "--model" "${run[@]}" --model t.gguf --prompt hi --max-tokens 1
strict "--max-tokens" "${run[@]}" --prompt hi --max-tokens 1 --max-tokens 2
strict "--level" "$bin/vt-seal" create ev -o out/strict/a.tar.gz --level 1 --level 2
strict "-o" "$vt" fixture make --preset codecs -o out/strict/a.gguf -o out/strict/b.gguf
strict "--base" "$vt" provenance manifest verify m.json --base . --base .
strict "--lock" "$vt" provenance verify-npm pkg.tgz --lock "$lock" --lock "$lock" --name node-llama-cpp
strict "--types" "$vt" codec check --types Q8_0,,Q4_0
strict "--types" "$vt" codec check --types Q8_0,Q8_0
strict "--types" "$vt" op check --types ,Q8_0
strict "--rows" "$vt" codec check --types Q8_0 --rows 16777216 --cols 1048576
strict "--rows" "$vt" op check --types Q8_0 --kinds random --rows 65536 --cols 65536
# bounds from the inputs: the tiny fixture's context is 2048 tokens
ids=$(seq 2040 | awk '{ printf "%s%d", (NR > 1 ? "," : ""), $1 % 1000 }')
strict "context length 2048" "${run[@]}" --prompt-tokens "$ids" --max-tokens 16
printf '{"id":"long","tokens":[%s]}\n' "$ids" > long.jsonl
strict "context length 2048" "$bin/vt-capture" --runner engine --model t.gguf --prompts long.jsonl \
    --max-tokens 16 --no-timestamp --out out/strict/c.json
strict "context length 2048" "$bin/vt-capture" --runner engine --model t.gguf --prompts p.jsonl \
    --max-tokens 4096 --no-timestamp --out out/strict/c.json
strict "context length 2048" "$vt" kld --model t.gguf --corpus corpus.txt --ctx 4096

[ $fail = 0 ] && echo "hostile_inputs: OK: $n_points entry points x {fifo, directory, symlink} ($n_runs runs)" \
    "refused with exit 2, nothing written, none hung; $n_clobber outputs onto an existing file or an input" \
    "refused, nothing changed; $n_strict command lines with a lenient number, list, repeated option or" \
    "unbounded size refused"
exit $fail
