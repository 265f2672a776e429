#!/usr/bin/env python3
"""A stand-in OpenAI-compatible server that fails one way (tests/openai_runner.sh).

usage: fake_openai.py MODE PORTFILE
MODE: 500 | badjson | close | fewer | post | vllm. vllm answers every completion
in the OpenAI completions shape with vLLM's return_tokens_as_token_ids keys
("token_id:N"): 20 log-probs that depend only on the prompt's last token. /v1/models answers one model "tiny.gguf";
/props and /version are 404; POST /v1/completions fails as MODE says. The port
it listens on (127.0.0.1, chosen by the system) is written to PORTFILE.
"""
import http.server
import json
import sys

MODE, PORTFILE = sys.argv[1], sys.argv[2]


class Handler(http.server.BaseHTTPRequestHandler):
    def reply(self, status, body):
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/v1/models":
            self.reply(200, json.dumps({"object": "list", "data": [{"id": "tiny.gguf"}]}).encode())
        else:
            self.reply(404, b'{"error":"not found"}')

    def do_POST(self):
        req = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
        self.last = (req.get("prompt") or [0])[-1]
        if MODE == "500":
            self.reply(500, b'{"error":{"code":500,"message":"the model crashed"}}')
        elif MODE == "badjson":
            self.reply(200, b'{"choices": [ not json')
        elif MODE == "close":
            # Promise 4096 bytes, send 20, hang up.
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "4096")
            self.end_headers()
            self.wfile.write(b'{"choices":[{"text":')
            self.wfile.flush()
            self.close_connection = True
        elif MODE == "post":
            tops = [{"id": i, "prob": 0.04} for i in range(20)]
            body = {"choices": [{"text": "x", "index": 0, "logprobs": {"content": [
                {"id": 0, "prob": 0.04, "top_probs": tops}]}}]}
            self.reply(200, json.dumps(body).encode())
        elif MODE == "vllm":
            last = self.last
            top = {"token_id:%d" % ((last * 7 + j) % 1000): -0.1 - 0.5 * j for j in range(20)}
            first = "token_id:%d" % ((last * 7) % 1000)
            body = {"choices": [{"text": first, "index": 0, "logprobs": {
                "tokens": [first], "token_logprobs": [-0.1], "top_logprobs": [top]}}]}
            self.reply(200, json.dumps(body).encode())
        elif MODE == "fewer":
            tops = [{"id": i, "logprob": -1.0 - i} for i in range(3)]
            body = {"choices": [{"text": "x", "index": 0, "logprobs": {"content": [
                {"id": 0, "logprob": -1.0, "top_logprobs": tops}]}}]}
            self.reply(200, json.dumps(body).encode())

    def log_message(self, *args):
        pass


server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
with open(PORTFILE + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
import os
os.rename(PORTFILE + ".tmp", PORTFILE)
server.serve_forever()
