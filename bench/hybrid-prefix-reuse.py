#!/usr/bin/env python3
"""Prefix reuse on a hybrid model through recurrent-state checkpoints (docs/kv-cache.md "Prefix reuse on a hybrid
model"): a two-turn conversation, each round in an engine with the prefix cache and in one without (interleaved):

  turn 1: a prompt of PROMPT tokens, GEN generated (greedy, end of generation ignored);
  turn 2: turn 1's prompt, its reply and NEXT new tokens (a chat's next turn, as a client sends it).

After a warm-up conversation, rounds alternate which configuration goes first. Prints per configuration the medians
over the rounds of turn 1's time to first token (with the cache it pays the
extra pass at the prompt's last block boundary and the checkpoint reads), its decode rate (with the cache a checkpoint is
read every block of generated tokens), and turn 2's time to first token with the tokens it reused.

Usage: PYTHONPATH=build/lib/python3/dist-packages python3 bench/hybrid-prefix-reuse.py MODEL.gguf
           [--rounds 3] [--prompt 1000] [--gen 64] [--next 40] [--threads 2]
"""
import argparse
import statistics

import basalt


def conversation(rt, model, prefix_cache, args, prompt, nxt):
    with basalt.Engine(rt, model, ctx=args.prompt + args.gen + args.next + 64, threads=args.threads,
                       prefix_cache=prefix_cache) as engine:
        first = engine.submit(tokens=prompt, max_tokens=args.gen, samplers="greedy", ignore_eog=True)
        reply = first.tokens()
        s1 = first.stats()
        second = engine.submit(tokens=prompt + reply + nxt, max_tokens=1, samplers="greedy", ignore_eog=True)
        second.tokens()
        s2 = second.stats()
    return s1["ttft_ms"], s1["tokens_per_s"], s2["ttft_ms"], s2["cached_tokens"], s2["prompt_tokens"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--prompt", type=int, default=1000)
    ap.add_argument("--gen", type=int, default=64)
    ap.add_argument("--next", type=int, default=40)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    with basalt.Runtime() as rt, basalt.Model(args.model, rt) as model:
        if model.n_layer_recurrent == 0:
            raise SystemExit("%s keeps no recurrent state" % args.model)
        n_vocab = model.n_vocab
        prompt = [(7919 * i + 13) % (n_vocab - 1000) + 500 for i in range(args.prompt)]
        nxt = [(104729 * i + 7) % (n_vocab - 1000) + 500 for i in range(args.next)]
        rows = {True: [], False: []}
        conversation(rt, model, False, args, prompt, nxt)  # warm-up: the weights paged in, the kernels' tables built
        for r in range(args.rounds):
            for prefix_cache in ((True, False) if r % 2 == 0 else (False, True)):
                rows[prefix_cache].append(conversation(rt, model, prefix_cache, args, prompt, nxt))
    print("%s: turn 1 %d prompt + %d generated tokens, turn 2 +%d tokens; medians of %d interleaved rounds" %
          (args.model.split("/")[-1], args.prompt, args.gen, args.next, args.rounds))
    for prefix_cache in (True, False):
        r = rows[prefix_cache]
        med = [statistics.median(x[k] for x in r) for k in range(5)]
        print("  prefix cache %-3s: turn 1 TTFT %8.1f ms, decode %6.2f t/s; turn 2 TTFT %8.1f ms (%d of %d tokens "
              "reused)" % ("on" if prefix_cache else "off", med[0], med[1], med[2], med[3], med[4]))
    on, off = rows[True], rows[False]
    print("  on/off: turn 1 TTFT %.3f, decode rate %.3f, turn 2 TTFT %.3f" %
          (statistics.median(a[0] / b[0] for a, b in zip(on, off)),
           statistics.median(a[1] / b[1] for a, b in zip(on, off)),
           statistics.median(a[2] / b[2] for a, b in zip(on, off))))


if __name__ == "__main__":
    main()
