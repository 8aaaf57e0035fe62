#!/usr/bin/python3
"""Checks Basalt's shipped model pair (models/) against the figures the training script recorded.

Usage: check_models.py BASALT_EXE MODELS_SOURCE_DIR
  1. both shipped models load by short name (`target`, `draft`) with the shapes metrics.json records;
  2. `basalt perplexity --ctx N` on the held-out split equals the training script's validation perplexity
     within 1 % (the script computes it with the exported F16 weights and the same chunking) and is far
     below the unigram baseline;
  3. greedy generation from the recorded prompt is reproducible (two runs, identical text) and equals the
     continuation PyTorch produced at export time.
Standard library only (CI has no torch).
"""
import json
import os
import re
import subprocess
import sys


def run(exe, *args):
    p = subprocess.run([exe, *args], capture_output=True, text=True, errors="replace")
    if p.returncode != 0:
        sys.exit(f"FAIL: basalt {' '.join(args)} exited {p.returncode}: {p.stderr.strip()}")
    return p.stdout


def piece_text(pieces):
    """What the engine streams for these SentencePiece pieces: '▁' is a space, <0xNN> is a byte."""
    out = bytearray()
    for p in pieces:
        m = re.fullmatch(r"<0x([0-9A-Fa-f]{2})>", p)
        out += bytes([int(m.group(1), 16)]) if m else p.replace("\u2581", " ").encode("utf-8")
    return out.decode("utf-8", errors="replace")


def main() -> int:
    exe, src = sys.argv[1], sys.argv[2]
    with open(os.path.join(src, "metrics.json")) as f:
        metrics = json.load(f)
    n_ctx = metrics["n_ctx"]
    valid = os.path.join(src, "fortunes-valid.txt")
    failures = []
    for kind, m in metrics["models"].items():
        info = json.loads(run(exe, "inspect", "-m", kind, "--json"))
        shape = m["shape"]
        hp = info.get("hparams", {})
        got = (hp.get("n_layer"), hp.get("n_embd"), hp.get("n_vocab"))
        want = (shape["n_layer"], shape["n_embd"], shape["n_vocab"])
        if got != want:
            failures.append(f"{kind}: inspect shape (layers, embd, vocab) {got} != {want}")
        ppl = json.loads(run(exe, "perplexity", "-m", kind, "-f", valid, "--ctx", str(n_ctx), "--json"))
        engine, trained = float(ppl["perplexity"]), m["valid_perplexity"]
        rel = abs(engine - trained) / trained
        print(f"{kind}: basalt perplexity {engine:.4f}, training script {trained:.4f} (rel. diff {rel:.2e}), "
              f"unigram baseline {metrics['unigram_valid_perplexity']:.2f}")
        if int(ppl["tokens_scored"]) != m["valid_tokens_scored"]:
            failures.append(f"{kind}: scored {ppl['tokens_scored']} tokens, training script {m['valid_tokens_scored']}")
        if rel > 0.01:
            failures.append(f"{kind}: perplexity {engine} differs from the training figure {trained} by {rel:.2%}")
        if engine * 4 > metrics["unigram_valid_perplexity"]:
            failures.append(f"{kind}: perplexity {engine} is not far below the unigram baseline")
    g = metrics["greedy"]
    args = ("run", "-m", "target", "-p", g["prompt"], "-n", str(len(g["tokens"])), "--samplers", "greedy")
    first, second = run(exe, *args), run(exe, *args)
    expected = piece_text(g["pieces"]) + "\n"  # `basalt run` ends its output with a newline
    print(f"greedy: {g['prompt']!r} -> {first!r}")
    if first != second:
        failures.append(f"greedy generation is not reproducible: {first!r} vs {second!r}")
    if first != expected:
        failures.append(f"greedy generation {first!r} differs from PyTorch's {expected!r}")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
