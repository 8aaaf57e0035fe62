#!/usr/bin/env python3
"""What a snapshot of a hybrid model's sequence costs against a decode step: the speculative decoder takes one before
each verify with drafts on a model with a recurrent state (docs/kv-cache.md "Speculative decoding on a hybrid
model"). A snapshot is a fork into a spare sequence (K/V blocks shared, the recurrent state rows copied) and, after an
accepted round, its drop; both through the Python binding's Session.seq_fork / seq_drop.

Usage: PYTHONPATH=build/lib/python3/dist-packages python3 bench/recurrent-snapshot-cost.py MODEL.gguf [N]
"""
import sys
import time

import basalt


def main():
    path = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    with basalt.Runtime() as rt, basalt.Model(path, rt) as model:
        if model.n_layer_recurrent == 0:
            sys.exit("%s keeps no recurrent state: its sequences are cut back, never snapshotted" % path)
        with basalt.Session(rt, model, n_ctx=512, n_seq_max=2) as s:
            tokens = model.tokenize("The wooden box and the wooden box and the")
            s.decode(tokens, seq_id=0)
            t0 = time.perf_counter()
            for _ in range(n):
                s.seq_fork(0, 1)
                s.seq_drop(1)
            snapshot = (time.perf_counter() - t0) / n * 1e3
            t0 = time.perf_counter()
            for _ in range(n):
                s.decode([tokens[-1]], seq_id=0)
            step = (time.perf_counter() - t0) / n * 1e3
    print("%s (%d recurrent layers): snapshot (fork + drop) %.2f ms, one decode step %.2f ms (%.0f %%)" %
          (path.split("/")[-1], model.n_layer_recurrent, snapshot, step, 100 * snapshot / step))


if __name__ == "__main__":
    main()
