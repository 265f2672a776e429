"""A stand-in for oracle/transformers/vt_transformers.py in tests without
torch (CI): the same protocol over fd 3, logits computed from the token
ids by a fixed formula, n_vocab from the export's config.json. It imports
nothing of torch or transformers, so a capture through it must never pass
the strict gate's package rule. FAKE_DIE_AFTER=N: exit after N evals."""
import argparse
import json
import math
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.environ["VT_SOURCE_DIR"], "oracle", "transformers"))
import vt_imports  # noqa: E402

ap = argparse.ArgumentParser()
for k in ("--fd", "--model", "--dtype", "--attention", "--device", "--n-ctx"):
    ap.add_argument(k)
a = ap.parse_args()
fd = int(a.fd)
buf = b""


def read(n):
    global buf
    while len(buf) < n:
        c = os.read(fd, 65536)
        if not c:
            sys.exit(0)
        buf += c
    out, buf = buf[:n], buf[n:]
    return out


def line():
    global buf
    while b"\n" not in buf:
        c = os.read(fd, 65536)
        if not c:
            sys.exit(0)
        buf += c
    ln, buf = buf.split(b"\n", 1)
    return json.loads(ln)


def write(obj, payload=b""):
    os.write(fd, json.dumps(obj).encode() + b"\n" + payload)


with open(os.path.join(a.model, "config.json")) as f:
    nv = json.load(f)["vocab_size"]
write({"ok": True, "n_vocab": nv, "version": "0-fake", "device": "no GPU (fake adapter)",
       "library": os.path.realpath(__file__), "detail": "fake adapter, dtype %s, attention %s" % (a.dtype, a.attention)})
# One fixed row, rotated by a hash of the sequence: cheap at any n_vocab.
base = struct.pack("<%df" % nv, *[math.sin(v * 0.37) * 4.0 for v in range(nv)])
seq = []
evals = 0
die = int(os.environ.get("FAKE_DIE_AFTER", "-1"))
while True:
    r = line()
    if r["op"] == "quit":
        break
    if r["op"] == "reset":
        seq = []
        write({"ok": True})
    elif r["op"] == "eval":
        ids = struct.unpack("<%di" % r["n"], read(4 * r["n"]))
        evals += 1
        if evals == die:
            sys.exit(3)
        rows = []
        for t in ids:
            seq.append(t)
            k = sum((i + 1) * x for i, x in enumerate(seq)) % nv
            rows.append(base[4 * k:] + base[:4 * k])
        if not r["all"]:
            rows = rows[-1:]
        write({"ok": True, "rows": len(rows)}, b"".join(rows))
    elif r["op"] == "imports":
        doc = vt_imports.write(r["path"], required=["safetensors", "tokenizers", "torch", "transformers"])
        write({"ok": True, "modules": len(doc["modules"]), "objects": len(doc["objects"])})
