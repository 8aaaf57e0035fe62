#!/usr/bin/env python3
"""Embeddings/s of `basalt serve` against llama.cpp's `llama-server --embeddings` on the same GGUF (docs/embeddings.md,
"Benchmark"), and Basalt's ragged-vs-padded figure for the encoder.

    bench/embeddings-vs-llama-server.py --basalt build/bin/basalt \
        --llama-server ~/.cache/basalt-llama-cpp/build-v0.5.0/bin/llama-server MODEL.gguf [MODEL.gguf ...]

Per model: N inputs of mixed length (words drawn with a fixed seed; 2..MAX_WORDS words each) sent as one
POST /v1/embeddings to each server, `--rounds` interleaved rounds (the order alternates each round), both servers
with `--threads` threads, started once and warmed up with one request. The figure is N / wall seconds of the request,
the median over rounds. The two servers' vectors are compared (cosine of each input's pair: both must compute the
same thing). Ragged vs padded: Basalt's engine packs whole inputs without padding; the padded figure sends the same
inputs as token ids (llama-server's /tokenize), each padded with [PAD] to the longest input of its group of --pad-group (what a dense
[batch, max_len] encoder computes), through the same engine.
Only the standard library: http via urllib.
"""
import argparse
import json
import math
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

WORDS = ("the a of and to in is was for on with as by at from that this it be are were an or which one all "
         "time year people way day man thing woman life child world school state family student group country "
         "problem hand part place case week company system program question work government number night point "
         "home water room mother area money story fact month lot right study book eye job word business issue "
         "side kind head house service friend father power hour game line end member law car city community name "
         "president team minute idea kid body information back parent face others level office door health person "
         "art war history party result change morning reason research girl guy moment air teacher force education "
         "stranger opened wooden box once upon quick brown fox jumps over lazy dog").split()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


MODEL = "m"  # the id requests name: basalt serve answers only its model's (the file name without .gguf)


def post(port, body, timeout=3600):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/embeddings", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def wait_ready(port, proc, what, timeout=600):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if proc.poll() is not None:
            sys.exit(f"{what} exited with {proc.returncode} before it served")
        try:
            post(port, {"input": "ready", "model": MODEL}, timeout=60)
            return
        except Exception:
            time.sleep(0.5)
    sys.exit(f"{what} did not answer within {timeout} s")


def tokenize(port, texts):
    """llama-server's token ids of each text with the vocabulary's specials ([CLS] ... [SEP])."""
    out = []
    for t in texts:
        body = {"content": t, "add_special": True}
        req = urllib.request.Request(f"http://127.0.0.1:{port}/tokenize", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as r:
            out.append(json.loads(r.read())["tokens"])
    return out


def timed(port, inputs):
    t0 = time.perf_counter()
    r = post(port, {"input": inputs, "model": MODEL, "encoding_format": "float"})
    dt = time.perf_counter() - t0
    return dt, [d["embedding"] for d in sorted(r["data"], key=lambda d: d["index"])], r.get("usage", {})


def cosine(a, b):
    dot = sum(x * y for x, y in zip(a, b))
    na, nb = math.sqrt(sum(x * x for x in a)), math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na > 0 and nb > 0 else 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="+")
    ap.add_argument("--basalt", required=True)
    ap.add_argument("--llama-server", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--inputs", type=int, default=1000)
    ap.add_argument("--max-words", type=int, default=120)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--parallel", type=int, default=8, help="llama-server -np and basalt --parallel")
    ap.add_argument("--batch", type=int, default=2048, help="llama-server -b/-ub and basalt --max-batch-tokens")
    ap.add_argument("--pad-group", type=int, default=16)
    ap.add_argument("--pad-rounds", type=int, default=1, help="rounds of the ragged and the padded token-id runs")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(2, args.max_words))) for _ in range(args.inputs)]
    rows = []
    global MODEL
    for model in args.models:
        MODEL = os.path.splitext(os.path.basename(model))[0]
        procs = []
        try:
            lp, bp = free_port(), free_port()
            log = tempfile.TemporaryFile()
            procs.append(subprocess.Popen(
                [args.llama_server, "-m", model, "--embeddings", "-t", str(args.threads), "-tb", str(args.threads),
                 "--port", str(lp), "-c", str(512 * args.parallel), "-np", str(args.parallel), "-b", str(args.batch),
                 "-ub", str(args.batch), "--no-webui"], stdout=log, stderr=log))
            procs.append(subprocess.Popen(
                [args.basalt, "serve", "-m", model, "--threads", str(args.threads), "--port", str(bp),
                 "--parallel", str(args.parallel), "--max-batch-tokens", str(args.batch), "--max-queue", "65536"],
                stdout=log, stderr=log))
            wait_ready(lp, procs[0], "llama-server")
            wait_ready(bp, procs[1], "basalt serve")
            timed(lp, texts[:32])
            timed(bp, texts[:32])
            times = {"llama-server": [], "basalt": []}
            vecs = {}
            for r in range(args.rounds):
                order = [("llama-server", lp), ("basalt", bp)]
                if r % 2:
                    order.reverse()
                for name, port in order:
                    dt, v, usage = timed(port, texts)
                    times[name].append(dt)
                    vecs[name] = v
                    print(f"  {os.path.basename(model)} round {r + 1} {name:12s} {dt:7.2f} s "
                          f"{args.inputs / dt:8.1f} emb/s  ({usage.get('prompt_tokens', '?')} tokens)", flush=True)
            cos = min(cosine(a, b) for a, b in zip(vecs["llama-server"], vecs["basalt"]))
            # Ragged vs padded, both as token ids through basalt serve.
            toks = tokenize(lp, texts)
            padded = []
            for g in range(0, len(toks), args.pad_group):
                group = toks[g:g + args.pad_group]
                n = max(len(t) for t in group)
                padded += [t + [0] * (n - len(t)) for t in group]
            n_ragged, n_padded = sum(map(len, toks)), sum(map(len, padded))
            t_ragged = statistics.median(timed(bp, toks)[0] for _ in range(args.pad_rounds))
            t_padded = statistics.median(timed(bp, padded)[0] for _ in range(args.pad_rounds))
            print(f"  {os.path.basename(model)} basalt token ids: ragged {n_ragged} tokens {t_ragged:.2f} s, padded "
                  f"{n_padded} tokens {t_padded:.2f} s", flush=True)
            b, l_ = statistics.median(times["basalt"]), statistics.median(times["llama-server"])
            rows.append((os.path.basename(model), args.inputs / b, args.inputs / l_, l_ / b, cos,
                         n_ragged, n_padded, args.inputs / t_ragged, args.inputs / t_padded))
        finally:
            for p in procs:
                p.terminate()
                p.wait()
    print()
    print("| model | basalt emb/s | llama-server emb/s | ratio | min cosine | tokens ragged / padded "
          "| basalt ragged emb/s | basalt padded emb/s |")
    print("|---|---|---|---|---|---|---|---|")
    for m, b, l_, ratio, cos, nr, np_, tr, tp in rows:
        print(f"| {m} | {b:.1f} | {l_:.1f} | {ratio:.2f}x | {cos:.5f} | {nr} / {np_} | {tr:.1f} | {tp:.1f} |")


if __name__ == "__main__":
    main()
