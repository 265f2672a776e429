#!/usr/bin/env bash
# --runner openai (oracle/openai_runner.c) against a real llama-server (built
# by scripts/bootstrap from the pinned package's source bundle) and against
# a stand-in that fails one way at a time (tests/support/fake_openai.py).
#  - llama-server's capture and llama.cpp's are scored both ways with
#    vt-neartie: no prompt fails; the scores of a server that serves another
#    model (same file name, other weights) fail prompts, never pass them all;
#    a server whose /props names another file is refused at open;
#  - an unreachable endpoint, HTTP 500, a body that is not JSON, a response
#    cut mid-body and fewer log-probs than asked: exit 2, one line naming the
#    endpoint, nothing published;
#  - such captures are not strict (rule observed), and vt agree refuses them.
# usage: tests/openai_runner.sh BIN_DIR SOURCE_DIR DEPS_DIR
set -u
bin=$1 src=$2 deps=$3
V=$bin/vt
server=$deps/llama-server/bin/llama-server
P=$src/fixtures/prompts/default16.jsonl
work=$(mktemp -d /tmp/vt-openai-XXXXXX)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }

[ -x "$server" ] || { echo "FAIL: $server: missing: run scripts/bootstrap"; exit 1; }
cd "$work" || exit 1
mkdir other
"$V" fixture make --arch qwen3 --preset tiny --weights Q8_0 --seed 1 -o tiny.gguf > /dev/null || exit 1
"$V" fixture make --arch qwen3 --preset tiny --weights Q8_0 --seed 2 -o other/tiny.gguf > /dev/null || exit 1
"$V" fixture make --arch qwen3 --preset tiny --weights Q8_0 --seed 1 -o renamed.gguf > /dev/null || exit 1

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# start_server MODEL: a llama-server on a free port, f32 KV cache as the
# llamacpp runner's; sets $url.
start_server() {
    local port
    port=$(free_port)
    "$server" -m "$1" --host 127.0.0.1 --port "$port" -t 2 -c 2048 -np 1 -ctk f32 -ctv f32 \
        > "server-$port.log" 2>&1 &
    pids+=($!)
    url=http://127.0.0.1:$port
    for _ in $(seq 1 100); do
        curl -sf "$url/health" > /dev/null 2>&1 && return 0
        sleep 0.1
    done
    echo "FAIL: llama-server on $1 did not start:"; tail -5 "server-$port.log"; exit 1
}

cap() { "$V" capture --model tiny.gguf --repetitions 2 --no-timestamp --threads 1 "$@" > /dev/null; }

start_server tiny.gguf
good=$url
cap --runner openai --endpoint "$good" --cache-dtype f32 --prompts "$P" --out oai.json || fail "openai capture"
cap --runner llamacpp --prompts "$P" --out lc.json || fail "llamacpp capture"
cap --runner llamacpp --score-prefix-of oai.json --out lc-on-oai.json || fail "llamacpp scores of openai"
cap --runner openai --endpoint "$good" --cache-dtype f32 --score-prefix-of lc.json --out oai-on-lc.json \
    || fail "openai scores of llamacpp"
grep -q '^{"schema":"vt.prefix-scores/4"' oai-on-lc.json && grep -q '"bound":\[' oai-on-lc.json \
    && ok "the server's scores are vt.prefix-scores/4 with bound" || fail "openai scores: expected vt.prefix-scores/4"
grep -q '"name":"openai"' oai.json && grep -q "attested by the operator" oai.json \
    && ok "identity: runner openai, model attested" || fail "openai identity"

echo "== vt-neartie: local openai (llama-server), oracle llamacpp"
"$V" neartie --local oai.json --oracle lc.json --prefix-scores lc-on-oai.json --allow-unverified > t1.txt 2>&1
rc=$?
grep "^totals" t1.txt
[ $rc = 0 ] && grep -q " 0 failed;" t1.txt && ok "openai vs llamacpp: no prompt failed" || { cat t1.txt; fail "openai vs llamacpp: rc $rc"; }
grep -q "rule observed: oai.json" t1.txt && ok "not strict: rule observed" || fail "rule observed not listed"
echo "== vt-neartie: local llamacpp, oracle openai (llama-server)"
"$V" neartie --local lc.json --oracle oai.json --prefix-scores oai-on-lc.json --allow-unverified > t2.txt 2>&1
rc=$?
grep "^totals\|^scores told" t2.txt
[ $rc = 0 ] && grep -q " 0 failed;" t2.txt && ok "llamacpp vs openai: no prompt failed" || { cat t2.txt; fail "llamacpp vs openai: rc $rc"; }
"$V" neartie --local oai.json --oracle lc.json --prefix-scores lc-on-oai.json > t3.txt 2>&1
[ $? = 2 ] && grep -q "rule observed" t3.txt && ok "without --allow-unverified: refused" || fail "not refused without --allow-unverified"

# Another model behind the same file name, on another port: its scores are
# not the oracle's computation (rule scorer: another server), and taken
# as if they were (the other server's identity written into the scores'
# document and re-sealed, which anyone can do) they fail prompts.
start_server other/tiny.gguf
other=$url
cap --runner openai --endpoint "$other" --cache-dtype f32 --score-prefix-of lc.json --out wrong-on-lc.json \
    || fail "scores by the other server"
"$V" neartie --local lc.json --oracle oai.json --prefix-scores wrong-on-lc.json --allow-unverified > t4.txt 2>&1
rc=$?
[ $rc = 2 ] && grep -q "refused by rule scorer" t4.txt && grep -q "runtime.runner.library: oai.json $good, wrong-on-lc.json $other: another server" t4.txt \
    && ok "another model served: refused: $(grep -m1 'runtime.runner' t4.txt)" || { cat t4.txt; fail "another model served: rc $rc"; }
python3 "$src/tests/support/reseal.py" wrong-on-lc.json forged-on-lc.json \
    "\"library\":\"$other\"" "\"library\":\"$good\"" \
    "served model 'other/tiny.gguf', server model_path other/tiny.gguf;" \
    "served model 'tiny.gguf', server model_path tiny.gguf;" || fail "forging the scores' identity"
"$V" neartie --local lc.json --oracle oai.json --prefix-scores forged-on-lc.json --allow-unverified > t4b.txt 2>&1
rc=$?
grep "^totals" t4b.txt
[ $rc = 1 ] && ! grep -q " 0 failed;" t4b.txt && ok "another model served, its identity forged: fails (rc 1)" \
    || { cat t4b.txt; fail "another model served, forged identity: rc $rc"; }
# /props names the file: one of another name is refused.
"$V" capture --runner openai --endpoint "$good" --model renamed.gguf --prompts "$P" --out renamed.json \
    > /dev/null 2> renamed.err
[ $? = 2 ] && grep -q "field model_path: 'tiny.gguf'" renamed.err && [ ! -e renamed.json ] \
    && ok "another model file named: refused" || { cat renamed.err; fail "another model file named: not refused"; }

# Options that do not apply to a server.
cap --runner openai --endpoint "$good" --prompts "$P" --out l.json --logits-out l.logits 2> l.err
[ $? = 2 ] && [ ! -e l.json ] && ok "--logits-out refused" || fail "--logits-out not refused"
cap --runner openai --endpoint "$good" --prompts "$P" --out t.json --top-k 30 2> t.err
[ $? = 2 ] && grep -q "at most 20" t.err && ok "--top-k above --server-top-k refused" || fail "--top-k 30 not refused"
"$V" agree --local openai --oracle llamacpp --model tiny.gguf --prompts 1 --endpoint "$good" > /dev/null 2> a.err
[ $? = 2 ] && grep -q "expected a runner with logits" a.err && ok "vt agree refuses openai" || { cat a.err; fail "vt agree"; }

# One way to fail at a time: exit 2, one line naming the endpoint, nothing published.
expect_refused() { # NAME URL EXPECTED-TEXT
    cap --runner openai --endpoint "$2" --prompts "$P" --out "f-$1.json" 2> "f-$1.err"
    local rc=$? lines
    lines=$(wc -l < "f-$1.err")
    if [ $rc = 2 ] && [ "$lines" = 1 ] && grep -q "$2" "f-$1.err" && grep -q "$3" "f-$1.err" &&
        [ ! -e "f-$1.json" ] && [ ! -e "f-$1.topk" ]; then
        ok "$1: $(cat "f-$1.err")"
    else
        fail "$1: rc $rc, $lines lines: $(cat "f-$1.err")"
    fi
}
expect_refused unreachable "http://127.0.0.1:$(free_port)" "expected an HTTP response"
for mode in 500 badjson close fewer; do
    python3 "$src/tests/support/fake_openai.py" $mode "port-$mode" &
    pids+=($!)
    for _ in $(seq 1 50); do [ -e "port-$mode" ] && break; sleep 0.1; done
    case $mode in
    500) want="HTTP 500: {\"error\":{\"code\":500,\"message\":\"the model crashed\"}}: expected 200" ;;
    badjson) want="body is not JSON" ;;
    close) want="expected an HTTP response" ;;
    fewer) want="3 top log-probs: expected 20" ;;
    esac
    expect_refused "$mode" "http://127.0.0.1:$(cat "port-$mode")" "$want"
done
python3 "$src/tests/support/fake_openai.py" post port-post &
pids+=($!)
for _ in $(seq 1 50); do [ -e port-post ] && break; sleep 0.1; done
expect_refused post "http://127.0.0.1:$(cat port-post)" "post-sampling probabilities: expected raw log-probs"
ls f-*.json f-*.topk 2> /dev/null && fail "something was published"

# vLLM's shape ("token_id:N" keys): read; its scores of llama.cpp's streams
# rarely hold the local token, and each such position is a bound that fails.
python3 "$src/tests/support/fake_openai.py" vllm port-vllm &
pids+=($!)
for _ in $(seq 1 50); do [ -e port-vllm ] && break; sleep 0.1; done
vllm=http://127.0.0.1:$(cat port-vllm)
cap --runner openai --endpoint "$vllm" --prompts "$P" --out v.json && ok "vLLM's shape captured" || fail "vLLM's shape"
cap --runner openai --endpoint "$vllm" --score-prefix-of lc.json --out v-on-lc.json || fail "vLLM-shape scores"
"$V" neartie --local lc.json --oracle v.json --prefix-scores v-on-lc.json --allow-unverified --allow-diff cache_dtype \
    > t5.txt 2>&1
rc=$?
grep "^totals\|^scores told" t5.txt
nb=$(grep -o "top-k log-probs: [0-9]* positions" t5.txt | grep -o "[0-9]*")
[ $rc = 1 ] && [ "${nb:-0}" -gt 0 ] && ! grep -q " 0 failed;" t5.txt && ok "bounds counted above: prompts fail (rc 1)" \
    || { cat t5.txt; fail "bounds: rc $rc"; }
# A /4 document whose bound lists a position twice is refused by the reader.
sed 's/"bound":\[\([0-9]*\),/"bound":[\1,\1,/' v-on-lc.json > v-bad.json
"$V" neartie --local lc.json --oracle v.json --prefix-scores v-bad.json --allow-unverified --allow-diff cache_dtype \
    > t6.txt 2>&1
rc=$?
[ $rc = 2 ] && grep -q "bound" t6.txt && ok "a bound listed twice: refused: $(tail -1 t6.txt)" \
    || { cat t6.txt; fail "a bound listed twice: rc $rc"; }

echo "$failures failures"
[ $failures = 0 ]
