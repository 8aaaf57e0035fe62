#!/usr/bin/python3
"""Diversity and repetition of decoding strategies on the shipped target (docs/decoding.md, "Contrastive decoding").

    bench/decoding-diversity.py [--basalt build/bin/basalt] [--text models/fortunes-valid.txt] [--prompts 50]
                                [--words 6] [-n 64] [--json OUT.json]

Prompts: the first --words words of the first --prompts fortunes of the text (fortunes are separated by lines
holding '%'; fortunes shorter than --words + 2 words are skipped). Each strategy continues each prompt for -n tokens
with `basalt run --json` (the generation stops earlier only at an end-of-text token). Figures, over the generated
token ids only (the prompt excluded):

  distinct-n   corpus level (Li et al. 2016): distinct n-grams of all continuations / all their n-grams, n = 1, 2, 3;
  rep-4        within one continuation, 1 - distinct 4-grams / 4-grams (Welleck et al. 2019's seq-rep-4), the mean
               over continuations: the share of repeated 4-grams, the repetition rate of the table;
  rep-l16      the share of tokens that already occur among the 16 tokens before them (Welleck et al.'s rep/l);
  nll          the target's mean negative log-likelihood (nats/token) of the continuations given their prompts
               (`basalt eval`): how likely the expert finds the text, a fluency proxy, not a quality judgement;
  tokens       mean continuation length.

A strategy whose decoder is not loaded (beam before it lands on main) gets a row of "n/a".
"""
import argparse
import array
import json
import math
import os
import subprocess
import sys
import tempfile
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# name, decoder spec, sampler chain, extra arguments
STRATEGIES = [
    ("greedy", "sample", "greedy", []),
    ("contrastive a=0.1", "contrastive:alpha=0.1", "greedy", ["--amateur", "draft"]),
    ("contrastive a=0.1 t=0.5", "contrastive:alpha=0.1,tau=0.5", "greedy", ["--amateur", "draft"]),
    ("beam w=4", "beam:width=4", "greedy", []),
    ("greedy + no_repeat_ngram:3", "sample", "no_repeat_ngram:n=3;greedy", []),
    ("sampling t=1 (reference point)", "sample", "dist:seed=1", []),
]


def prompts(path, count, words):
    with open(path, encoding="utf-8") as f:
        fortunes = f.read().split("\n%\n")
    out = []
    for text in fortunes:
        w = text.split()
        if len(w) < words + 2:
            continue
        out.append(" ".join(w[:words]))
        if len(out) == count:
            break
    return out


def decoders(exe):
    run = subprocess.run([exe, "plugins", "--json"], capture_output=True, text=True, check=True)
    return {c["name"] for c in json.loads(run.stdout)["components"] if c["kind"] == "decoder"}


def generate(exe, prompt, n, decoder, chain, extra):
    cmd = [exe, "run", "-m", "target", "-p", prompt, "-n", str(n), "--decoder", decoder, "--samplers", chain,
           "--json"] + extra
    run = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if run.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({run.returncode}): {run.stderr.strip()}")
    return json.loads(run.stdout)["tokens"]


def prompt_ids(exe, prompt):
    run = subprocess.run([exe, "tokenize", "-m", "target", prompt], capture_output=True, text=True, check=True)
    return [int(t) for t in run.stdout.strip().split(",")]


def target_nll(exe, prompt, continuation, workdir):
    """Mean -log p_target(continuation token | everything before it)."""
    ids = prompt + continuation
    path = os.path.join(workdir, "logits.f32")
    subprocess.run([exe, "eval", "-m", "target", "--tokens", ",".join(map(str, ids)), "--logits", path],
                   capture_output=True, text=True, check=True)
    rows = array.array("f")
    with open(path, "rb") as f:
        rows.frombytes(f.read())
    n_vocab = len(rows) // len(ids)
    total = 0.0
    for i in range(len(prompt) - 1, len(ids) - 1):
        row = rows[i * n_vocab:(i + 1) * n_vocab]
        mx = max(row)
        lse = mx + math.log(sum(math.exp(v - mx) for v in row))
        total += lse - row[ids[i + 1]]
    return total / max(1, len(continuation))


def ngrams(seq, n):
    return [tuple(seq[i:i + n]) for i in range(len(seq) - n + 1)]


def figures(outputs):
    res = {}
    for n in (1, 2, 3):
        grams = [g for o in outputs for g in ngrams(o, n)]
        res[f"distinct-{n}"] = len(set(grams)) / len(grams) if grams else 0.0
    reps = []
    for o in outputs:
        g = ngrams(o, 4)
        if g:
            reps.append(1.0 - len(Counter(g)) / len(g))
    res["rep-4"] = sum(reps) / len(reps) if reps else 0.0
    seen = hits = 0
    for o in outputs:
        for i, t in enumerate(o):
            if i == 0:
                continue
            seen += 1
            hits += t in o[max(0, i - 16):i]
    res["rep-l16"] = hits / seen if seen else 0.0
    res["tokens"] = sum(len(o) for o in outputs) / len(outputs) if outputs else 0.0
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--basalt", default=os.path.join(ROOT, "build", "bin", "basalt"))
    ap.add_argument("--text", default=os.path.join(ROOT, "models", "fortunes-valid.txt"))
    ap.add_argument("--prompts", type=int, default=50)
    ap.add_argument("--words", type=int, default=6)
    ap.add_argument("-n", type=int, default=64)
    ap.add_argument("--json", help="also write the figures and the continuations here")
    args = ap.parse_args()
    ps = prompts(args.text, args.prompts, args.words)
    have = decoders(args.basalt)
    rows, dump = [], {"prompts": ps, "n": args.n, "strategies": {}}
    for name, decoder, chain, extra in STRATEGIES:
        if decoder.split(":")[0] not in have:
            rows.append((name, decoder, chain, None))
            continue
        outs = [generate(args.basalt, p, args.n, decoder, chain, extra) for p in ps]
        fig = figures(outs)
        with tempfile.TemporaryDirectory() as tmp:
            nlls = [target_nll(args.basalt, prompt_ids(args.basalt, p), o, tmp) for p, o in zip(ps, outs) if o]
        fig["nll"] = sum(nlls) / len(nlls) if nlls else float("nan")
        rows.append((name, decoder, chain, fig))
        dump["strategies"][name] = {"decoder": decoder, "samplers": chain, "figures": fig, "tokens": outs}
    cols = ["distinct-1", "distinct-2", "distinct-3", "rep-4", "rep-l16", "nll", "tokens"]
    print(f"{len(ps)} prompts ({args.words} words) from {os.path.relpath(args.text, ROOT)}, {args.n} tokens each, "
          "model target")
    print("| strategy | decoder | samplers | " + " | ".join(cols) + " |")
    print("|---|---|---|" + "---:|" * len(cols))
    for name, decoder, chain, fig in rows:
        vals = ["n/a (decoder not loaded)"] + ["n/a"] * (len(cols) - 1) if fig is None else \
            [f"{fig[c]:.3f}" if c != "tokens" else f"{fig[c]:.1f}" for c in cols]
        print(f"| {name} | `{decoder}` | `{chain}` | " + " | ".join(vals) + " |")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(dump, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
