"""What transformers offers here, and whether vt's exports load cleanly."""
import os, subprocess, sys, tempfile
import torch, transformers
import transformers.cache_utils as cu
print("transformers", transformers.__version__, "torch", torch.__version__, "CUDA", torch.version.cuda,
      "cuDNN", torch.backends.cudnn.version(), "python", sys.version.split()[0], sys.executable)
print("cache classes:", sorted(n for n in dir(cu) if n.endswith("Cache")))
for n in ("QuantoQuantizedCache", "HQQQuantizedCache", "QuantizedCache"):
    c = getattr(cu, n, None)
    if c is not None:
        print(" ", n, (c.__doc__ or "").strip().splitlines()[:2])
vt = os.environ["VT"] + "/vt"  # the vt whose export is loaded
for g in sys.argv[1:]:
    for dt in ("f32", "bf16"):
        d = tempfile.mkdtemp()
        r = subprocess.run([vt, "export", "--safetensors", d, "--dtype", dt, g], capture_output=True, text=True)
        print(r.stdout.strip(), r.stderr.strip())
        if r.returncode:
            continue
        print("  files:", sorted(os.listdir(d)))
        try:
            m, info = transformers.AutoModelForCausalLM.from_pretrained(d, output_loading_info=True, local_files_only=True,
                                                                        dtype=torch.float32 if dt == "f32" else torch.bfloat16)
            print("  ", type(m).__name__, "loading info:", {k: v for k, v in info.items() if v})
            rp = getattr(m.config, "rope_parameters", None)
            print("   rope_parameters", rp, "inv_freq", getattr(getattr(m.model, "rotary_emb", None), "inv_freq", torch.zeros(0)).numel())
            mod = sys.modules.get(type(m).__module__)
            print("   fast path:", getattr(mod, "is_fast_path_available", "n/a"))
        except Exception as e:
            print("   LOAD FAILED:", type(e).__name__, str(e)[:300])
        try:
            tok = transformers.AutoTokenizer.from_pretrained(d, local_files_only=True)
            print("   tokenizer", type(tok).__name__, tok("Hello world, 1234 — ünïcode!")["input_ids"])
        except Exception as e:
            print("   TOKENIZER FAILED:", type(e).__name__, str(e)[:300])
