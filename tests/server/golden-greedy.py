#!/usr/bin/env python3
"""The golden models' greedy continuations through the front ends: for each MODEL (a golden file stem such as
tiny-qwen3-f32), `basalt batch` on llama.cpp's prompt token ids with the greedy chain gives llama.cpp's greedy tokens
(up to the first end-of-generation token, where batch stops), and `basalt serve` answers /v1/completions for the same
ids (temperature 0, ignore_eos) with the text of those tokens. Both use an F32 KV cache, as the goldens did.
Usage: golden-greedy.py BASALT GOLDEN_DIR MODEL...
"""
import json
import os
import subprocess
import sys
import tempfile

from serve_harness import Server, check, failures

exe, golden = sys.argv[1], sys.argv[2]
with open(os.path.join(golden, "index.json")) as f:
    runs = {(r["model"], r["variant"]): r for r in json.load(f)["runs"] if r["config"] == "ref"}
work = tempfile.mkdtemp(prefix="basalt-golden-greedy-")
for stem in sys.argv[3:]:
    name, variant = stem.rsplit("-", 1)
    run = runs[(name, variant)]
    model = os.path.join(golden, "models", stem + ".gguf")
    prompt, want = run["prompt_tokens"], run["greedy_tokens"]
    requests = os.path.join(work, stem + ".jsonl")
    with open(requests, "w") as f:
        f.write(json.dumps({"id": stem, "tokens": prompt, "max_tokens": len(want), "samplers": "greedy"}) + "\n")
    p = subprocess.run([exe, "batch", "-m", model, "--requests", requests, "--kv-type", "f32"], capture_output=True,
                       text=True)
    check(stem + ": basalt batch exits 0", p.returncode == 0, p.stderr)
    if p.returncode != 0:
        continue
    out = json.loads(p.stdout.splitlines()[0])
    got = out["tokens"]
    stopped = out["finish_reason"] != "length"  # an end-of-generation token ends a batch request
    check(stem + ": batch gives llama.cpp's greedy tokens", got == want[:len(got)] and (stopped or got == want),
          "got %s, llama.cpp %s" % (got, want))
    server = Server(exe, ["-m", model, "--kv-type", "f32"], name="golden-greedy")
    try:
        status, _, body = server.request("POST", "/v1/completions",
                                         {"prompt": prompt, "max_tokens": len(want), "temperature": 0,
                                          "ignore_eos": True})
        check(stem + ": serve answers 200", status == 200, body[:300])
        if status == 200:
            text = json.loads(body)["choices"][0]["text"]
            if stopped:
                check(stem + ": serve's text starts with batch's", text.startswith(out["text"]), repr(text))
            else:
                check(stem + ": serve gives the text of llama.cpp's greedy tokens", text == out["text"],
                      "%r vs %r" % (text, out["text"]))
    finally:
        server.stop()
sys.exit(1 if failures else 0)
