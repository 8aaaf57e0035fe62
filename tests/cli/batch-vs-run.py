#!/usr/bin/env python3
"""`basalt batch` gives every request exactly the output of that request run alone with `basalt run`.

36 mixed requests (prompt lengths from 1 to ~200 tokens, 1 to 80 new tokens, greedy and seeded chains with
penalties/top-k/top-p/min-p/typical, stop strings, one that fills the context) are run one by one with
`basalt run`, then all together with `basalt batch` at prefill chunk 0, 16 and 256 and parallel 1 and 8: text
and finish reason must match for every request. With SECOND (a draft/amateur model), a third of the requests
use the other decoders (speculative with the draft and with prompt lookup, beam search, contrastive decoding
when its plugin is loaded), sharing the batches with the plain ones; beam requests must also give the same
n-best hypotheses. With KV_SLOTS, two more passes (chunk 0 and 16, parallel 8) run in a cache of that many slots,
where the requests cannot all hold their context: running requests are preempted and recomputed (docs/engine.md
"Admission and preemption"), which must happen and change no output. Usage: batch-vs-run.py BASALT MODEL WORKDIR
[SECOND [KV_SLOTS]]
"""
import re
import json
import os
import subprocess
import sys

exe, model, work = sys.argv[1], sys.argv[2], sys.argv[3]
second = sys.argv[4] if len(sys.argv) > 4 else None
kv_slots = int(sys.argv[5]) if len(sys.argv) > 5 else 0
os.makedirs(work, exist_ok=True)
loaded = subprocess.run([exe, "plugins"], capture_output=True, check=True).stdout.decode()
decoders = []
if second:
    decoders = ["speculative:k=3", "beam:width=3,n_best=2", "speculative:source=ngram,k=4"]
    if "contrastive" in loaded:
        decoders.append("contrastive:alpha=0.1")

words = ("the stranger opened the wooden box and found a letter from an old friend who had left the city "
         "many years ago without a word ").split()
chains = [
    "greedy",
    "top_k:40;top_p:0.9;temp:0.8;dist:seed=11",
    "penalties:repeat=1.1,last_n=64;top_k:40;temp:0.7;dist",  # seed from the request
    "min_p:0.05;temp:1.0;dist",
    "typical:0.9;temp:0.9;dist:seed=5",
    "penalties:repeat=1.3,last_n=16,freq=0.1,present=0.1;greedy",
]
stops = [[], ["\n"], ["%"], [" the", "."], []]
requests = []
for i in range(36):
    n_words = [1, 3, 8, 20, 45, 90][i % 6] + i % 4
    prompt = " ".join(words[(i + k) % len(words)] for k in range(n_words)).capitalize()
    req = {"id": "r%02d" % i, "prompt": prompt, "max_tokens": [1, 7, 24, 40, 80][i % 5],
           "samplers": chains[i % len(chains)]}
    if req["samplers"].endswith("dist"):
        req["seed"] = 100 + i
    if stops[i % len(stops)]:
        req["stop"] = stops[i % len(stops)]
    if decoders and i % 3 == 2:
        req["decoder"] = decoders[(i // 3) % len(decoders)]
        if req["decoder"].startswith("speculative") and "penalties" in req["samplers"]:
            req["samplers"] = "greedy"  # speculation refuses chains that are not draft-safe
            req.pop("seed", None)
    requests.append(req)
# One request runs into the context (the default model has 256 positions).
requests.append({"id": "ctx", "prompt": " ".join(words * 2), "max_tokens": 400, "samplers": "greedy"})

reasons = {"end of text": "stop", "length": "length", "context full": "context"}
expected = {}
for req in requests:
    chain = req["samplers"]
    if "seed" in req:
        chain += ":seed=%d" % req["seed"]
    cmd = [exe, "run", "-m", model, "-p", req["prompt"], "-n", str(req["max_tokens"]), "--samplers", chain, "--json"]
    for s in req.get("stop", []):
        cmd += ["--stop", s]
    if "decoder" in req:
        cmd += ["--decoder", req["decoder"]]
        if not req["decoder"].startswith(("beam", "speculative:source=ngram")):
            cmd += ["--draft", second]
    p = subprocess.run(cmd, capture_output=True)
    if p.returncode != 0:
        sys.exit("basalt run failed for %s: %s" % (req["id"], p.stderr.decode(errors="replace")))
    out = json.loads(p.stdout.decode("utf-8"))
    hyps = [(h["tokens"], round(h["score"], 4)) for h in out["hypotheses"]] if len(out["hypotheses"]) > 1 else None
    expected[req["id"]] = (out["text"], out["finish_reason"], hyps)

lines = os.path.join(work, "batch-requests.jsonl")
with open(lines, "w") as f:
    for req in requests:
        f.write(json.dumps(req) + "\n")

failures = 0
configs = [(chunk, parallel, 0) for chunk in (0, 16, 256) for parallel in (1, 8)]
if kv_slots:
    configs += [(0, 8, kv_slots), (16, 8, kv_slots)]
for chunk, parallel, kv in configs:
    cmd = [exe, "batch", "-m", model, "--requests", lines, "--chunk", str(chunk), "--parallel", str(parallel)]
    if second:
        cmd += ["--draft", second]
    if kv:
        cmd += ["--kv-slots", str(kv)]
    p = subprocess.run(cmd, capture_output=True)
    if p.returncode != 0:
        sys.exit("basalt batch failed (chunk %d, parallel %d): %s" % (chunk, parallel, p.stderr.decode()))
    got = {}
    for line in p.stdout.decode("utf-8").splitlines():
        r = json.loads(line)
        hyps = [(h["tokens"], round(h["score"], 4)) for h in r["hypotheses"]] if "hypotheses" in r else None
        got[r["id"]] = (r["text"], r["finish_reason"], hyps)
    for rid, want in expected.items():
        if got.get(rid) != want:
            failures += 1
            print("MISMATCH chunk %d parallel %d %s:\n  run:   %r\n  batch: %r" % (chunk, parallel, rid, want,
                                                                                    got.get(rid)))
    print("chunk %3d parallel %d%s: %d requests, %s" % (chunk, parallel, " kv %d" % kv if kv else "", len(got),
                                                       p.stderr.decode().strip()))
    preempted = re.search(r"(\d+) preemptions", p.stderr.decode())
    if kv and (preempted is None or int(preempted.group(1)) == 0):
        failures += 1
        print("no preemption in %d KV slots (chunk %d): the pass does not test them" % (kv, chunk))
finish = sorted(set(v[1] for v in expected.values()))
print("finish reasons covered:", finish)
if decoders:
    print("decoders covered:", sorted(set(r["decoder"] for r in requests if "decoder" in r)))
if failures or finish != ["context", "length", "stop"]:
    sys.exit("%d mismatches" % failures)
print("all %d requests identical to basalt run in all %d configurations" % (len(expected), len(configs)))
