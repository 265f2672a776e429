"""What this Python process has imported, as vt.imports/1, for
`vt provenance verify-imports` (provenance/imports.c): every module with a
file (sys.modules), every shared object mapped into the process
(/proc/self/maps), and the site directories whose *.dist-info RECORDs vt
checks them against. Imported first and called last by the transformers
adapter, so that the list is of what the capture really ran.

    import vt_imports
    ...
    vt_imports.write("imports.json", required=["torch", "transformers", "safetensors", "tokenizers"])
"""
import json
import os
import site
import sys

SCHEMA = "vt.imports/1"


def _sites():
    dirs = []
    for d in list(getattr(site, "getsitepackages", lambda: [])()) + [site.getusersitepackages()] + sys.path:
        if d and os.path.isdir(d) and any(n.endswith(".dist-info") for n in os.listdir(d)):
            r = os.path.realpath(d)
            if r not in dirs:
                dirs.append(r)
    return dirs


def _modules():
    out = []
    for name, mod in sorted(sys.modules.items()):
        path = getattr(mod, "__file__", None)
        if isinstance(path, str) and os.path.isfile(path):
            out.append({"name": name, "path": os.path.realpath(path)})
    return out


def _objects():
    seen = []
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) == 6:
                    p = parts[5].strip()
                    if p.startswith("/") and ".so" in os.path.basename(p) and os.path.isfile(p):
                        r = os.path.realpath(p)
                        if r not in seen:
                            seen.append(r)
    except OSError:
        pass
    return sorted(seen)


def collect(required):
    return {"schema": SCHEMA, "sites": _sites(), "required": sorted(required), "modules": _modules(),
            "objects": _objects()}


def write(path, required):
    doc = collect(required)
    tmp = path + ".tmp-%d" % os.getpid()
    with open(tmp, "x") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")
    os.link(tmp, path)  # refuses an existing file: no clobber
    os.unlink(tmp)
    return doc
