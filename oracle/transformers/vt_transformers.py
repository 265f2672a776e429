"""The transformers runner's adapter (oracle/transformers_runner.h): Hugging
Face transformers with PyTorch on a CUDA device, driven by vt over a socket.

vt starts it as
    python3 -B -X pycache_prefix=EMPTY vt_transformers.py --fd 3 --model DIR
        --dtype f32|bf16 --attention eager|sdpa --device N --n-ctx N
where DIR is vt's export of the GGUF (vt export --safetensors). Protocol:
one JSON line per request and reply on fd 3; after an eval request its n
token ids (int32 little-endian), after an eval reply its rows x n_vocab
logits (float32 little-endian). Replies are {"ok": true, ...} or
{"ok": false, "error": "..."}.

    hello (unasked, once loaded): n_vocab, version, device, library, detail
    {"op": "reset"}                        forget the sequence (a new cache)
    {"op": "eval", "n": N, "all": 0|1}     append N tokens; every position's
                                           logits, or the last one's
    {"op": "imports", "path": P}           write vt.imports/1 to P
    {"op": "quit"}

vt does generation, scoring, sampling, hashing and the capture itself, as
for every runner: this file only computes next-token logits. Before the
model loads, the export's tokenizer (tokenizer.json, through transformers'
AutoTokenizer) must give vt's ids for the prompts in DIR/vt_tokens.json.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
import vt_imports  # noqa: E402  (first: what follows is what it lists)
import argparse  # noqa: E402
import json  # noqa: E402
import struct  # noqa: E402

REQUIRED = ["safetensors", "tokenizers", "torch", "transformers"]


class Channel:
    def __init__(self, fd):
        self.fd = fd
        self.buf = b""

    def read_exact(self, n):
        while len(self.buf) < n:
            chunk = os.read(self.fd, max(1 << 16, n - len(self.buf)))
            if not chunk:
                raise EOFError("vt closed the socket")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def read_line(self):
        while b"\n" not in self.buf:
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def write(self, obj, payload=b""):
        data = json.dumps(obj, sort_keys=True).encode() + b"\n" + payload
        view = memoryview(data)
        while view:
            n = os.write(self.fd, view)
            view = view[n:]


def check_tokenizer(transformers, model_dir):
    """vt's ids for the export's check prompts equal transformers' tokenizer's."""
    path = os.path.join(model_dir, "vt_tokens.json")
    with open(path) as f:
        check = json.load(f)
    tok = transformers.AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    for p in check["prompts"]:
        ids = tok(p["text"], add_special_tokens=bool(check.get("add_special", False)))["input_ids"]
        if list(ids) != list(p["ids"]):
            at = next((i for i, (a, b) in enumerate(zip(ids, p["ids"])) if a != b), min(len(ids), len(p["ids"])))
            raise ValueError("tokenizer: prompt %s: transformers' ids differ from vt's at position %d (%s vs %s)" %
                             (p["id"], at, ids[at:at + 3], p["ids"][at:at + 3]))
    return "%s: %d prompts, ids equal vt's" % (type(tok).__name__, len(check["prompts"]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fd", type=int, required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--dtype", choices=["f32", "bf16"], required=True)
    ap.add_argument("--attention", choices=["eager", "sdpa"], required=True)
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--n-ctx", type=int, default=512)
    a = ap.parse_args()
    ch = Channel(a.fd)
    try:
        import numpy
        import safetensors  # noqa: F401  (loaded by transformers; named so that it is verified)
        import tokenizers  # noqa: F401
        import torch
        import transformers

        if not torch.cuda.is_available():
            raise RuntimeError("torch sees no CUDA device")
        dev = torch.device("cuda", a.device)
        torch.cuda.set_device(dev)
        # Deterministic, and no reduced-precision shortcuts: every repeat the
        # same bits, products accumulated in F32.
        torch.use_deterministic_algorithms(True)
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
        torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
        tok_note = check_tokenizer(transformers, a.model)
        dtype = torch.float32 if a.dtype == "f32" else torch.bfloat16
        model = transformers.AutoModelForCausalLM.from_pretrained(
            a.model, dtype=dtype, attn_implementation=a.attention, local_files_only=True)
        model.to(dev).eval()
        got = next(model.parameters()).dtype
        if got != dtype:
            raise RuntimeError("the model loaded in %s: expected %s" % (got, dtype))
        impl = getattr(model.config, "_attn_implementation", None)
        if impl != a.attention:
            raise RuntimeError("attention implementation %s: expected %s" % (impl, a.attention))
        mod = sys.modules.get(type(model).__module__)
        fast = getattr(mod, "is_fast_path_available", None)
        linear = ""
        if fast is not None:
            linear = ", linear attention: %s" % ("fast path (flash-linear-attention, causal_conv1d)" if fast else
                                                 "transformers' PyTorch reference path (flash-linear-attention "
                                                 "and causal_conv1d not installed)")
        props = torch.cuda.get_device_properties(dev)
        n_vocab = int(model.config.vocab_size)
        detail = ("%s; torch %s, CUDA %s, cuDNN %s, numpy %s; dtype %s, attention %s%s; deterministic algorithms "
                  "%s, cudnn.deterministic %s, TF32 off, reduced-precision reductions off; KV cache DynamicCache "
                  "in the model's dtype; %s" %
                  (type(model).__name__, torch.__version__, torch.version.cuda, torch.backends.cudnn.version(),
                   numpy.__version__, str(dtype).replace("torch.", ""), impl, linear,
                   torch.are_deterministic_algorithms_enabled(), torch.backends.cudnn.deterministic, tok_note))
        ch.write({"ok": True, "n_vocab": n_vocab, "version": transformers.__version__,
                  "device": "%s (sm_%d%d), CUDA device %d" % (props.name, props.major, props.minor, a.device),
                  "library": os.path.dirname(os.path.realpath(transformers.__file__)), "detail": detail})
    except Exception as e:  # the reason goes to vt, which says it on one line
        ch.write({"ok": False, "error": "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")})
        return 2

    cache = None
    n_past = 0
    while True:
        req = ch.read_line()
        if req is None or req.get("op") == "quit":
            return 0
        op = req.get("op")
        try:
            if op == "reset":
                cache, n_past = None, 0
                ch.write({"ok": True})
            elif op == "eval":
                n, all_rows = int(req["n"]), bool(req["all"])
                ids = struct.unpack("<%di" % n, ch.read_exact(4 * n))
                if n_past + n > a.n_ctx:
                    raise ValueError("%d tokens after %d exceed n_ctx %d" % (n, n_past, a.n_ctx))
                x = torch.tensor([ids], dtype=torch.long, device=dev)
                with torch.inference_mode():
                    out = model(input_ids=x, past_key_values=cache, use_cache=True,
                                logits_to_keep=0 if all_rows else 1)
                cache = out.past_key_values
                n_past += n
                rows = out.logits[0].float().contiguous().cpu().numpy()
                if rows.shape != (n if all_rows else 1, n_vocab):
                    raise RuntimeError("logits of shape %s" % (rows.shape,))
                ch.write({"ok": True, "rows": int(rows.shape[0])}, rows.astype("<f4").tobytes())
            elif op == "imports":
                doc = vt_imports.write(req["path"], required=REQUIRED)
                ch.write({"ok": True, "modules": len(doc["modules"]), "objects": len(doc["objects"])})
            else:
                ch.write({"ok": False, "error": "op %r: expected reset, eval, imports or quit" % (op,)})
        except EOFError:
            return 0
        except Exception as e:
            ch.write({"ok": False, "error": "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")})


if __name__ == "__main__":
    sys.exit(main())
