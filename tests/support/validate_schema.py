#!/usr/bin/python3
"""Validates files vt wrote against the JSON Schema of their format, with an
independent validator: Debian's python3-jsonschema (Draft 2020-12), not vt's
own checker (capture/json_schema.c).

usage: validate_schema.py [--root SRC] FILE...
       validate_schema.py [--root SRC] --expect-invalid FILE...
       validate_schema.py [--root SRC] --check-schemas

A file's format: a JSON document's "schema" member, else its "format", else
(an in-toto statement) its "predicateType"; a binary side file by its magic
bytes and version (its header decoded into JSON first: decode_logits,
decode_topk). JSON is read strictly: UTF-8 only (no BOM, no lone surrogate),
no NaN or Infinity (nor a number too large for a double), no duplicate member
names, nothing after the value.

  FILE...            prints "ok FILE FORMAT" per valid file; "invalid FILE FORMAT
                     PATH: MESSAGE" per invalid one (exit 1); "unknown FILE: ..." for a
                     file whose format has no row in FORMATS, or that cannot be read
                     (exit 2: every file vt writes must have a schema)
  --expect-invalid   exit 0 only if every file is rejected, each with the reason
                     ("rejected FILE FORMAT PATH: MESSAGE"; "rejected FILE (unknown
                     format): ..." where no schema applies)
  --check-schemas    every schema of FORMATS is a valid Draft 2020-12 schema with a
                     description, every pointer resolves, and every *.schema.json of
                     the repository (outside build*/ and deps/) is in FORMATS

Adding a format: one row per format version in FORMATS, the schema file in
the module that owns the format (its "description" says which versions it
covers; older versions stay as frozen $defs: readers keep reading them).
"""
import json
import os
import subprocess
import struct
import sys

import jsonschema

# format id -> (schema file, relative to the repository root; JSON pointer of
# the subschema for that version: "#" for the whole schema).
FORMATS = {
    # captures and prefix scores (capture/capture.h); also vt's own schema
    "vt.capture/1": ("capture/vt.capture.schema.json", "#/$defs/capture_v1"),
    "vt.capture/2": ("capture/vt.capture.schema.json", "#/$defs/capture"),
    "vt.prefix-scores/1": ("capture/vt.capture.schema.json", "#/$defs/prefix_scores_v1"),
    "vt.prefix-scores/2": ("capture/vt.capture.schema.json", "#/$defs/prefix_scores_v2"),
    "vt.prefix-scores/3": ("capture/vt.capture.schema.json", "#/$defs/prefix_scores"),
    "vt.prefix-scores/4": ("capture/vt.capture.schema.json", "#/$defs/prefix_scores"),
    # binary side files, their headers decoded (decode_logits, decode_topk)
    "vt.logits/1": ("capture/vt.logits.schema.json", "#"),
    "vt.topk/1": ("capture/vt.topk.schema.json", "#"),
    # vt-neartie's report (compare/neartie_report.h) and its in-toto verdict
    "vt.neartie-report/1": ("compare/vt.neartie-report.schema.json", "#/$defs/report_v1"),
    "vt.neartie-report/2": ("compare/vt.neartie-report.schema.json", "#/$defs/report_v2"),
    "vt.neartie-report/3": ("compare/vt.neartie-report.schema.json", "#/$defs/report_v3"),
    "vt.neartie-report/4": ("compare/vt.neartie-report.schema.json", "#/$defs/report"),
    "https://in-toto.io/attestation/test-result/v0.1": ("compare/intoto-test-result.schema.json", "#"),
    # vt-seal (evidence/)
    "vt.seal/1": ("evidence/vt.seal.schema.json", "#"),
    "vt.seal.manifest/1": ("evidence/vt.seal-manifest.schema.json", "#"),
    "https://vt.dev/evidence/v1": ("evidence/vt.seal-attestation.schema.json", "#"),
    # provenance/
    "vt.manifest/1": ("provenance/vt.manifest.schema.json", "#"),
    "vt.runtime-identity/1": ("provenance/vt.runtime-identity.schema.json", "#"),
    # written by oracle/transformers/vt_imports.py, read by vt provenance verify-imports
    "vt.imports/1": ("oracle/transformers/vt.imports.schema.json", "#"),
    # vt export's vt_tokens.json (oracle/hf_export.c)
    "vt.token-check/1": ("oracle/vt.token-check.schema.json", "#"),
    # --json outputs of vt's subcommands (tools/)
    "vt.bench/1": ("tools/vt.bench.schema.json", "#/$defs/bench_v1"),
    "vt.bench/2": ("tools/vt.bench.schema.json", "#"),
    "vt.op-check/1": ("tools/vt.op-check.schema.json", "#"),
    "vt.gguf-info/1": ("tools/vt.gguf-info.schema.json", "#"),
    "vt.run/1": ("tools/vt.run.schema.json", "#"),
    # --json of the other tables a person reads (tools/json_out.h), each schema in the
    # module that computes what the table shows; tests/json_tables.sh runs them
    "vt.agree/1": ("compare/vt.agree.schema.json", "#"),
    "vt.kld/1": ("compare/vt.kld.schema.json", "#"),
    "vt.codec-list/1": ("engine/vt.codec-list.schema.json", "#"),
    "vt.codec-check/1": ("oracle/vt.codec-check.schema.json", "#"),
    "vt.seal-verify/1": ("evidence/vt.seal-verify.schema.json", "#"),
    "vt.manifest-verify/1": ("provenance/vt.manifest-verify.schema.json", "#"),
    "vt.wheel-verify/1": ("provenance/vt.wheel-verify.schema.json", "#"),
    "vt.npm-verify/1": ("provenance/vt.npm-verify.schema.json", "#"),
    "vt.imports-verify/1": ("provenance/vt.imports-verify.schema.json", "#"),
    "vt.capture-summary/1": ("capture/vt.capture-summary.schema.json", "#"),
}

DRAFT = "https://json-schema.org/draft/2020-12/schema"


class Unknown(Exception):
    """No schema applies: the file cannot be read, or its format has no row."""


class Invalid(Exception):
    """The file is not what its format says (a parse or decode failure)."""

    def __init__(self, message, fmt="?"):
        Exception.__init__(self, message)
        self.fmt = fmt


# ---- reading ----

def _no_constant(name):
    raise ValueError("%s: not JSON (no NaN or Infinity)" % name)


def _finite(text):
    x = float(text)
    if x in (float("inf"), float("-inf")):
        raise ValueError("%s: a number no double holds" % text)
    return x


def _no_duplicates(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            raise ValueError("member %s: duplicate name" % json.dumps(k))
        out[k] = v
    return out


def _check_text(value, path="$"):
    """Every string (and member name) encodes as UTF-8: no lone surrogate."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("%s: a lone surrogate in a string" % path)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _check_text(v, "%s[%d]" % (path, i))
    elif isinstance(value, dict):
        for k, v in value.items():
            _check_text(k, path)
            _check_text(v, "%s.%s" % (path, k))


def parse_json_strictly(data):
    if data.startswith(b"\xef\xbb\xbf"):
        raise ValueError("a UTF-8 byte order mark")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError("byte offset %d: not UTF-8" % e.start)
    doc = json.loads(text, parse_constant=_no_constant, parse_float=_finite, object_pairs_hook=_no_duplicates)
    _check_text(doc)
    return doc


def _latin1(b):
    return b.decode("latin-1")


LOGITS_MAGIC = b"VTLOGITS"
TOPK_MAGIC = b"VTTOPK\0\0"


def decode_logits(data):
    """capture/logits_file.h: a 16-byte header ("VTLOGITS", u32 version, u32
    0), then frames of a 28-byte header ("VTLF", u32 prompt, repeat,
    positions, vocab, u64 n_deflated) and n_deflated bytes each.
    trailing_bytes: what is left that does not make a whole frame."""
    if len(data) < 16:
        raise Invalid("header: %d bytes, expected 16" % len(data))
    version, reserved = struct.unpack_from("<II", data, 8)
    doc = {"magic": _latin1(data[:8]), "version": version, "reserved": reserved, "frames": []}
    off = 16
    while len(data) - off >= 28:
        magic = data[off:off + 4]
        prompt, repeat, positions, vocab, n = struct.unpack_from("<IIIIQ", data, off + 4)
        if n > len(data) - off - 28:
            break
        doc["frames"].append({"magic": _latin1(magic), "prompt": prompt, "repeat": repeat,
                              "positions": positions, "vocab": vocab, "n_deflated": n})
        off += 28 + n
    doc["trailing_bytes"] = len(data) - off
    return doc


def decode_topk(data):
    """capture/topk_file.h: a 16-byte header ("VTTOPK\\0\\0", u32 version, u32
    k), then positions x k entries of 8 bytes (i32 id, f32 log-prob).
    remainder_bytes: what does not make a whole position of k entries."""
    if len(data) < 16:
        raise Invalid("header: %d bytes, expected 16" % len(data))
    version, k = struct.unpack_from("<II", data, 8)
    body = len(data) - 16
    row = 8 * k
    return {"magic": _latin1(data[:8]), "version": version, "k": k,
            "positions": body // row if row else 0, "remainder_bytes": body % row if row else body}


# magic -> (format family, decoder); the version in the header completes the id
BINARY = [(LOGITS_MAGIC, "vt.logits", decode_logits), (TOPK_MAGIC, "vt.topk", decode_topk)]


def load(path):
    """(format id, document) of a file; Unknown or Invalid if not."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise Unknown("cannot read: %s" % e.strerror)
    for magic, family, decode in BINARY:
        if data.startswith(magic):
            version = struct.unpack_from("<I", data, 8)[0] if len(data) >= 12 else None
            fmt = "%s/%s" % (family, version)
            if fmt not in FORMATS:
                raise Unknown("%s header with version %s: no schema for %s" % (family, version, fmt))
            try:
                return fmt, decode(data)
            except Invalid as e:
                raise Invalid(str(e), fmt)
    if not data.lstrip(b" \t\r\n").startswith((b"{", b"[")) and not path.endswith(".json"):
        raise Unknown("neither JSON nor a side file vt knows (magic %r)" % data[:8])
    try:
        doc = parse_json_strictly(data)
    except ValueError as e:
        raise Invalid("not strict JSON: %s" % e)
    fmt = None
    if isinstance(doc, dict):
        for key in ("schema", "format"):
            if isinstance(doc.get(key), str):
                fmt = doc[key]
                break
        if fmt is None and str(doc.get("_type", "")).startswith("https://in-toto.io/Statement/") \
                and isinstance(doc.get("predicateType"), str):
            fmt = doc["predicateType"]
    if fmt is None:
        raise Unknown("no \"schema\", \"format\" or \"predicateType\" member names its format")
    if fmt not in FORMATS:
        raise Unknown("format %s: not in the table (tests/support/validate_schema.py FORMATS)" % fmt)
    return fmt, doc


# ---- validating ----

_validators = {}


def validator(root, fmt):
    """A Draft 2020-12 validator of fmt's subschema: its pointer is the $ref
    of a copy of the schema, so that the schema's own refs resolve alike."""
    if fmt in _validators:
        return _validators[fmt]
    rel, pointer = FORMATS[fmt]
    try:
        with open(os.path.join(root, rel), "rb") as f:
            schema = parse_json_strictly(f.read())
    except (OSError, ValueError) as e:
        raise Unknown("%s's schema %s: %s" % (fmt, rel, getattr(e, "strerror", None) or e))
    if pointer != "#":
        schema = {k: v for k, v in schema.items() if k in ("$schema", "$id", "$defs")}
        schema["$ref"] = pointer
    v = jsonschema.Draft202012Validator(schema)
    _validators[fmt] = v
    return v


def json_path(error):
    p = "$"
    for part in error.absolute_path:
        p += "[%d]" % part if isinstance(part, int) else ".%s" % part
    return p


def first_error(v, doc):
    """The deepest, then first, failure: the one that names the member at fault."""
    errors = list(v.iter_errors(doc))
    if not errors:
        return None
    best = jsonschema.exceptions.best_match(errors)
    msg = best.message
    if len(msg) > 300:
        msg = msg[:297] + "..."
    return "%s: %s" % (json_path(best), msg)


def check(root, path):
    """('ok'|'invalid'|'unknown', format or None, reason or None)"""
    try:
        fmt, doc = load(path)
        v = validator(root, fmt)
    except Unknown as e:
        return "unknown", None, str(e)
    except Invalid as e:
        return "invalid", e.fmt, "$: %s" % e
    why = first_error(v, doc)
    return ("invalid", fmt, why) if why else ("ok", fmt, None)


def schema_files(root):
    """The tree's *.schema.json files: git's view where root is a checkout (tracked, and untracked but not
    ignored: copies of the tree kept under ignored folders are not the tree's), else a walk past build*,
    deps and .git."""
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard",
                              "--", "*.schema.json"], capture_output=True, check=True).stdout
        return sorted({os.path.normpath(x) for x in out.decode("utf-8").split("\0") if x})
    except (OSError, subprocess.CalledProcessError):
        pass
    found = []
    for d, dirs, files in os.walk(root):
        rel_d = os.path.relpath(d, root)
        dirs[:] = sorted(x for x in dirs if not (rel_d == "." and (x.startswith("build") or x in ("deps", ".git"))))
        found += [os.path.normpath(os.path.join(rel_d, n)) for n in files if n.endswith(".schema.json")]
    return sorted(found)


def check_schemas(root):
    bad = 0
    for fmt, (rel, pointer) in sorted(FORMATS.items()):
        try:
            with open(os.path.join(root, rel), "rb") as f:
                schema = parse_json_strictly(f.read())
            jsonschema.Draft202012Validator.check_schema(schema)
            if schema.get("$schema") != DRAFT:
                raise ValueError("$schema: expected %s" % DRAFT)
            if not isinstance(schema.get("description"), str):
                raise ValueError("no description (which versions it covers)")
            node = schema
            if pointer != "#":
                for part in pointer[2:].split("/"):
                    node = node[part.replace("~1", "/").replace("~0", "~")]
            validator(root, fmt)
        except (OSError, ValueError, KeyError, jsonschema.exceptions.SchemaError) as e:
            print("bad schema %s %s%s: %s" % (fmt, rel, "" if pointer == "#" else pointer,
                                              getattr(e, "message", None) or e))
            bad += 1
    used = {rel for rel, _ in FORMATS.values()}
    for rel in schema_files(root):
        if rel not in used:
            print("unused schema %s: no row of FORMATS names it" % rel)
            bad += 1
    if not bad:
        print("ok %d formats, %d schema files" % (len(FORMATS), len(used)))
    return 1 if bad else 0


def main(argv):
    root = "."
    mode = "validate"
    files = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--root" and i + 1 < len(argv):
            root = argv[i + 1]
            i += 2
            continue
        if a == "--expect-invalid":
            mode = "expect-invalid"
        elif a == "--check-schemas":
            mode = "check-schemas"
        elif a.startswith("--"):
            print("validate_schema.py: %s: expected --root SRC, --expect-invalid or --check-schemas" % a,
                  file=sys.stderr)
            return 2
        else:
            files.append(a)
        i += 1
    if mode == "check-schemas":
        return check_schemas(root)
    if not files:
        print("usage: validate_schema.py [--root SRC] [--expect-invalid | --check-schemas] FILE...",
              file=sys.stderr)
        return 2
    rc = 0
    for path in files:
        state, fmt, why = check(root, path)
        if mode == "expect-invalid":
            if state == "ok":
                print("accepted %s %s: expected it rejected" % (path, fmt))
                rc = 1
            elif state == "invalid":
                print("rejected %s %s %s" % (path, fmt, why))
            else:
                print("rejected %s (unknown format): %s" % (path, why))
        elif state == "ok":
            print("ok %s %s" % (path, fmt))
        elif state == "invalid":
            print("invalid %s %s %s" % (path, fmt, why))
            rc = max(rc, 1)
        else:
            print("unknown %s: %s" % (path, why))
            rc = 2
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
