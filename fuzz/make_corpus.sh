#!/usr/bin/env bash
# Seed inputs for the fuzz targets, made by vt itself (nothing downloaded):
# fuzz/make_corpus.sh BUILD_DIR OUT_DIR writes OUT_DIR/<target>/<seed>, each
# small. The kept corpora under fuzz/corpus/ were made by it (and merged by
# libFuzzer); make fuzz starts each target from both.
set -euo pipefail
bin=$(cd "$1" && pwd)
mkdir -p "$2"
out=$(cd "$2" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
for t in fuzz_gguf fuzz_codec fuzz_tokenizer fuzz_capture fuzz_neartie fuzz_logits fuzz_topk fuzz_prompts \
    fuzz_wheel fuzz_wheel_record fuzz_npm fuzz_seal fuzz_manifest; do
    mkdir -p "$out/$t"
done

"$bin/vt" fixture make --preset codecs --rows 1 --cols 256 -o "$out/fuzz_gguf/codecs.gguf" > /dev/null
"$bin/vt" fixture make --preset tiny --weights Q8_0 -o t.gguf > /dev/null
head -2 "$src/fixtures/prompts/default16.jsonl" > p.jsonl
cp p.jsonl "$out/fuzz_prompts/two.jsonl"
printf '{"id":"t","tokens":[1,2,3]}\n{"id":"u","text":"caf\\u00e9 <|im_start|>"}\n' > "$out/fuzz_prompts/tokens.jsonl"
"$bin/vt-capture" --runner engine --model t.gguf --prompts p.jsonl --max-tokens 3 --repetitions 2 --top-k 4 \
    --no-timestamp --out c.json --logits-out c.logits --topk-out c.topk > /dev/null
"$bin/vt-capture" --runner engine --model t.gguf --score-prefix-of c.json --no-timestamp --out s.json > /dev/null
{ printf '\0'; cat c.json; } > "$out/fuzz_capture/capture.json"
{ printf '\1'; cat s.json; } > "$out/fuzz_capture/prefix.json"
{ printf '\2'; cat c.json; } > "$out/fuzz_capture/capture-resealed.json"
{ printf '\3'; cat s.json; } > "$out/fuzz_capture/prefix-resealed.json"
# fuzz_neartie: local, oracle (the engine against itself, another matmul) and the prefix
# scores, NUL-separated; no top-k side file, which the target could not give
for m in exact q8; do
    "$bin/vt-capture" --runner engine --matmul $m --model t.gguf --prompts p.jsonl --max-tokens 3 --repetitions 2 \
        --top-k 0 --no-timestamp --out nt-$m.json > /dev/null
done
"$bin/vt-capture" --runner engine --model t.gguf --score-prefix-of nt-exact.json --no-timestamp \
    --out nt-s.json > /dev/null
{ cat nt-exact.json; printf '\0'; cat nt-q8.json; printf '\0'; cat nt-s.json; } > "$out/fuzz_neartie/engine-vs-engine"
cp c.logits "$out/fuzz_logits/c.logits"
python3 - c.topk "$out/fuzz_topk/c.topk" << 'PY'
import struct, sys
b = open(sys.argv[1], "rb").read()
k = 4
positions = (len(b) - 16) // (k * 8)
open(sys.argv[2], "wb").write(struct.pack("<III", k, positions, 1280) + b)
PY
printf '\0Hello, world! 123' > "$out/fuzz_tokenizer/plain"
printf '\1<|im_start|>user\ncaf\xc3\xa9 \xe4\xbd\xa0\xe5\xa5\xbd<|im_end|>' > "$out/fuzz_tokenizer/special"
python3 - "$out" << 'PY'
import base64, gzip, hashlib, io, os, random, sys, tarfile, zipfile
out = sys.argv[1]
# codec blocks: one seed per codec index, four blocks of seeded random bytes (the target
# reads as many whole blocks as there are; 256 bytes cover every block size)
r = random.Random(1)
for i in range(40):
    open(os.path.join(out, "fuzz_codec", "codec-%02d" % i), "wb").write(bytes([i]) + bytes(r.randrange(256) for _ in range(4 * 256)))
files = {"w/__init__.py": b"x = 1\n", "w-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: w\nVersion: 1.0\n",
         "w-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: t\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
rec = "".join("%s,sha256=%s,%d\n" % (n, base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b"=").decode(),
                                    len(b)) for n, b in files.items()) + "w-1.0.dist-info/RECORD,,\n"
with zipfile.ZipFile(os.path.join(out, "fuzz_wheel", "w-1.0-py3-none-any.whl"), "w") as z:
    for n, b in files.items():
        z.writestr(zipfile.ZipInfo(n, (2020, 1, 1, 0, 0, 0)), b)
    z.writestr(zipfile.ZipInfo("w-1.0.dist-info/RECORD", (2020, 1, 1, 0, 0, 0)), rec)
# fuzz_wheel_record: the RECORD of the wheel the target makes (its two members), zipped (0) and
# installed (1)
members = {"w/__init__.py": b"x = 1\n", "w-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: w\nVersion: 1.0\n"}
rec = "".join("%s,sha256=%s,%d\n" % (n, base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b"=").decode(),
                                    len(b)) for n, b in members.items()) + "w-1.0.dist-info/RECORD,,\n"
for mode, name in ((0, "zipped"), (1, "installed")):
    open(os.path.join(out, "fuzz_wheel_record", name), "wb").write(bytes([mode]) + rec.encode())
open(os.path.join(out, "fuzz_wheel_record", "installed-quoted"), "wb").write(
    b'\1"w/__init__.py","sha256=nia_NpkRxFwkPGhBR7I_yeHc_PJX0pmhxjIBam_NM_Q","6"\r\n../site/w/x.pyc,,\r\n')
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as t:
    for n, b in (("package/package.json", b'{"name":"p","version":"1.0.0"}'), ("package/x.so", b"\x7fELF")):
        ti = tarfile.TarInfo(n)
        ti.size, ti.mtime = len(b), 0
        t.addfile(ti, io.BytesIO(b))
# gzip's header time 0: the same seed on every run
open(os.path.join(out, "fuzz_npm", "p.tgz"), "wb").write(gzip.compress(buf.getvalue(), mtime=0))
PY
mkdir ev && printf '{"schema":"x"}\n' > ev/a.json && printf 0123456789 > ev/b.bin
"$bin/vt-seal" create ev -o ev.tar.gz --attestation > /dev/null
{ printf '\0'; cat ev.tar.gz; } > "$out/fuzz_seal/verify.tar.gz"
{ printf '\1'; cat ev.tar.gz; } > "$out/fuzz_seal/extract.tar.gz"
{ printf '\2'; cat ev.tar.gz.seal.json; } > "$out/fuzz_seal/seal.json"
{ printf '\3'; cat ev.tar.gz.intoto.json; } > "$out/fuzz_seal/intoto.json"
printf 'model bytes' > m.bin
"$bin/vt" provenance manifest make m.bin -o m.json > /dev/null
cp m.json "$out/fuzz_manifest/m.json"
du -sh "$out" | sed 's/\t.*//; s/^/make_corpus: seeds /'
