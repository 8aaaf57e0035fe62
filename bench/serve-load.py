#!/usr/bin/env python3
"""Load client for an OpenAI-compatible server (`basalt serve`, llama-server): throughput, time to first token (TTFT)
and inter-token latency (ITL) of streaming completions at given concurrencies, with and without prompts arriving
while other streams decode (docs/server.md, "Measured"; bench/compare-llama-cpp.sh --serve runs it on both servers).

bench/serve-load.py --url http://127.0.0.1:8080 [--concurrency 1 8 32] [--arrivals none continuous long]
                    [--requests N] [--max-tokens N] [--prompt-tokens N | --prompt-words N]
                    [--long-prompt-tokens N] [--warmup N] [--json]

Requests are streaming /v1/completions (ignore_eos, greedy, a distinct prompt each, so no prefix cache helps).
With --prompt-tokens every prompt is exactly N token ids, cut from the server's own /tokenize of a distinct text
(both servers answer `{"content"}` with `{"tokens"}`), so two servers on the same GGUF get the same prompt sizes.
Arrival patterns, each run at every concurrency C:
  none        waves: C requests start together; the next C only after the whole wave ended, so nothing arrives
              while streams decode (the no-arrival baseline)
  continuous  C clients back to back, their first requests cut to (k+1)/C of --max-tokens (k = 0..C-1), so the
              clients stay out of step: a new prompt arrives about every max_tokens/C steps while the others decode
  long        C streams start together; once each has its first token, one prompt of --long-prompt-tokens arrives
              (max_tokens 1). Reported besides the streams' figures: that prompt's TTFT, and its TTFT alone (the
              same length, another text, sent before the streams)
TTFT is request sent -> first token event; ITL the gaps between token events, what a client sees (llama-server sends
one event per token; basalt serve one per engine step and choice, several steps' tokens in one event when its HTTP
writer falls behind the engine). A closing event without text
that comes after every token (llama-server's, which carries the usage) is no token event. Throughput = generated
tokens (the streams' usage) / wall time of the level. Percentiles: nearest rank over all of a level's samples.
"""
import argparse
import http.client
import json
import math
import threading
import time
import urllib.parse

from sse_stream import sse_events


def pct(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    k = min(len(xs) - 1, max(0, int(round(p / 100.0 * (len(xs) - 1)))))
    return xs[k]


class Client:
    def __init__(self, url):
        u = urllib.parse.urlparse(url)
        self.host, self.port = u.hostname, u.port or 80

    def post(self, path, body, timeout=600):
        c = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        c.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read()
        c.close()
        if r.status != 200:
            raise RuntimeError("%s: status %d: %s" % (path, r.status, data[:200]))
        return json.loads(data)

    def stream(self, prompt, max_tokens, on_first=None):
        """One streaming completion; returns its TTFT, ITL gaps (seconds) and usage."""
        body = {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "ignore_eos": True, "stream": True}
        c = http.client.HTTPConnection(self.host, self.port, timeout=600)
        t0 = time.perf_counter()
        c.request("POST", "/v1/completions", body=json.dumps(body), headers={"Content-Type": "application/json"})
        r = c.getresponse()
        if r.status != 200:
            raise RuntimeError("/v1/completions: status %d: %s" % (r.status, r.read()[:200]))
        times, usage = [], None
        for now, j in sse_events(r):
            if "error" in j:
                raise RuntimeError("stream error: %s" % json.dumps(j["error"])[:200])
            if j.get("usage"):
                usage = j["usage"]
            if not j.get("choices"):
                continue
            ch = j["choices"][0]
            closing = ch.get("finish_reason") is not None and not ch.get("text")
            if closing and usage is not None and len(times) >= usage.get("completion_tokens", 0):
                continue  # the closing event after the last token (carries the usage, no token)
            times.append(now)
            if len(times) == 1 and on_first is not None:
                on_first()
        c.close()
        if usage is None:
            raise RuntimeError("the stream ended without usage")
        return {"ttft": times[0] - t0 if times else float("nan"), "itl": [b - a for a, b in zip(times, times[1:])],
                "tokens": usage.get("completion_tokens", 0), "prompt_tokens": usage.get("prompt_tokens", 0)}


class Prompts:
    """Distinct prompts: text of --prompt-words words, or exactly --prompt-tokens ids from the server's /tokenize."""

    def __init__(self, client, prompt_tokens, prompt_words):
        self.client, self.prompt_tokens, self.prompt_words = client, prompt_tokens, prompt_words
        self.serial = 0

    def text(self, tag, words):
        self.serial += 1
        return "Request %s %d: " % (tag, self.serial) + " ".join(
            "word%d" % ((self.serial * 7 + k * 13) % 997) for k in range(words))

    def make(self, tag, n_tokens=None):
        n = n_tokens if n_tokens is not None else self.prompt_tokens
        if not n:
            return self.text(tag, self.prompt_words)
        words = max(8, n)
        while True:
            ids = self.client.post("/tokenize", {"content": self.text(tag, words), "add_special": False})["tokens"]
            if len(ids) >= n:
                return [t if isinstance(t, int) else t["id"] for t in ids[:n]]
            words *= 2


def summarize(arrivals, conc, results, wall, extra=None):
    ttft = [r["ttft"] * 1000 for r in results]
    itl = [x * 1000 for r in results for x in r["itl"]]
    tokens = sum(r["tokens"] for r in results)
    row = {"arrivals": arrivals, "concurrency": conc, "requests": len(results), "tokens": tokens,
           "prompt_tokens_mean": sum(r["prompt_tokens"] for r in results) / max(1, len(results)), "wall_s": wall,
           "tokens_per_s": tokens / wall if wall > 0 else float("nan"), "ttft_p50_ms": pct(ttft, 50),
           "ttft_p99_ms": pct(ttft, 99), "itl_p50_ms": pct(itl, 50), "itl_p99_ms": pct(itl, 99)}
    row.update(extra or {})
    return row


def run_threads(fns):
    """Runs each function on its own thread; re-raises the first failure."""
    errors = []

    def wrap(f):
        try:
            f()
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=wrap, args=(f,)) for f in fns]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def level_none(client, prompts, conc, n_req, max_tokens):
    results, lock = [], threading.Lock()
    waves = [[prompts.make("n%d" % conc) for _ in range(min(conc, n_req - w))] for w in range(0, n_req, conc)]

    def one(p):
        r = client.stream(p, max_tokens)
        with lock:
            results.append(r)

    t0 = time.perf_counter()
    for wave in waves:
        run_threads([lambda p=p: one(p) for p in wave])
    return summarize("none", conc, results, time.perf_counter() - t0)


def level_continuous(client, prompts, conc, n_req, max_tokens):
    results, lock, queue = [], threading.Lock(), [prompts.make("c%d" % conc) for _ in range(n_req)]

    def worker(k):
        first = True
        while True:
            with lock:
                if not queue:
                    return
                p = queue.pop()
            # The first request of client k ends after (k+1)/conc of max_tokens: the clients stay out of step.
            n = max(1, math.ceil((k + 1) * max_tokens / conc)) if first else max_tokens
            first = False
            r = client.stream(p, n)
            with lock:
                results.append(r)

    t0 = time.perf_counter()
    run_threads([lambda k=k: worker(k) for k in range(conc)])
    return summarize("continuous", conc, results, time.perf_counter() - t0)


def level_long(client, prompts, conc, max_tokens, long_tokens):
    solo = client.stream(prompts.make("solo%d" % conc, long_tokens), 1)
    streams = [prompts.make("l%d" % conc) for _ in range(conc)]
    long_prompt = prompts.make("long%d" % conc, long_tokens)
    results, lock, started, long_out = [], threading.Lock(), [0], {}
    all_started = threading.Event()

    def first_token():
        with lock:
            started[0] += 1
            if started[0] == conc:
                all_started.set()

    def one(p):
        r = client.stream(p, max_tokens, on_first=first_token)
        with lock:
            results.append(r)

    def arrive():
        if not all_started.wait(600):
            raise RuntimeError("the streams did not all start within 600 s")
        long_out.update(client.stream(long_prompt, 1))

    t0 = time.perf_counter()
    run_threads([lambda p=p: one(p) for p in streams] + [arrive])
    wall = time.perf_counter() - t0
    return summarize("long", conc, results, wall,
                     {"long_prompt_tokens": long_out["prompt_tokens"], "long_ttft_ms": long_out["ttft"] * 1000,
                      "long_solo_ttft_ms": solo["ttft"] * 1000})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", default="http://127.0.0.1:8080")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    ap.add_argument("--arrivals", nargs="+", default=["none"], choices=["none", "continuous", "long"])
    ap.add_argument("--requests", type=int, default=0,
                    help="requests per level for none and continuous (default: 2 x concurrency, >= 4)")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--prompt-tokens", type=int, default=0, help="prompts of exactly N token ids (via /tokenize)")
    ap.add_argument("--prompt-words", type=int, default=32, help="prompts of N words (without --prompt-tokens)")
    ap.add_argument("--long-prompt-tokens", type=int, default=1000)
    ap.add_argument("--warmup", type=int, default=1, help="short requests before the first level (not measured)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if min(a.concurrency) < 1 or a.max_tokens < 1 or a.requests < 0 or a.prompt_tokens < 0 or a.long_prompt_tokens < 1:
        ap.error("concurrency, --max-tokens and --long-prompt-tokens must be >= 1, --requests and --prompt-tokens >= 0")
    client = Client(a.url)
    prompts = Prompts(client, a.prompt_tokens, a.prompt_words)
    for _ in range(a.warmup):
        client.stream(prompts.make("warmup"), 4)
    rows = []
    for conc in a.concurrency:
        n = a.requests or max(4, 2 * conc)
        for arrivals in a.arrivals:
            if arrivals == "none":
                rows.append(level_none(client, prompts, conc, n, a.max_tokens))
            elif arrivals == "continuous":
                rows.append(level_continuous(client, prompts, conc, n, a.max_tokens))
            else:
                rows.append(level_long(client, prompts, conc, a.max_tokens, a.long_prompt_tokens))
    if a.json:
        print(json.dumps(rows, indent=1))
        return
    print("| arrivals | concurrency | requests | tokens | throughput (tok/s) | TTFT p50 (ms) | TTFT p99 (ms) | "
          "ITL p50 (ms) | ITL p99 (ms) | long prompt TTFT (ms), alone (ms) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        long = ("%.1f, %.1f" % (r["long_ttft_ms"], r["long_solo_ttft_ms"])) if r["arrivals"] == "long" else ""
        print("| %s | %d | %d | %d | %.1f | %.1f | %.1f | %.2f | %.2f | %s |" % (
            r["arrivals"], r["concurrency"], r["requests"], r["tokens"], r["tokens_per_s"], r["ttft_p50_ms"],
            r["ttft_p99_ms"], r["itl_p50_ms"], r["itl_p99_ms"], long))


if __name__ == "__main__":
    main()
