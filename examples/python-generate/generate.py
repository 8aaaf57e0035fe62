#!/usr/bin/python3
"""Generates text with Basalt from Python, streaming it, with a sampler written in Python inside the engine's loop.

    PYTHONPATH=build/lib/python3/dist-packages examples/python-generate/generate.py [-m MODEL] [-p PROMPT] [-n N]

`no_digits` (below) is an ordinary Python class: it bans every token whose text contains a digit. It is
registered on the runtime and then used in a chain like any plugin sampler ("no_digits;top_k:40;temp:0.8;dist").
The request goes to a basalt.Engine (the generation loop `basalt run` uses too); iterating the request steps
the engine and yields the text as it is generated. The model defaults to Basalt's shipped `target`.
"""
import argparse
import sys

import basalt


class NoDigits(basalt.Sampler):
    """Removes the candidates whose piece contains a digit (the model is set by the example before use)."""

    model = None

    def apply(self, candidates):
        keep = [e for e in candidates.entries() if not any(ch.isdigit() for ch in self.model.token_to_piece(e[0]))]
        candidates.assign(keep)
        candidates.sorted = False
        candidates.probs_valid = False


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-m", "--model", default="target")
    ap.add_argument("-p", "--prompt", default="The best way to")
    ap.add_argument("-n", "--n-predict", type=int, default=48)
    ap.add_argument("--samplers", default="no_digits;top_k:40;temp:0.8;dist:seed=7")
    args = ap.parse_args()
    with basalt.Runtime() as rt:
        rt.register_sampler("no_digits", NoDigits)
        model = basalt.Model(args.model, rt)
        NoDigits.model = model
        engine = basalt.Engine(rt, model)
        request = engine.submit(args.prompt, samplers=args.samplers, max_tokens=args.n_predict)
        print(args.prompt, end="", flush=True)
        for piece in request:
            print(piece, end="", flush=True)
        print()
        stats = request.stats()
        print(f"{stats['generated_tokens']} tokens, {stats['tokens_per_s']:.0f} t/s, stop: {request.finish_reason}",
              file=sys.stderr)
    return 0  # closing the runtime closed the engine and the model first


if __name__ == "__main__":
    sys.exit(main())
