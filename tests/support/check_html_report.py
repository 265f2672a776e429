#!/usr/bin/env python3
"""Checks vt-neartie's HTML page as a browser rendered it (tests/html_report.sh).

usage: check_html_report.py REPORT.json DOM.html [SHOT.png]

DOM.html is headless Chromium's --dump-dom of the page, SHOT.png its
--screenshot. Checked:
  - one strip (figure.strip) per prompt of the JSON report, in its order,
    each with the prompt's class, its positions, and one cell (g.pos) per
    position;
  - the totals table's values (data-value) equal the report's totals, the
    verdict its gate, the seal shown its seal, the per-prompt table one row
    per prompt with the report's class;
  - the histogram's bins add up to the positions, bin 0 to the zero gaps;
  - nothing that would run or load: no script element, no on* attribute, no
    src, no link, no href but to an anchor of the page, no URL but the SVG
    namespace;
  - the screenshot is not blank: ink (pixels not near-white) over 2% of the
    page, at least 16 colours, the zero-gap colour of the strips present, and
    the near-tie colours where the report has near-tie gaps.
Exit 0 and one line "html: OK: ..." when all hold; else 1 and a line per
failure. Only the standard library: the PNG is decoded here (zlib).
"""
import html.parser
import json
import struct
import sys
import zlib


class Dom(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.strips = []          # [{attrs, cells}]
        self.totals = {}          # key -> data-value
        self.rows = []            # per-prompt table rows' classes
        self.bins = []            # histogram counts
        self.scripts = 0
        self.bad_attrs = []
        self.in_prompts = False
        self.seal = None
        self.verdict = None
        self._capture = None      # ("seal"|"verdict", text parts)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        cls = (a.get("class") or "").split()
        if tag == "script":
            self.scripts += 1
        if tag in ("link", "iframe", "object", "embed", "img", "base"):
            self.bad_attrs.append(f"<{tag}>")
        for k, v in attrs:
            v = v or ""
            if k.startswith("on") or k == "src" or k == "srcset":
                self.bad_attrs.append(f"<{tag} {k}>")
            if k == "href" and not v.startswith("#"):
                self.bad_attrs.append(f"<{tag} href={v!r}>")
            if ("http:" in v or "https:" in v or "//" in v) and not (k == "xmlns" and v == "http://www.w3.org/2000/svg"):
                if not (tag == "meta" and k == "content"):
                    self.bad_attrs.append(f"<{tag} {k}={v[:60]!r}>")
        if tag == "figure" and "strip" in cls:
            self.strips.append({"attrs": a, "cls": cls, "cells": 0})
        if tag == "g" and "pos" in cls and self.strips:
            self.strips[-1]["cells"] += 1
        if tag == "td" and "data-total" in a:
            self.totals[a["data-total"]] = a.get("data-value")
        if tag == "table" and a.get("id") == "prompts":
            self.in_prompts = True
        if tag == "tr" and self.in_prompts and cls:
            self.rows.append(cls[0])
        if tag == "g" and "bin" in cls:
            self.bins.append(int(a["data-count"]))
        if a.get("id") == "report-seal":
            self._capture = ("seal", [])
        if a.get("id") == "verdict":
            self._capture = ("verdict", [])

    def handle_endtag(self, tag):
        if tag == "table":
            self.in_prompts = False
        if self._capture and tag in ("code", "span"):
            setattr(self, self._capture[0], "".join(self._capture[1]).strip())
            self._capture = None

    def handle_data(self, data):
        if self._capture:
            self._capture[1].append(data)


def png_pixels(path):
    """(width, height, rows of RGB tuples) of an 8-bit RGB or RGBA PNG."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, ctype, _, _, interlace = ihdr
    if depth != 8 or ctype not in (2, 6) or interlace:
        raise ValueError(f"PNG kind depth {depth} type {ctype} interlace {interlace}: not decoded here")
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(idat)
    stride = w * bpp
    prev = bytearray(stride)
    rows = []
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            up = prev[i]
            ul = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + left) & 255
            elif f == 2:
                line[i] = (line[i] + up) & 255
            elif f == 3:
                line[i] = (line[i] + ((left + up) >> 1)) & 255
            elif f == 4:
                p = left + up - ul
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - ul)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else ul)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


def main():
    if len(sys.argv) not in (3, 4):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    report = json.load(open(sys.argv[1], encoding="utf-8"))
    dom = Dom()
    dom.feed(open(sys.argv[2], encoding="utf-8").read())
    fails = []
    prompts, tot = report["prompts"], report["totals"]
    if len(dom.strips) != len(prompts):
        fails.append(f"{len(dom.strips)} strips: expected one per prompt, {len(prompts)}")
    for i, (s, p) in enumerate(zip(dom.strips, prompts)):
        a = s["attrs"]
        if a.get("data-prompt") != str(i) or p["class"] not in s["cls"]:
            fails.append(f"strip {i}: prompt {a.get('data-prompt')} class {s['cls']}: expected {i} {p['class']}")
        if a.get("data-positions") != str(p["positions"]) or s["cells"] != p["positions"]:
            fails.append(f"strip {i}: {a.get('data-positions')} positions, {s['cells']} cells: expected {p['positions']}")
    if dom.rows != [p["class"] for p in prompts]:
        fails.append(f"prompts table classes {dom.rows[:20]}: expected the report's")
    for k in ("prompts", "strict", "near_tie_only", "within_noise", "failed", "positions", "zero_gaps",
              "within_gaps", "above_gaps", "within_noise_gaps", "beyond_noise_gaps", "max_gap_mnats",
              "scorer_disagreements"):
        v = dom.totals.get(k)
        if v is None or float(v) != float(tot[k]):
            fails.append(f"totals {k}: page {v}: expected the report's {tot[k]}")
    if dom.seal != report["seal"]:
        fails.append(f"seal on the page {dom.seal}: expected the report's {report['seal']}")
    want = "gate passed" if report["gate"]["passed"] else "gate FAILED"
    if dom.verdict != want:
        fails.append(f"verdict {dom.verdict!r}: expected {want!r}")
    if sum(dom.bins) != tot["positions"] or not dom.bins or dom.bins[0] != tot["zero_gaps"]:
        fails.append(f"histogram bins {dom.bins}: expected {tot['positions']} in all, {tot['zero_gaps']} in bin 0")
    if dom.scripts:
        fails.append(f"{dom.scripts} script elements: expected none")
    if dom.bad_attrs:
        fails.append(f"what would run or load: {dom.bad_attrs[:5]}")
    shot = ""
    if len(sys.argv) == 4:
        w, h, bpp, rows = png_pixels(sys.argv[3])
        ink, colours, zero, tie = 0, set(), 0, 0
        for row in rows:
            for x in range(0, w * bpp, bpp):
                r, g, b = row[x], row[x + 1], row[x + 2]
                if r < 235 or g < 235 or b < 235:
                    ink += 1
                colours.add((r >> 4, g >> 4, b >> 4))
                zero += (r, g, b) == (0xdc, 0xe9, 0xd5)
                tie += r >= 0xe0 and 0x50 <= g <= 0xe6 and b <= 0x8a and r - b > 0x60
        frac = ink / (w * h)
        if frac < 0.02 or len(colours) < 16:
            fails.append(f"screenshot {w}x{h}: {100 * frac:.2f}% ink, {len(colours)} colours: expected a page "
                         f"(at least 2% ink and 16 colours), not a blank")
        if zero < 50:
            fails.append(f"screenshot: {zero} pixels of the zero-gap colour: expected the strips")
        if tot["within_gaps"] > 0 and tie < 20:
            fails.append(f"screenshot: {tie} pixels of near-tie colours: expected the report's "
                         f"{tot['within_gaps']} near ties")
        shot = f"; screenshot {w}x{h}: {100 * frac:.1f}% ink, {len(colours)} colours, {zero} zero-gap and {tie} near-tie pixels"
    for f in fails:
        print(f"html: FAIL: {f}")
    if fails:
        return 1
    print(f"html: OK: {len(dom.strips)} strips (one per prompt, {sum(s['cells'] for s in dom.strips)} cells), "
          f"{len(dom.totals)} totals equal to the report's, seal {report['seal'][:12]}, verdict {want!r}, "
          f"histogram {dom.bins}, no script or load{shot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
