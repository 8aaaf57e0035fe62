#!/usr/bin/env python3
"""Prefix reuse on a hybrid model through recurrent-state checkpoints (docs/kv-cache.md "Prefix reuse on a hybrid
model"): a two-turn conversation, each round in an engine with the prefix cache and in one without (interleaved):

  turn 1: a prompt of PROMPT tokens, GEN generated (greedy, end of generation ignored);
  turn 2: turn 1's prompt, its reply and NEXT new tokens (a chat's next turn, as a client sends it);
  shared prefix: the first SHARED tokens of turn 1's prompt and NEXT others (another chat, the same system prompt).

One engine per configuration for all rounds (after a warm-up conversation each), every round's conversation new to
both; rounds alternate which configuration goes first. Prints per configuration the medians
over the rounds of turn 1's time to first token (with the cache it pays the
extra pass at the prompt's last block boundary and the checkpoint reads), its decode rate (with the cache a checkpoint is
read every block of generated tokens), and turn 2's and the shared-prefix request's time to first token with the
tokens they reused.

Usage: PYTHONPATH=build/lib/python3/dist-packages python3 bench/hybrid-prefix-reuse.py MODEL.gguf
           [--rounds 3] [--prompt 1000] [--gen 64] [--next 40] [--shared 900] [--threads 2]
"""
import argparse
import statistics

import basalt


def conversation(engine, args, prompt, nxt):
    first = engine.submit(tokens=prompt, max_tokens=args.gen, samplers="greedy", ignore_eog=True)
    reply = first.tokens()
    s1 = first.stats()
    second = engine.submit(tokens=prompt + reply + nxt, max_tokens=1, samplers="greedy", ignore_eog=True)
    second.tokens()
    s2 = second.stats()
    # Another conversation that shares only the first prompt's first SHARED tokens (a system prompt).
    third = engine.submit(tokens=prompt[:args.shared] + nxt, max_tokens=1, samplers="greedy", ignore_eog=True)
    third.tokens()
    s3 = third.stats()
    return (s1["ttft_ms"], s1["tokens_per_s"], s2["ttft_ms"], s2["cached_tokens"], s2["prompt_tokens"], s3["ttft_ms"],
            s3["cached_tokens"], s3["prompt_tokens"])


def tokens(n, seed, n_vocab):
    return [(7919 * i + 104729 * seed + 13) % (n_vocab - 1000) + 500 for i in range(n)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--prompt", type=int, default=1000)
    ap.add_argument("--gen", type=int, default=64)
    ap.add_argument("--next", type=int, default=40)
    ap.add_argument("--shared", type=int, default=900)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    with basalt.Runtime() as rt, basalt.Model(args.model, rt) as model:
        if model.n_layer_recurrent == 0:
            raise SystemExit("%s keeps no recurrent state" % args.model)
        ctx = args.prompt + args.gen + args.next + 64
        engines = {pc: basalt.Engine(rt, model, ctx=ctx, threads=args.threads, prefix_cache=pc) for pc in (True, False)}
        rows = {True: [], False: []}
        for pc, engine in engines.items():  # warm-up: the weights paged in and packed, the kernels' tables built
            conversation(engine, args, tokens(args.prompt, 1000 + pc, model.n_vocab),
                         tokens(args.next, 7, model.n_vocab))
        for r in range(args.rounds):
            # Each round's conversation is new to both engines (its own first token): no reuse across rounds.
            prompt, nxt = tokens(args.prompt, r, model.n_vocab), tokens(args.next, 500 + r, model.n_vocab)
            for pc in ((True, False) if r % 2 == 0 else (False, True)):
                rows[pc].append(conversation(engines[pc], args, prompt, nxt))
        for engine in engines.values():
            engine.close()
    print("%s: turn 1 %d prompt + %d generated tokens, turn 2 +%d tokens; medians of %d interleaved rounds" %
          (args.model.split("/")[-1], args.prompt, args.gen, args.next, args.rounds))
    for prefix_cache in (True, False):
        r = rows[prefix_cache]
        med = [statistics.median(x[k] for x in r) for k in range(8)]
        print("  prefix cache %-3s: turn 1 TTFT %8.1f ms, decode %6.2f t/s; turn 2 TTFT %8.1f ms (%d of %d tokens "
              "reused); shared-prefix request TTFT %8.1f ms (%d of %d reused)" %
              ("on" if prefix_cache else "off", med[0], med[1], med[2], med[3], med[4], med[5], med[6], med[7]))
    on, off = rows[True], rows[False]
    print("  on/off: turn 1 TTFT %.3f, decode rate %.3f, turn 2 TTFT %.3f, shared-prefix TTFT %.3f" %
          tuple(statistics.median(a[k] / b[k] for a, b in zip(on, off)) for k in (0, 1, 2, 5)))


if __name__ == "__main__":
    main()
