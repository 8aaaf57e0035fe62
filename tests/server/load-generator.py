#!/usr/bin/env python3
"""bench/serve-load.py against `basalt serve` (the shipped target model, a few short requests): every arrival pattern
at two concurrencies gives a row with its fields, the request and token counts its pattern implies, prompts of
exactly --prompt-tokens tokens (as the server's usage counts them) and finite latencies; then
bench/serve-compare-table.py turns two such runs into its table. No timing is asserted.

load-generator.py BASALT REPO
"""
import json
import math
import os
import subprocess
import sys
import tempfile

from serve_harness import Server, check, failures

CONCURRENCY, REQUESTS, MAX_TOKENS, PROMPT, LONG = [1, 2], 3, 5, 12, 40
FIELDS = ["arrivals", "concurrency", "requests", "tokens", "prompt_tokens_mean", "wall_s", "tokens_per_s",
          "ttft_p50_ms", "ttft_p99_ms", "itl_p50_ms", "itl_p99_ms"]


def finite_positive(x):
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0


def expected_tokens(arrivals, conc):
    if arrivals == "long":
        return conc * MAX_TOKENS
    if arrivals == "none":
        return REQUESTS * MAX_TOKENS
    # continuous: client k's first request is cut to ceil((k + 1) * max_tokens / conc); the rest are whole.
    firsts = [max(1, -(-(k + 1) * MAX_TOKENS // conc)) for k in range(min(conc, REQUESTS))]
    return sum(firsts) + (REQUESTS - len(firsts)) * MAX_TOKENS


def main():
    basalt, repo = sys.argv[1], sys.argv[2]
    load = os.path.join(repo, "bench", "serve-load.py")
    srv = Server(basalt, ["--parallel", "3", "--ctx", "256", "--threads", "1"], name="loadgen")
    runs = []
    try:
        for _ in range(2):
            out = subprocess.run(
                [sys.executable, load, "--url", "http://127.0.0.1:%d" % srv.port, "--concurrency"] +
                [str(c) for c in CONCURRENCY] + ["--arrivals", "none", "continuous", "long", "--requests",
                                                 str(REQUESTS), "--max-tokens", str(MAX_TOKENS), "--prompt-tokens",
                                                 str(PROMPT), "--long-prompt-tokens", str(LONG), "--json"],
                capture_output=True, text=True, timeout=240)
            check("serve-load.py exits 0", out.returncode == 0, out.stderr[-2000:])
            runs.append(json.loads(out.stdout) if out.returncode == 0 else [])
        text = subprocess.run([sys.executable, load, "--url", "http://127.0.0.1:%d" % srv.port, "--concurrency", "2",
                               "--requests", "2", "--max-tokens", "3", "--prompt-words", "6"],
                              capture_output=True, text=True, timeout=120)
        check("the Markdown table (word prompts)", text.returncode == 0 and text.stdout.startswith("| arrivals |")
              and "| none | 2 | 2 | 6 |" in text.stdout, text.stdout + text.stderr[-1000:])
    finally:
        srv.stop()

    rows = runs[0]
    want = [(a, c) for c in CONCURRENCY for a in ("none", "continuous", "long")]
    check("one row per concurrency and pattern, in order", [(r.get("arrivals"), r.get("concurrency")) for r in rows]
          == want, str(rows)[:500])
    for r in rows:
        name = "%s x%d" % (r.get("arrivals"), r.get("concurrency"))
        fields = FIELDS + (["long_prompt_tokens", "long_ttft_ms", "long_solo_ttft_ms"] if r["arrivals"] == "long"
                           else [])
        check(name + ": fields", all(f in r for f in fields), ", ".join(sorted(r)))
        n_req = r["concurrency"] if r["arrivals"] == "long" else REQUESTS
        check(name + ": requests", r.get("requests") == n_req, str(r.get("requests")))
        check(name + ": tokens", r.get("tokens") == expected_tokens(r["arrivals"], r["concurrency"]),
              "%s, expected %d" % (r.get("tokens"), expected_tokens(r["arrivals"], r["concurrency"])))
        check(name + ": prompts of exactly %d tokens" % PROMPT, r.get("prompt_tokens_mean") == PROMPT,
              str(r.get("prompt_tokens_mean")))
        # ITL is NaN when no request of the level had two token events: this tiny model's steps can outrun the HTTP
        # writer, which then sends several steps' tokens in one event.
        check(name + ": finite positive throughput and TTFT, ITL numbers",
              all(finite_positive(r.get(f)) for f in FIELDS[5:9]) and
              all(isinstance(r.get(f), float) for f in FIELDS[9:]), json.dumps(r))
        if r["arrivals"] == "long":
            check(name + ": the long prompt's size and TTFTs", r.get("long_prompt_tokens") == LONG and
                  finite_positive(r.get("long_ttft_ms")) and finite_positive(r.get("long_solo_ttft_ms")), json.dumps(r))

    check("a finite ITL somewhere", any(finite_positive(r.get("itl_p50_ms")) for r in rows), json.dumps(rows)[:1000])

    # The comparison table of bench/compare-llama-cpp.sh --serve, the two runs standing in for the two servers.
    with tempfile.TemporaryDirectory() as work:
        for rnd in (1, 2):
            for engine in ("basalt", "llama"):
                with open("%s/%s-%d.json" % (work, engine, rnd), "w") as f:
                    json.dump(runs[rnd - 1] if engine == "basalt" else runs[2 - rnd], f)
        with open(work + "/loads", "w") as f:
            f.write("1 0.50\n2 0.70\n")
        table = subprocess.run([sys.executable, os.path.join(repo, "bench", "serve-compare-table.py"), work, "2", "2"],
                               capture_output=True, text=True, timeout=60)
        lines = table.stdout.splitlines()
        check("serve-compare-table.py exits 0", table.returncode == 0, table.stderr[-2000:])
        check("a round line per round and level", sum(1 for x in lines if x.startswith("round ")) == 2 * len(want),
              table.stdout[:2000])
        rows_md = [x for x in lines if x.startswith("| none |") or x.startswith("| continuous |") or
                   x.startswith("| long |")]
        check("a table row per level, each ratio a median of the rounds' ratios", len(rows_md) == len(want) and
              all("x**)" in x for x in rows_md), table.stdout[-2000:])
        check("the loads", "1-minute load after each round: 0.50 0.70" in table.stdout, table.stdout[-500:])

    if failures:
        print("%d failure(s)" % len(failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
