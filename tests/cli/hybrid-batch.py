#!/usr/bin/env python3
"""`basalt batch` on a hybrid recurrent model (tiny-qwen35) gives every request the output it has alone.

Plain requests (greedy and seeded chains, stop strings) and beam searches (whose beams fork the per-sequence
recurrent state) are run one by one with `basalt run`, then together with `basalt batch` at prefill chunk 0 and 16
and parallel 1 and 8: text, finish reason and beam hypotheses must match. Speculative requests (which cut rejected
drafts back, and a recurrent state cannot be cut back) are refused with an error naming why, by batch and by run;
prefix reuse is refused for hybrid models, so every request reports 0 cached tokens even where prompts share a long
prefix. Usage: hybrid-batch.py BASALT MODEL WORKDIR
"""
import json
import os
import subprocess
import sys

exe, model, work = sys.argv[1], sys.argv[2], sys.argv[3]
os.makedirs(work, exist_ok=True)
words = ("the stranger opened the wooden box and found a letter from an old friend who had left the city "
         "many years ago without a word ").split()
chains = ["greedy", "top_k:40;top_p:0.9;temp:0.8;dist:seed=11", "penalties:repeat=1.2,last_n=32;greedy",
          "min_p:0.05;temp:1.0;dist"]
requests = []
for i in range(16):
    n_words = [1, 4, 12, 30][i % 4] + i % 3
    prompt = " ".join(words[(i + k) % len(words)] for k in range(n_words)).capitalize()
    req = {"id": "r%02d" % i, "prompt": prompt, "max_tokens": [3, 9, 20, 33][i % 4], "samplers": chains[i % 4]}
    if req["samplers"].endswith("dist"):
        req["seed"] = 200 + i
    if i % 5 == 1:
        req["stop"] = ["e"]
    if i % 4 == 3:
        req["decoder"] = "beam:width=3,n_best=2"
        req["samplers"] = "greedy"
        req.pop("seed", None)
    requests.append(req)
# Two long prompts sharing a prefix (a prefix cache would reuse it for a pure-attention model).
shared = " ".join(words * 2)
requests.append({"id": "p1", "prompt": shared + " one", "max_tokens": 5, "samplers": "greedy"})
requests.append({"id": "p2", "prompt": shared + " two", "max_tokens": 5, "samplers": "greedy"})
refused = [{"id": "s1", "prompt": "The wooden box", "max_tokens": 8, "samplers": "greedy",
            "decoder": "speculative:source=ngram,k=4"}]

expected = {}
for req in requests:
    chain = req["samplers"] + (":seed=%d" % req["seed"] if "seed" in req else "")
    cmd = [exe, "run", "-m", model, "-p", req["prompt"], "-n", str(req["max_tokens"]), "--samplers", chain, "--json"]
    for s in req.get("stop", []):
        cmd += ["--stop", s]
    if "decoder" in req:
        cmd += ["--decoder", req["decoder"]]
    p = subprocess.run(cmd, capture_output=True)
    if p.returncode != 0:
        sys.exit("basalt run failed for %s: %s" % (req["id"], p.stderr.decode(errors="replace")))
    out = json.loads(p.stdout.decode("utf-8"))
    hyps = [(h["tokens"], round(h["score"], 4)) for h in out["hypotheses"]] if len(out["hypotheses"]) > 1 else None
    expected[req["id"]] = (out["text"], out["finish_reason"], hyps)

why = "keeps a recurrent state that cannot be cut back"
p = subprocess.run([exe, "run", "-m", model, "-p", "The wooden box", "-n", "4", "--decoder", "speculative:source=ngram"],
                   capture_output=True)
if p.returncode == 0 or why not in p.stderr.decode():
    sys.exit("basalt run with speculative decoding was not refused by name: rc %d, %s" % (p.returncode, p.stderr))

lines = os.path.join(work, "requests.jsonl")
with open(lines, "w") as f:
    for req in requests + refused:
        f.write(json.dumps(req) + "\n")
failures = 0
for chunk in (0, 16):
    for parallel in (1, 8):
        cmd = [exe, "batch", "-m", model, "--requests", lines, "--chunk", str(chunk), "--parallel", str(parallel)]
        p = subprocess.run(cmd, capture_output=True)
        got, errors = {}, {}
        for line in p.stdout.decode("utf-8").splitlines():
            r = json.loads(line)
            if "error" in r:
                errors[r["id"]] = r["error"]
                continue
            if r["cached_tokens"] != 0:
                failures += 1
                print("request %s reports %d cached tokens on a hybrid model" % (r["id"], r["cached_tokens"]))
            hyps = [(h["tokens"], round(h["score"], 4)) for h in r["hypotheses"]] if "hypotheses" in r else None
            got[r["id"]] = (r["text"], r["finish_reason"], hyps)
        for rid, want in expected.items():
            if got.get(rid) != want:
                failures += 1
                print("MISMATCH chunk %d parallel %d %s:\n  run:   %r\n  batch: %r" % (chunk, parallel, rid, want,
                                                                                        got.get(rid)))
        for req in refused:
            if why not in errors.get(req["id"], ""):
                failures += 1
                print("speculative request %s not refused by name: %r" % (req["id"], errors.get(req["id"])))
        print("chunk %2d parallel %d: %d requests, %d refused; %s" % (chunk, parallel, len(got), len(errors),
                                                                     p.stderr.decode().strip().splitlines()[-1]))
if failures:
    sys.exit("%d failures" % failures)
print("all %d requests identical to basalt run in all 4 configurations; speculative refused" % len(expected))
