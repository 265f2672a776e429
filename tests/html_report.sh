#!/usr/bin/env bash
# vt-neartie --html as a person sees it: a comparison with strict, near-tie
# and failed prompts (tiny Q2_K: the engine's exact matmul against llama.cpp,
# both with full logits, scored in two shapes), one prompt id hostile HTML;
# the page rendered by headless Chromium (Debian's chromium, installed by
# scripts/bootstrap): a screenshot that is not blank (pixel statistics) and
# the rendered DOM holding one strip per prompt and the JSON report's totals
# (tests/support/check_html_report.py says what it checks). Then: the checker
# refuses a blank page, a strip removed and a total changed; the page is
# published with the report as a group (nothing when one output exists);
# vt-seal takes it in like any file; --json prints the report itself.
# usage: tests/html_report.sh BINDIR SOURCE_DIR
set -uo pipefail
bin=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
check=$src/tests/support/check_html_report.py
work=$(mktemp -d)
trap '[ -n "${VT_KEEP_HTML_TEST:-}" ] && cp "$work"/r.html "$work"/shot.png "$VT_KEEP_HTML_TEST"/; rm -rf "$work"' EXIT
cd "$work" || exit 1
fail=0
bad() {
    echo "html_report: FAIL: $*" >&2
    fail=1
}
browser=$(command -v chromium || command -v chromium-browser || true)
[ -n "$browser" ] || { echo "html_report: FAIL: no chromium (scripts/bootstrap installs Debian's chromium)" >&2; exit 1; }
# Headless, as root in CI (no sandbox there), its profile in the work dir.
render() {
    timeout 120 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
        --user-data-dir="$work/profile" "$@" 2> "$work/chromium.err"
}

"$bin/vt" fixture make --preset tiny --weights Q2_K -o t.gguf > /dev/null || { bad "fixture make"; exit 1; }
# p00's id is HTML that would run if it were not escaped.
sed '1s/"id": *"p00"/"id":"p00<script>alert(\\"x\\")<\/script>\&amp;'"'"'"/' "$src/fixtures/prompts/default16.jsonl" > p.jsonl
grep -q '<script>' p.jsonl || { bad "the hostile prompt id was not made: $(head -c 200 p.jsonl)"; exit 1; }
cap=(--model t.gguf --prompts p.jsonl --max-tokens 24 --no-timestamp)
"$bin/vt-capture" --runner engine --matmul exact "${cap[@]}" --out e.json --logits-out e.logits > /dev/null &&
    "$bin/vt-capture" --runner llamacpp "${cap[@]}" --out o.json --logits-out o.logits > /dev/null &&
    "$bin/vt-capture" --runner llamacpp --model t.gguf --score-prefix-of e.json --out s.json --no-timestamp > /dev/null &&
    "$bin/vt-capture" --runner llamacpp --model t.gguf --score-prefix-of e.json --score-shape batched \
        --out sb.json --no-timestamp > /dev/null || { bad "captures"; exit 1; }
nt=(--local e.json --oracle o.json --prefix-scores s.json --prefix-scores sb.json --allow-unverified --allow-diff matmul)
"$bin/vt-neartie" "${nt[@]}" --out r.json --html r.html > table.txt
rc=$?
[ $rc = 0 ] || [ $rc = 1 ] || { bad "vt-neartie --html: exit $rc: $(tail -2 table.txt)"; exit 1; }
grep -q "^wrote r.html (HTML)" table.txt || bad "vt-neartie did not say it wrote r.html"
grep '^totals' table.txt

render --window-size=1280,2400 --screenshot="$work/shot.png" "file://$work/r.html" > /dev/null ||
    bad "chromium --screenshot: $(tail -2 chromium.err)"
render --dump-dom "file://$work/r.html" > dom.html || bad "chromium --dump-dom: $(tail -2 chromium.err)"
python3 "$check" r.json dom.html shot.png || bad "the rendered page"
# The hostile id is text on the page, never an element.
grep -qF 'p00&lt;script&gt;alert("x")&lt;/script&gt;&amp;amp;' dom.html ||
    bad "the hostile prompt id is not shown as text: $(grep -o 'p00[^<]*' dom.html | head -2)"

# The checker can fail: a blank page, a strip removed, a total changed.
printf '<!DOCTYPE html><html><body></body></html>\n' > blank.html
render --window-size=1280,2400 --screenshot="$work/blank.png" "file://$work/blank.html" > /dev/null
python3 "$check" r.json dom.html blank.png > neg1.txt && bad "a blank screenshot passed the checker"
grep -q "not a blank" neg1.txt || bad "a blank screenshot: $(cat neg1.txt)"
python3 - dom.html dom-cut.html <<'PY'
import re, sys
t = open(sys.argv[1], encoding="utf-8").read()
m = re.search(r'<figure class="strip[^>]*data-prompt="3".*?</figure>', t, re.S)
open(sys.argv[2], "w", encoding="utf-8").write(t[:m.start()] + t[m.end():])
PY
python3 "$check" r.json dom-cut.html > neg2.txt && bad "a page with a strip removed passed the checker"
grep -q "strips: expected one per prompt" neg2.txt || bad "a strip removed: $(cat neg2.txt)"
python3 - r.json r-changed.json <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
r["totals"]["zero_gaps"] += 1
json.dump(r, open(sys.argv[2], "w"))
PY
python3 "$check" r-changed.json dom.html > neg3.txt && bad "a page whose totals are not the report's passed"
grep -q "totals zero_gaps" neg3.txt || bad "a total changed: $(cat neg3.txt)"

# Published as one group: with r2.html already there (no --overwrite),
# nothing is written, the report neither.
echo keep > r2.html
"$bin/vt-neartie" "${nt[@]}" --out r2.json --html r2.html > /dev/null 2> refused.err
rc=$?
[ $rc = 2 ] || bad "--html onto an existing file: exit $rc: expected 2"
[ -e r2.json ] && bad "--html onto an existing file: the report was written anyway"
[ "$(cat r2.html)" = keep ] || bad "--html onto an existing file: it was overwritten"
# The same comparison gives the same page, byte for byte.
"$bin/vt-neartie" "${nt[@]}" --html r3.html > /dev/null
cmp -s r.html r3.html || bad "the page differs between two runs of the same comparison"
# --json: the report on stdout, the same bytes as --out.
"$bin/vt-neartie" "${nt[@]}" --json > stdout.json 2> /dev/null
cmp -s r.json stdout.json || bad "--json's stdout is not the report --out wrote"
# What vt wrote here, against the formats' schemas (the independent validator).
/usr/bin/python3 "$src/tests/support/validate_schema.py" --root "$src" e.json e.logits e.topk o.json o.logits o.topk \
    s.json sb.json r.json > schemas.txt || bad "schemas: $(grep -v '^ok' schemas.txt | head -3)"
# vt-seal takes the page in like any file.
mkdir ev && cp e.json e.logits o.json o.logits s.json sb.json r.json r.html ev/ &&
    "$bin/vt-seal" create ev -o ev.tar.gz > /dev/null && "$bin/vt-seal" verify ev.tar.gz > verify.txt ||
    bad "vt-seal of the evidence with the page: $(tail -2 verify.txt 2>/dev/null)"
manifest=$(tar -xOzf ev.tar.gz manifest.json)
grep -q '"r.html"' <<< "$manifest" || bad "the sealed manifest does not list r.html"

[ $fail = 0 ] && echo "html_report: OK: the page rendered by $("$browser" --version 2>/dev/null | head -1);" \
    "the checker refused a blank page, a strip removed and a total changed; published as a group; same bytes" \
    "twice; --json is the report; sealed with the evidence"
exit $fail
