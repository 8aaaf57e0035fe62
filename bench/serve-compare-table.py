#!/usr/bin/env python3
"""The table of `bench/compare-llama-cpp.sh --serve`: reads each round's bench/serve-load.py JSON of both servers
(DIR/basalt-R.json, DIR/llama-R.json, R = 1..ROUNDS) and the 1-minute load after each round (DIR/loads: "R LOAD"),
prints each round's ratios, then a Markdown table of the medians over the rounds with the basalt / llama-server
ratio of each figure (the median of the rounds' ratios). Throughput: higher is better; TTFT and ITL: lower is better,
so a ratio below 1 is Basalt ahead.

    bench/serve-compare-table.py DIR ROUNDS CORES
"""
import json
import math
import statistics
import sys

FIGURES = [("tokens_per_s", "throughput (tok/s)", "%.1f"), ("ttft_p50_ms", "TTFT p50 (ms)", "%.0f"),
           ("ttft_p99_ms", "TTFT p99 (ms)", "%.0f"), ("itl_p50_ms", "ITL p50 (ms)", "%.1f"),
           ("itl_p99_ms", "ITL p99 (ms)", "%.1f")]
LONG = [("long_ttft_ms", "long prompt TTFT (ms)", "%.0f"), ("long_solo_ttft_ms", "long prompt alone (ms)", "%.0f")]


def ratio(a, b):
    return a / b if b > 0 and math.isfinite(a) and math.isfinite(b) else float("nan")


def med(xs):
    xs = [x for x in xs if math.isfinite(x)]
    return statistics.median(xs) if xs else float("nan")


def main():
    work, rounds, cores = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    levels = {}  # (arrivals, concurrency) -> {"basalt": [row per round], "llama": [...]}
    order = []
    for r in range(1, rounds + 1):
        for engine in ("basalt", "llama"):
            for row in json.load(open("%s/%s-%d.json" % (work, engine, r))):
                key = (row["arrivals"], row["concurrency"])
                if key not in levels:
                    levels[key] = {"basalt": [], "llama": []}
                    order.append(key)
                levels[key][engine].append(row)
    loads = [float(line.split()[1]) for line in open(work + "/loads") if line.strip()]

    for r in range(rounds):
        for key in order:
            b, l = levels[key]["basalt"][r], levels[key]["llama"][r]
            parts = ["%s %s / %s (%.2fx)" % (name.split(" (")[0], fmt % b[f], fmt % l[f], ratio(b[f], l[f]))
                     for f, name, fmt in FIGURES + (LONG if key[0] == "long" else [])]
            print("round %d %s x%d: %s | load %.2f" % (r + 1, key[0], key[1], "; ".join(parts), loads[r]))

    has_long = any(k[0] == "long" for k in order)
    cols = FIGURES + (LONG if has_long else [])
    print()
    print("| arrivals | streams | " + " | ".join(name + ", basalt / llama-server (ratio)" for _, name, _ in cols) + " |")
    print("|---|---|" + "---|" * len(cols))
    for key in order:
        b, l = levels[key]["basalt"], levels[key]["llama"]
        cells = []
        for f, _, fmt in cols:
            if f not in b[0]:
                cells.append("")
                continue
            mb, ml = med([x[f] for x in b]), med([x[f] for x in l])
            mr = med([ratio(x[f], y[f]) for x, y in zip(b, l)])
            cells.append("%s / %s (**%.2fx**)" % (fmt % mb, fmt % ml, mr))
        print("| %s | %d | %s |" % (key[0], key[1], " | ".join(cells)))
    print()
    print("prompt tokens per request (basalt / llama-server usage): " + ", ".join(
        "%s x%d %.0f / %.0f" % (k[0], k[1], levels[k]["basalt"][0]["prompt_tokens_mean"],
                                levels[k]["llama"][0]["prompt_tokens_mean"]) for k in order))
    print("1-minute load after each round: " + " ".join("%.2f" % x for x in loads))
    if loads and max(loads) > cores:
        print("note: the machine was busy (1-minute load up to %.1f on %d cores): the ratios measure how each server"
              " copes with contention as much as the servers; rerun when it is calm" % (max(loads), cores))


if __name__ == "__main__":
    main()
