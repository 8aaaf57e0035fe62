#!/usr/bin/env python3
"""Load client for basalt serve: throughput, time to first token (TTFT) and inter-token latency (ITL) of streaming
completions at given concurrencies (docs/server.md, "Measured").

bench/serve-load.py --url http://127.0.0.1:8080 [--concurrency 1 8 32] [--requests N] [--max-tokens N]
                    [--prompt-words N] [--no-arrival] [--json]

Each client thread sends streaming /v1/completions (ignore_eos, greedy, a distinct prompt each) back to back;
TTFT is request sent -> first text event, ITL the gaps between text events (one event per engine step and
choice, so one event may carry several tokens under speculative decoding; here plain decoding: one token each).
Throughput = generated tokens (usage) / wall time of the level.
"""
import argparse
import http.client
import json
import threading
import time
import urllib.parse


def pct(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    k = min(len(xs) - 1, max(0, int(round(p / 100.0 * (len(xs) - 1)))))
    return xs[k]


def one(host, port, body, out):
    c = http.client.HTTPConnection(host, port, timeout=600)
    t0 = time.perf_counter()
    c.request("POST", "/v1/completions", body=json.dumps(body), headers={"Content-Type": "application/json"})
    r = c.getresponse()
    if r.status != 200:
        raise RuntimeError("status %d: %s" % (r.status, r.read()[:200]))
    times, tokens = [], 0
    while True:
        line = r.readline()
        if not line:
            break
        if not line.startswith(b"data: "):
            continue
        data = line[6:].strip()
        if data == b"[DONE]":
            break
        j = json.loads(data)
        now = time.perf_counter()
        if j["choices"]:  # one event per engine step that produced tokens (text may be empty)
            times.append(now)
        if j.get("usage"):
            tokens = j["usage"]["completion_tokens"]
    c.close()
    out.append({"ttft": times[0] - t0 if times else float("nan"),
                "itl": [b - a for a, b in zip(times, times[1:])], "tokens": tokens, "times": times})


def steady_itl(results):
    """--no-arrival: the gaps while every stream decodes (after the last first token, before the first finish)."""
    start = max(r["times"][0] for r in results if r["times"])
    end = min(r["times"][-1] for r in results if r["times"])
    return [(b - a) * 1000 for r in results for a, b in zip(r["times"], r["times"][1:]) if a >= start and b <= end]


def level(host, port, conc, n_req, max_tokens, prompt_words, no_arrival=False):
    results, lock, idx = [], threading.Lock(), [0]
    if no_arrival:
        n_req = conc  # one request per client, all sent at once: no prompt arrives while they decode

    def worker():
        while True:
            with lock:
                i = idx[0]
                idx[0] += 1
            if i >= n_req:
                return
            prompt = "Request %d: " % i + " ".join("word%d" % ((i * 7 + k) % 50) for k in range(prompt_words))
            body = {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "ignore_eos": True, "stream": True}
            one(host, port, body, results)

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(conc)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    ttft = [r["ttft"] * 1000 for r in results]
    itl = steady_itl(results) if no_arrival else [x * 1000 for r in results for x in r["itl"]]
    tokens = sum(r["tokens"] for r in results)
    return {"concurrency": conc, "requests": len(results), "tokens": tokens, "wall_s": wall,
            "tokens_per_s": tokens / wall, "ttft_p50_ms": pct(ttft, 50), "ttft_p99_ms": pct(ttft, 99),
            "itl_p50_ms": pct(itl, 50), "itl_p99_ms": pct(itl, 99)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", default="http://127.0.0.1:8080")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    ap.add_argument("--requests", type=int, default=0, help="requests per level (default: 4 x concurrency, >= 8)")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--prompt-words", type=int, default=32)
    ap.add_argument("--no-arrival", action="store_true",
                    help="one request per client, sent together; ITL only while all of them decode (the baseline "
                         "of the arrival benchmark)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    u = urllib.parse.urlparse(a.url)
    rows = []
    for conc in a.concurrency:
        n = a.requests or max(8, 4 * conc)
        rows.append(level(u.hostname, u.port or 80, conc, n, a.max_tokens, a.prompt_words, a.no_arrival))
    if a.json:
        print(json.dumps(rows, indent=1))
        return
    print("| concurrency | requests | tokens | throughput (tok/s) | TTFT p50 (ms) | TTFT p99 (ms) | ITL p50 (ms) | ITL p99 (ms) |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| %d | %d | %d | %.1f | %.1f | %.1f | %.2f | %.2f |" % (
            r["concurrency"], r["requests"], r["tokens"], r["tokens_per_s"], r["ttft_p50_ms"], r["ttft_p99_ms"],
            r["itl_p50_ms"], r["itl_p99_ms"]))


if __name__ == "__main__":
    main()
