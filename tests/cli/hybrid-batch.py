#!/usr/bin/env python3
"""`basalt batch` on a hybrid recurrent model (tiny-qwen35) gives every request the output it has alone.

Plain requests (greedy and seeded chains, stop strings), beam searches (whose beams fork the per-sequence recurrent
state) and speculative requests (prompt lookup, and a draft model that is itself hybrid: a recurrent state cannot be
cut back, so rejected drafts restore a snapshot and the kept tokens are fed again) are run one by one with
`basalt run`, then together with `basalt batch` at prefill chunk 0 and 16 and parallel 1 and 8: text, finish reason
and beam hypotheses must match. Greedy speculative requests must also give plain greedy decoding's tokens, and the
drafted ones must have been rejected at times (the snapshots were restored). Prefix reuse goes as far as a kept
checkpoint of the recurrent state: p2, which shares a long prefix with p1 before it, reports cached tokens in every
configuration (and still its solo output); no other request does.
Usage: hybrid-batch.py BASALT MODEL DRAFT WORKDIR (DRAFT: the same family quantized, drafting with its own state)
"""
import json
import os
import subprocess
import sys

exe, model, draft, work = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
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
# Two long prompts sharing a prefix: p2 reuses p1's blocks and the state checkpoint at a block boundary of them.
shared = " ".join(words * 2)
requests.append({"id": "p1", "prompt": shared + " one", "max_tokens": 5, "samplers": "greedy"})
requests.append({"id": "p2", "prompt": shared + " two", "max_tokens": 5, "samplers": "greedy"})
# Speculative requests: prompt lookup (greedy, adaptive, seeded stochastic) in the batch without a draft model; a
# draft model's (greedy and seeded stochastic, fixed and adaptive k) in the batch with --draft, beside plain and beam.
lookup = [("n1", "greedy", "speculative:source=ngram,k=4,adaptive=false"),
          ("n2", "greedy", "speculative:source=ngram"),
          ("n3", "top_k:40;temp:0.9;dist:seed=31", "speculative:source=ngram,k=3,adaptive=false")]
drafted = [("d1", "greedy", "speculative:k=4,adaptive=false"),
           ("d2", "greedy", "speculative:k=6"),
           ("d3", "top_k:40;temp:0.9;dist:seed=41", "speculative:k=3,adaptive=false")]


def speculative(entries, offset):
    out = []
    for j, (rid, chain, decoder) in enumerate(entries):
        n_words = [5, 17, 40][j]
        prompt = " ".join(words[(offset + j + k) % len(words)] for k in range(n_words)).capitalize()
        out.append({"id": rid, "prompt": prompt, "max_tokens": [24, 40, 30][j], "samplers": chain,
                    "decoder": decoder})
    return out


lookup_requests = speculative(lookup, 3)
drafted_requests = speculative(drafted, 7)


def run_alone(req, with_draft):
    cmd = [exe, "run", "-m", model, "-p", req["prompt"], "-n", str(req["max_tokens"]), "--samplers",
           req["samplers"] + (":seed=%d" % req["seed"] if "seed" in req else ""), "--json"]
    for s in req.get("stop", []):
        cmd += ["--stop", s]
    if "decoder" in req:
        cmd += ["--decoder", req["decoder"]]
    if with_draft:
        cmd += ["--draft", draft]
    p = subprocess.run(cmd, capture_output=True)
    if p.returncode != 0:
        sys.exit("basalt run failed for %s: %s" % (req["id"], p.stderr.decode(errors="replace")))
    return json.loads(p.stdout.decode("utf-8"))


expected, stats = {}, {}
for req, with_draft in [(r, False) for r in requests + lookup_requests] + [(r, True) for r in drafted_requests]:
    out = run_alone(req, with_draft)
    hyps = [(h["tokens"], round(h["score"], 4)) for h in out["hypotheses"]] if len(out["hypotheses"]) > 1 else None
    expected[req["id"]] = (out["text"], out["finish_reason"], hyps)
    stats[req["id"]] = (out["tokens"], out["decoder"]["stats"])

# Greedy verification gives plain greedy decoding's tokens; some drafts were rejected (snapshots restored).
failures = 0
for req in lookup_requests + drafted_requests:
    if req["samplers"] != "greedy":
        continue
    plain = run_alone(dict(req, decoder="sample"), False)
    tokens, st = stats[req["id"]]
    if tokens != plain["tokens"]:
        failures += 1
        print("speculative %s differs from plain greedy decoding:\n  %r\n  %r" % (req["id"], tokens, plain["tokens"]))
rejected = sum(stats[r["id"]][1].get("drafted", 0) - stats[r["id"]][1].get("accepted", 0) for r in drafted_requests)
accepted = sum(stats[r["id"]][1].get("accepted", 0) for r in drafted_requests)
if rejected == 0 or accepted == 0:
    failures += 1
    print("the draft model's requests had %d drafts accepted and %d rejected: both must happen" % (accepted, rejected))


def run_batch(reqs, name, extra):
    lines = os.path.join(work, name + ".jsonl")
    with open(lines, "w") as f:
        for req in reqs:
            f.write(json.dumps(req) + "\n")
    bad = 0
    for chunk in (0, 16):
        for parallel in (1, 8):
            cmd = [exe, "batch", "-m", model, "--requests", lines, "--chunk", str(chunk), "--parallel", str(parallel)]
            p = subprocess.run(cmd + extra, capture_output=True)
            got = {}
            for line in p.stdout.decode("utf-8").splitlines():
                r = json.loads(line)
                if "error" in r:
                    got[r["id"]] = ("error", r["error"])
                    continue
                if (r["cached_tokens"] != 0) != (r["id"] == "p2"):
                    bad += 1
                    print("request %s reports %d cached tokens" % (r["id"], r["cached_tokens"]))
                hyps = [(h["tokens"], round(h["score"], 4)) for h in r["hypotheses"]] if "hypotheses" in r else None
                got[r["id"]] = (r["text"], r["finish_reason"], hyps)
            for req in reqs:
                if got.get(req["id"]) != expected[req["id"]]:
                    bad += 1
                    print("MISMATCH %s chunk %d parallel %d %s:\n  run:   %r\n  batch: %r" %
                          (name, chunk, parallel, req["id"], expected[req["id"]], got.get(req["id"])))
            print("%s chunk %2d parallel %d: %d requests; %s" % (name, chunk, parallel, len(got),
                                                                 p.stderr.decode().strip().splitlines()[-1]))
    return bad


failures += run_batch(requests + lookup_requests, "lookup", [])
failures += run_batch(requests[:8] + drafted_requests, "drafted", ["--draft", draft])
if failures:
    sys.exit("%d failures" % failures)
print("all %d requests (plain, beam, speculative) identical to basalt run in every configuration; greedy speculative "
      "equals plain greedy (%d drafts accepted, %d rejected and restored)" % (len(expected), accepted, rejected))
