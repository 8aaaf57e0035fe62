#!/usr/bin/env python3
"""Bounded load test of basalt serve (issue 21): 64 concurrent streaming requests x 3 rounds on the shipped target
model. No stream may be lost, truncated or interleaved with another (every event of a stream carries its own id and
choice index, the stream ends with a finish_reason then [DONE]), and every output must equal the same request run
through `basalt batch` (greedy, or seeded sampling: outputs do not depend on what shares a batch).

load.py BASALT
"""
import json
import subprocess
import sys
import threading
import time

from serve_harness import Server, sse_events

CONCURRENCY, ROUNDS, MAX_TOKENS = 64, 3, 24
WORDS = ["The best way to", "Once upon a time", "A fool and his money", "Never trust a", "In the beginning",
         "Life is", "The secret of", "Why do", "It is a truth", "Love is"]


def make_requests(round_no):
    reqs = []
    for i in range(CONCURRENCY):
        k = round_no * CONCURRENCY + i
        prompt = WORDS[k % len(WORDS)] + ("" if k % 3 == 0 else " " + str(k))
        greedy = k % 2 == 0
        chat = k % 4 == 1
        body = {"model": "target", "max_tokens": MAX_TOKENS, "stream": True}
        if greedy:
            body["temperature"] = 0
            samplers, seed = "greedy", -1
        else:
            body.update(temperature=0.8, top_k=40, seed=1000 + k)
            samplers, seed = "top_k:40;temp:0.8;dist", 1000 + k
        job = {"id": k, "max_tokens": MAX_TOKENS, "samplers": samplers}
        if seed >= 0:
            job["seed"] = seed
        if chat:
            body["messages"] = [{"role": "user", "content": prompt}]
            # The plain template (docs/server.md): "User: TEXT\nAssistant:", stopping at "\nUser:".
            job["prompt"] = "User: " + prompt + "\nAssistant:"
            job["stop"] = ["\nUser:"]
        else:
            body["prompt"] = prompt
            job["prompt"] = prompt
        reqs.append((body, job, chat))
    return reqs


def run_stream(srv, body, chat, out, idx):
    try:
        c = srv.conn(timeout=120)
        c.request("POST", "/v1/chat/completions" if chat else "/v1/completions", body=json.dumps(body),
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        if r.status != 200:
            out[idx] = {"error": "status %d: %s" % (r.status, r.read()[:200])}
            return
        text, ids, finish, usage, done, after_done = "", set(), None, None, False, False
        problems = []
        for ev in sse_events(r):
            if done:
                after_done = True
            if ev == "[DONE]":
                done = True
                continue
            j = json.loads(ev)
            ids.add(j["id"])
            for ch in j["choices"]:
                if ch["index"] != 0:
                    problems.append("choice index %r" % ch["index"])
                if finish is not None:
                    problems.append("output after finish_reason")
                text += (ch["delta"].get("content", "") if chat else ch["text"])
                if ch["finish_reason"] is not None:
                    finish = ch["finish_reason"]
            if j.get("usage"):
                usage = j["usage"]
        c.close()
        out[idx] = {"text": text, "ids": ids, "finish": finish, "usage": usage, "done": done,
                    "after_done": after_done, "problems": problems}
    except Exception as e:  # noqa: BLE001
        out[idx] = {"error": repr(e)}


def main():
    basalt = sys.argv[1]
    failures = []
    rounds = [make_requests(r) for r in range(ROUNDS)]
    # The reference: every request through basalt batch.
    lines = "\n".join(json.dumps(job) for rnd in rounds for _, job, _ in rnd) + "\n"
    p = subprocess.run([basalt, "batch", "--requests", "-", "--parallel", "8"], input=lines.encode(),
                       capture_output=True, timeout=300)
    if p.returncode != 0:
        print(p.stderr.decode())
        return 1
    ref = {}
    for line in p.stdout.decode().splitlines():
        j = json.loads(line)
        ref[j["id"]] = j
    srv = Server(basalt, ["--parallel", "16", "--max-queue", "256"], name="load")
    try:
        for r, reqs in enumerate(rounds):
            out = [None] * len(reqs)
            t0 = time.time()
            threads = [threading.Thread(target=run_stream, args=(srv, body, chat, out, i))
                       for i, (body, _, chat) in enumerate(reqs)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(180)
            wall = time.time() - t0
            tokens = 0
            for i, (body, job, chat) in enumerate(reqs):
                o, want = out[i], ref[job["id"]]
                name = "round %d request %d" % (r, job["id"])
                if o is None or "error" in o:
                    failures.append("%s: lost: %s" % (name, o))
                    continue
                if not o["done"] or o["finish"] is None:
                    failures.append("%s: truncated (done %s, finish %s)" % (name, o["done"], o["finish"]))
                if o["after_done"] or o["problems"] or len(o["ids"]) != 1:
                    failures.append("%s: interleaved or malformed: ids %s, %s" % (name, o["ids"], o["problems"]))
                if o["text"] != want["text"]:
                    failures.append("%s: text %r != basalt batch %r" % (name, o["text"], want["text"]))
                if o["usage"] is None or o["usage"]["completion_tokens"] != len(want["tokens"]):
                    failures.append("%s: usage %s, batch generated %d tokens" % (name, o["usage"], len(want["tokens"])))
                else:
                    tokens += o["usage"]["completion_tokens"]
            print("round %d: %d streams, %d tokens in %.2f s" % (r, len(reqs), tokens, wall))
        status, _, _ = srv.request("GET", "/health")
        if status != 200:
            failures.append("unhealthy after the load")
    finally:
        srv.stop()
    if failures:
        print("%d failure(s):\n  %s" % (len(failures), "\n  ".join(failures[:30])))
        return 1
    print("load: %d x %d streams, all equal to basalt batch" % (CONCURRENCY, ROUNDS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
