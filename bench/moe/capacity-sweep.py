#!/usr/bin/python3
"""MoE routing under expert capacity (docs/moe.md): what capacity factor and overflow policy do to a model's output.

    PYTHONPATH=build/lib/python3/dist-packages bench/moe/capacity-sweep.py [--model M.gguf] [--text FILE] [--ctx 128] [--batch 128]
                                                        [--tokens 2048] [--backend cpu]

The text (default: this repository's docs/*.md joined, first --tokens tokens) is scored in chunks of --ctx tokens,
each chunk decoded in passes of --batch rows (capacity is per pass: ceil(C x rows x k / n_expert)), every token
after the first of its chunk predicted from the ones before it (`basalt perplexity`'s scoring). For the dropless
router and each capacity factor x {drop, reroute}: perplexity, the share of all (token, rank) assignments dropped and
rerouted over every layer, the mean KL divergence KL(dropless || this) of the next-token distributions and how often
the argmax agrees with dropless. Prints a Markdown table.
"""
import argparse
import glob
import math
import os
import sys

import numpy as np

import basalt

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def score(rt, model, ids, router, ctx, batch, backend):
    """Log-probabilities [N, vocab] of every scored position, and the session's routing statistics."""
    rows = []
    with basalt.Session(rt, model, n_ctx=ctx, n_batch=batch, backend=backend, moe_router=router,
                        kv_params={"k_type": "f32", "v_type": "f32"}) as s:
        s.set_moe_stats(True)
        for begin in range(0, len(ids) - 1, ctx):
            chunk = ids[begin:begin + ctx]
            if len(chunk) < 2:
                break
            s.seq_drop(0)
            s.decode(chunk, positions=list(range(len(chunk))), logits=[True] * (len(chunk) - 1) + [False])
            for r in range(len(chunk) - 1):
                lg = np.asarray(s.logits(r), dtype=np.float64)
                lg -= lg.max()
                rows.append((lg - math.log(np.exp(lg).sum()), chunk[r + 1]))
        stats = s.moe_stats()
    return rows, stats


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=os.path.join(ROOT, "..", "shared", "testdata", "golden", "models",
                                                    "tiny-llama-moe-f32.gguf"))
    ap.add_argument("--text")
    ap.add_argument("--ctx", type=int, default=128)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--tokens", type=int, default=2048)
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--factors", default="0.5,1.0,1.25,2.0")
    a = ap.parse_args()
    if a.text:
        text = open(a.text, encoding="utf-8").read()
    else:
        text = "\n".join(open(p, encoding="utf-8").read() for p in sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))))
    with basalt.Runtime() as rt, basalt.Model(a.model, rt) as model:
        ids = model.tokenize(text)[:a.tokens]
        k = model.n_expert_used
        base, base_stats = score(rt, model, ids, "dropless", a.ctx, a.batch, a.backend)
        imb = max(layer["imbalance"] for layer in base_stats)
        print(f"model {os.path.basename(a.model)}: {model.n_expert} experts, k = {k}, {model.n_layer} layers; "
              f"{len(ids)} tokens, chunks of {a.ctx}, passes of {a.batch} rows; dropless max imbalance {imb:.2f}\n")
        print("| router | perplexity | dropped | rerouted | KL(dropless ‖ router) nats | argmax = dropless |")
        print("|---|---|---|---|---|---|")
        routers = ["dropless"] + [f"capacity:factor={f},overflow={o}" for f in a.factors.split(",")
                                  for o in ("drop", "reroute")]
        for router in routers:
            rows, stats = score(rt, model, ids, router, a.ctx, a.batch, a.backend)
            nll = -np.mean([lp[t] for lp, t in rows])
            kl = np.mean([np.sum(np.exp(b) * (b - lp)) for (b, _), (lp, _) in zip(base, rows)])
            agree = np.mean([np.argmax(b) == np.argmax(lp) for (b, _), (lp, _) in zip(base, rows)])
            total = sum(layer["tokens"] for layer in stats) * k
            dropped = sum(layer["dropped"] for layer in stats) / total
            rerouted = sum(layer["rerouted"] for layer in stats) / total
            print(f"| {router} | {math.exp(nll):.2f} | {100 * dropped:.1f}% | {100 * rerouted:.1f}% | {kl:.4f} | "
                  f"{100 * agree:.1f}% |")


if __name__ == "__main__":
    sys.exit(main())
