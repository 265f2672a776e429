"""A sealed vt document (capture, prefix scores) with bytes replaced and its
seal recomputed, as anyone can: the seal is the SHA-256 of the bytes before
,"seal":" followed by "}" (capture/capture_read.h). Seals prove the bytes,
not their honesty; tests use this to reach the checks after the seal.
usage: reseal.py IN OUT OLD NEW [OLD NEW ...]  (each OLD occurs exactly once)"""
import hashlib
import sys

src, dst, pairs = sys.argv[1], sys.argv[2], sys.argv[3:]
if len(pairs) % 2:
    sys.exit("reseal.py: OLD NEW pairs expected")
t = open(src, "rb").read()
for old, new in zip(pairs[0::2], pairs[1::2]):
    old, new = old.encode(), new.encode()
    if t.count(old) != 1:
        sys.exit("reseal.py: %s: %r occurs %d times: expected once" % (src, old, t.count(old)))
    t = t.replace(old, new)
tail = len(',"seal":"') + 64 + len('"}\n')
if t[-tail:-tail + 9] != b',"seal":"':
    sys.exit("reseal.py: %s: no seal member at the end" % src)
body = t[:-tail] + b"}"
open(dst, "wb").write(t[:-tail] + b',"seal":"' + hashlib.sha256(body).hexdigest().encode() + b'"}\n')
