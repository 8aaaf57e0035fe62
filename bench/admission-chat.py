#!/usr/bin/env python3
"""Concurrent chat-like requests sustained in a fixed KV budget: `basalt serve --admission on-demand` (admit by the
KV blocks a request needs now, preempt the newest when they run out) against `--admission reserve` (each request
holds prompt + max_tokens slots from its admission) and against llama-server given the same KV memory
(docs/performance.md "Admission by real KV use").

bench/admission-chat.py --basalt build/bin/basalt --llama-server PATH -m MODEL [--kv 1024] [--ctx 256]
                        [--clients 16] [--requests 48] [--rounds 3] [--threads 2] [--json]

Every request is a streaming /v1/completions that asks for as much as the context allows (max_tokens = ctx minus
its prompt, as a chat request with the default max_tokens does) and ends where the model ends its fortune (the
stop string "\n%", the corpus' separator: the shipped target has no end token of its own), greedy; the prompts are
the openings of held-out fortunes, so each answer is as long as the model makes it. `--clients`
threads send them back to back. Per configuration: the concurrency sustained (the mean number of requests
between their first and last streamed token, over the run's wall time: sum of decode intervals / wall), the
largest, completed requests per second, generated tokens per second, TTFT p50, and failed requests; for basalt
the preemptions (/metrics). Configurations, rounds interleaved:
  basalt reserve    basalt serve --kv-slots KV --parallel CLIENTS --ctx CTX --admission reserve
  basalt on-demand  the same with --admission on-demand
  llama split       llama-server -c KV -np KV/CTX --no-kv-unified (each slot a whole context: KV/CTX at once)
  llama unified     llama-server -c KV -np CLIENTS --kv-unified (one shared KV buffer, a slot may use all of it)
"""
import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from sse_stream import sse_events


def pct(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, int(round(p / 100.0 * (len(xs) - 1)))))]


def wait_ready(port, proc, timeout=120):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if proc.poll() is not None:
            raise RuntimeError("server exited with %d" % proc.returncode)
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", "/health")
            r = c.getresponse()
            r.read()
            if r.status == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError("server not ready on port %d" % port)


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def one(port, body, out, lock):
    rec = {"t0": time.perf_counter(), "events": [], "tokens": 0, "error": None, "finish": None}
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=900)
        c.request("POST", "/v1/completions", body=json.dumps(body), headers={"Content-Type": "application/json"})
        r = c.getresponse()
        if r.status != 200:
            rec["error"] = "status %d: %s" % (r.status, r.read()[:200])
        else:
            for now, j in sse_events(r):
                if "error" in j:
                    rec["error"] = str(j["error"])[:200]
                    break
                if j.get("choices"):
                    rec["events"].append(now)
                    if j["choices"][0].get("finish_reason"):
                        rec["finish"] = j["choices"][0]["finish_reason"]
                if j.get("usage"):
                    rec["tokens"] = j["usage"]["completion_tokens"]
        c.close()
    except (OSError, http.client.HTTPException, ValueError) as e:
        rec["error"] = repr(e)
    if not rec["tokens"]:
        rec["tokens"] = len(rec["events"])  # one streamed event per token when the server sends no usage
    with lock:
        out.append(rec)


def load(port, prompts, clients, max_tokens_for):
    out, lock, idx = [], threading.Lock(), [0]

    def worker():
        while True:
            with lock:
                i = idx[0]
                idx[0] += 1
            if i >= len(prompts):
                return
            body = {"prompt": prompts[i], "max_tokens": max_tokens_for(prompts[i]), "temperature": 0, "stop": ["\n%"],
                    "stream": True, "stream_options": {"include_usage": True}}
            one(port, body, out, lock)

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    t1 = time.perf_counter()
    wall = t1 - t0
    ok = [r for r in out if r["error"] is None and r["events"]]
    busy = sum(r["events"][-1] - r["events"][0] for r in ok)
    # The largest number of requests decoding at once (between their first and last event).
    edges = sorted([(r["events"][0], 1) for r in ok] + [(r["events"][-1], -1) for r in ok])
    cur = peak = 0
    for _, d in edges:
        cur += d
        peak = max(peak, cur)
    return {"wall_s": wall, "requests": len(ok), "failed": len(out) - len(ok),
            "errors": sorted({r["error"] for r in out if r["error"]})[:3],
            "finish": {f: sum(1 for r in ok if r["finish"] == f) for f in {r["finish"] for r in ok}},
            "tokens": sum(r["tokens"] for r in ok), "concurrency": busy / wall, "peak": peak,
            "req_per_s": len(ok) / wall, "tok_per_s": sum(r["tokens"] for r in ok) / wall,
            "ttft_p50_ms": pct([(r["events"][0] - r["t0"]) * 1000 for r in ok], 50)}


def metric(port, name):
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        c.request("GET", "/metrics")
        text = c.getresponse().read().decode()
        for line in text.splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    except OSError:
        pass
    return float("nan")


def run_config(a, name, prompts, tokenize):
    port = free_port()
    if name.startswith("basalt"):
        admission = name.split()[1]
        cmd = [a.basalt, "serve", "-m", a.model, "--port", str(port), "--ctx", str(a.ctx), "--parallel",
               str(a.clients), "--kv-slots", str(a.kv), "--admission", admission, "--threads", str(a.threads),
               "--max-queue", str(len(prompts) + 8)]
    else:
        unified = name.endswith("unified")
        np_ = a.clients if unified else max(1, a.kv // a.ctx)
        cmd = [a.llama_server, "-m", a.model, "--port", str(port), "-c", str(a.kv), "-np", str(np_), "-t",
               str(a.threads), "--kv-unified" if unified else "--no-kv-unified", "--metrics", "-cb"]
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_ready(port, proc)
        res = load(port, prompts, a.clients, lambda p: a.ctx - tokenize[p] - 1)
        if name.startswith("basalt"):
            res["preemptions"] = metric(port, "basalt_engine_preemptions_total")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    res["config"] = name
    res["cmd"] = " ".join(cmd)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--basalt", default="build/bin/basalt")
    ap.add_argument("--llama-server", default=os.path.expanduser(
        "~/.cache/basalt-llama-cpp/build-v0.5.0/bin/llama-server"))
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("--kv", type=int, default=1024, help="KV slots (token positions) of the whole cache")
    ap.add_argument("--ctx", type=int, default=256, help="context of one request")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--requests", type=int, default=48)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--fortunes", default="models/fortunes-valid.txt")
    ap.add_argument("--configs", nargs="+",
                    default=["basalt reserve", "basalt on-demand", "llama split", "llama unified"])
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    # Prompts: the first words of held-out fortunes (separated by "%" lines in the file).
    text = open(a.fortunes, encoding="utf-8").read()
    fortunes = [f.strip() for f in text.split("\n%\n") if len(f.split()) >= 6]
    prompts = [" ".join(f.split()[:5]) for f in fortunes[:a.requests]]
    # Prompt lengths in tokens, from basalt's tokenizer (the same vocabulary for both servers).
    tokenize = {}
    for p in prompts:
        r = subprocess.run([a.basalt, "tokenize", "-m", a.model, p, "--json"], capture_output=True, text=True)
        tokenize[p] = len(json.loads(r.stdout)) if r.returncode == 0 else 32
    rows = {c: [] for c in a.configs}
    for rnd in range(a.rounds):
        for c in a.configs:
            res = run_config(a, c, prompts, tokenize)
            rows[c].append(res)
            print("round %d %-18s conc %.2f peak %d req/s %.3f tok/s %.1f failed %d preempt %s %s" % (
                rnd, c, res["concurrency"], res["peak"], res["req_per_s"], res["tok_per_s"], res["failed"],
                res.get("preemptions", "-"), res["finish"]), file=sys.stderr, flush=True)
            if res["errors"]:
                print("  errors: %s" % res["errors"], file=sys.stderr, flush=True)
    if a.json:
        print(json.dumps(rows, indent=1))
        return
    base = statistics.median(r["concurrency"] for r in rows[a.configs[0]])
    print("| configuration | concurrency sustained | peak | / %s | requests/s | tokens/s | TTFT p50 (ms) | failed | "
          "preemptions |" % a.configs[0])
    print("|---|---|---|---|---|---|---|---|---|")
    for c in a.configs:
        med = lambda k: statistics.median(r[k] for r in rows[c])
        print("| %s | %.2f | %d | %.2fx | %.3f | %.1f | %.0f | %d | %s |" % (
            c, med("concurrency"), max(r["peak"] for r in rows[c]), med("concurrency") / base, med("req_per_s"),
            med("tok_per_s"), med("ttft_p50_ms"), sum(r["failed"] for r in rows[c]),
            "%.0f" % med("preemptions") if "preemptions" in rows[c][0] else "-"))


if __name__ == "__main__":
    main()
