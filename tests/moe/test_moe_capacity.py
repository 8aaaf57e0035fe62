"""MoE routing under expert capacity (docs/moe.md) against an independent float64 forward.

The forward is ../shared/testdata/reference_forward.py's llama-MoE math over a ragged batch of sequences (attention
per sequence, routing over every row of the batch together) with the capacity rule written out plainly: each
expert takes at most ceil(C * T * k / n_expert) assignments of the pass, claimed rank by rank (every row's first
choice, then every row's second ...), rows in batch order within a rank; an overflowing assignment is dropped
(weight 0: the row keeps only its residual for that share, the other weights are not renormalised) or rerouted to
the row's best-ranked expert outside its top k that it does not use yet and that has room, after every original
assignment has claimed. Basalt's logits and its per-layer statistics (assignments per expert, dropped, rerouted)
must match; dropless rows do not depend on the rest of the batch (bit for bit) and capacity rows do.
Run by CTest with Debian's python3 + numpy and the bindings from the build tree."""
import json
import math
import os
import subprocess
import sys
import unittest
import warnings

import numpy as np

import basalt

warnings.simplefilter("ignore", ResourceWarning)  # make_models.read_gguf leaves its files to the GC
MODELS = os.environ["BASALT_TEST_MODELS"]
TESTDATA = os.path.dirname(os.path.dirname(os.path.abspath(MODELS)))
sys.path.insert(0, TESTDATA)
import reference_forward as ref  # noqa: E402

MODEL = os.path.join(MODELS, "tiny-llama-moe-f32.gguf")
F32_KV = {"k_type": "f32", "v_type": "f32"}
BACKENDS = os.environ.get("BASALT_TEST_BACKENDS", "cpu").split(",")
PROMPT_A = [1, 17, 42, 99, 7, 300, 12, 5, 250, 3, 64, 8]
PROMPT_B = [1, 400, 401, 402, 403, 404, 405, 406]


def route(probs, k, router):
    """Routing of one layer's batch. probs [T, E] float64; router None (dropless) or (factor, reroute).
    Returns experts [T][k], weights [T, k], status [T][k] (0 kept, 1 dropped, 2 + e rerouted from e)."""
    T, E = probs.shape
    rank = [sorted(range(E), key=lambda e: (-probs[t, e], e)) for t in range(T)]
    experts = [rank[t][:k] for t in range(T)]
    status = [[0] * k for _ in range(T)]
    if router is not None:
        factor, reroute = router
        cap = max(1, math.ceil(factor * T * k / E))
        load = [0] * E
        for j in range(k):
            for t in range(T):
                e = experts[t][j]
                if load[e] < cap:
                    load[e] += 1
                else:
                    status[t][j] = 1
        if reroute:
            for j in range(k):
                for t in range(T):
                    if status[t][j] != 1:
                        continue
                    free = [e for e in rank[t][k:] if e not in experts[t] and load[e] < cap]
                    if free:
                        status[t][j] = 2 + experts[t][j]
                        experts[t][j] = free[0]
                        load[free[0]] += 1
    weights = np.zeros((T, k))
    for t in range(T):
        norm = sum(probs[t, e] for e in rank[t][:k])
        for j in range(k):
            weights[t, j] = 0.0 if status[t][j] == 1 else probs[t, experts[t][j]] / norm
    return experts, weights, status


def forward(kv, W, seqs, router):
    """float64 logits [T, n_vocab] of a batch holding the sequences one after another (each from position 0), and
    per layer the routing statistics as Basalt reports them."""
    A = "llama"
    E, L = kv[f"{A}.embedding_length"], kv[f"{A}.block_count"]
    H, Hkv = kv[f"{A}.attention.head_count"], kv[f"{A}.attention.head_count_kv"]
    eps = kv[f"{A}.attention.layer_norm_rms_epsilon"]
    hd = E // H
    n_exp, k = kv[f"{A}.expert_count"], kv[f"{A}.expert_used_count"]
    toks = [t for s in seqs for t in s]
    bounds = np.cumsum([0] + [len(s) for s in seqs])
    x = W["token_embd.weight"][toks]
    stats = []
    for il in range(L):
        p = f"blk.{il}."
        h = ref.rms_norm(x, W[p + "attn_norm.weight"], eps)
        att = []
        for a, b in zip(bounds[:-1], bounds[1:]):
            T = b - a
            q, kk, v = (h[a:b] @ W[p + f"attn_{n}.weight"].T for n in "qkv")
            q, kk, v = q.reshape(T, H, hd), kk.reshape(T, Hkv, hd), v.reshape(T, Hkv, hd)
            pos = np.arange(T)
            q, kk = ref.rope(q, pos, 10000.0, False), ref.rope(kk, pos, 10000.0, False)
            att.append(ref.attention(q, kk, v, 1.0 / math.sqrt(hd), ref.causal(T)))
        x = x + np.concatenate(att) @ W[p + "attn_output.weight"].T
        h = ref.rms_norm(x, W[p + "ffn_norm.weight"], eps)
        probs = ref.softmax(h @ W[p + "ffn_gate_inp.weight"].T)
        experts, weights, status = route(probs, k, router)
        f = np.zeros_like(h)
        per_expert = [0] * n_exp
        for t in range(len(toks)):
            for j in range(k):
                if status[t][j] == 1:
                    continue
                e = experts[t][j]
                per_expert[e] += 1
                g = ref.silu(h[t] @ W[p + "ffn_gate_exps.weight"][e].T) * (h[t] @ W[p + "ffn_up_exps.weight"][e].T)
                f[t] += weights[t, j] * (g @ W[p + "ffn_down_exps.weight"][e].T)
        x = x + f
        flat = [s for row in status for s in row]
        stats.append({"per_expert": per_expert, "dropped": flat.count(1), "rerouted": sum(s >= 2 for s in flat)})
    x = ref.rms_norm(x, W["output_norm.weight"], eps)
    return x @ W["token_embd.weight"].T if "output.weight" not in W else x @ W["output.weight"].T, stats


def spec(router):
    return "dropless" if router is None else f"capacity:factor={router[0]},overflow={'reroute' if router[1] else 'drop'}"


def run_batch(rt, model, backend, router, seqs, stats=False):
    """Basalt's logits of every row of one batch holding the sequences one after another; with stats, the
    session's per-layer routing statistics too."""
    with basalt.Session(rt, model, n_ctx=64, n_seq_max=len(seqs), kv_params=F32_KV, backend=backend,
                        moe_router=spec(router)) as s:
        if stats:
            s.set_moe_stats(True)
        toks = [t for q in seqs for t in q]
        pos = [i for q in seqs for i in range(len(q))]
        ids = [n for n, q in enumerate(seqs) for _ in q]
        s.decode(toks, positions=pos, seq_ids=ids, logits="all")
        logits = np.array([s.logits(r) for r in range(len(toks))], dtype=np.float64)
        return logits, (s.moe_stats() if stats else None)


class CapacityTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.kv, cls.W = ref.load(MODEL)
        cls.rt = basalt.Runtime()
        cls.model = basalt.Model(MODEL, cls.rt)

    @classmethod
    def tearDownClass(cls):
        cls.model.close()
        cls.rt.close()

    def check(self, router, seqs, expect_overflow):
        want, want_stats = forward(self.kv, self.W, seqs, router)
        dropped = sum(s["dropped"] for s in want_stats)
        rerouted = sum(s["rerouted"] for s in want_stats)
        if expect_overflow:  # the case must exercise what it tests
            self.assertGreater(dropped + rerouted, 0, spec(router))
            if router[1]:
                self.assertGreater(rerouted, 0, spec(router))
        scale = max(1.0, float(np.sqrt(np.mean(want ** 2))))
        for backend in BACKENDS:
            got, stats = run_batch(self.rt, self.model, backend, router, seqs, stats=True)
            err = float(np.abs(got - want).max())
            print(f"{spec(router)} ({backend}), rows {[len(s) for s in seqs]}: max |basalt - float64| {err:.3g}; "
                  f"dropped {dropped}, rerouted {rerouted}")
            self.assertLess(err, 1e-4 * scale, f"{spec(router)} on {backend}")
            for il, (g, w) in enumerate(zip(stats, want_stats)):
                self.assertEqual(g["per_expert"], w["per_expert"], f"layer {il} {spec(router)} on {backend}")
                self.assertEqual(g["dropped"], w["dropped"], f"layer {il} {spec(router)} on {backend}")
                self.assertEqual(g["rerouted"], w["rerouted"], f"layer {il} {spec(router)} on {backend}")
                self.assertEqual(g["tokens"], sum(len(s) for s in seqs))
                self.assertEqual(g["assignments"], sum(w["per_expert"]))
                mean = sum(w["per_expert"]) / len(w["per_expert"])
                self.assertAlmostEqual(g["imbalance"], max(w["per_expert"]) / mean, places=12)
        return want

    def test_capacity_against_hand_computation(self):
        for router in [(0.5, False), (0.5, True), (1.0, False), (1.0, True), (0.75, True)]:
            with self.subTest(router=spec(router)):
                self.check(router, [PROMPT_A], expect_overflow=True)

    def test_dropless_and_ample_capacity(self):
        # Dropless against the reference; a capacity nothing reaches gives the dropless logits bit for bit.
        self.check(None, [PROMPT_A], expect_overflow=False)
        for backend in BACKENDS:
            plain, _ = run_batch(self.rt, self.model, backend, None, [PROMPT_A])
            ample, stats = run_batch(self.rt, self.model, backend, (100.0, False), [PROMPT_A], stats=True)
            self.assertEqual(sum(s["dropped"] for s in stats), 0)
            self.assertTrue(np.array_equal(plain, ample), f"ample capacity differs from dropless on {backend}")

    def test_dropless_rows_do_not_depend_on_the_batch(self):
        for backend in BACKENDS:
            solo, _ = run_batch(self.rt, self.model, backend, None, [PROMPT_A])
            batched, _ = run_batch(self.rt, self.model, backend, None, [PROMPT_A, PROMPT_B])
            self.assertTrue(np.array_equal(solo, batched[:len(PROMPT_A)]), f"dropless on {backend}")

    def test_capacity_rows_depend_on_the_batch(self):
        # The article's trade-off: the same prompt under the same router gives other logits when other rows share
        # the pass (they compete for the experts' capacity), and the reference predicts exactly that.
        router = (1.0, False)
        solo = self.check(router, [PROMPT_A], expect_overflow=True)
        batched = self.check(router, [PROMPT_A, PROMPT_B], expect_overflow=True)
        change = float(np.abs(solo - batched[:len(PROMPT_A)]).max())
        print(f"{spec(router)}: prompt A's logits move by {change:.3g} when prompt B shares the pass")
        self.assertGreater(change, 1e-3)
        for backend in BACKENDS:
            got_solo, _ = run_batch(self.rt, self.model, backend, router, [PROMPT_A])
            got_batched, _ = run_batch(self.rt, self.model, backend, router, [PROMPT_A, PROMPT_B])
            self.assertGreater(float(np.abs(got_solo - got_batched[:len(PROMPT_A)]).max()), 1e-3, backend)

    def test_engine_stats(self):
        with basalt.Engine(self.rt, self.model, ctx=64, parallel=2, moe_router="capacity:factor=0.5,overflow=drop",
                           moe_stats=True, kv_params=F32_KV) as engine:
            a = engine.submit(tokens=PROMPT_A, max_tokens=4)
            b = engine.submit(tokens=PROMPT_B, max_tokens=4)
            engine.run()
            self.assertEqual(len(a.tokens()), 4)
            self.assertEqual(len(b.tokens()), 4)
            stats = engine.moe_stats()
        self.assertEqual(len(stats), self.model.n_layer)
        k = self.model.n_expert_used
        for layer in stats:
            # Every prompt and generated token is routed (the last generated token is never fed back).
            self.assertEqual(layer["tokens"], len(PROMPT_A) + len(PROMPT_B) + 2 * 3)
            self.assertEqual(layer["assignments"] + layer["dropped"], k * layer["tokens"])
            self.assertEqual(layer["rerouted"], 0)
        self.assertGreater(sum(layer["dropped"] for layer in stats), 0)
        with basalt.Engine(self.rt, self.model, ctx=64) as engine:
            with self.assertRaises(basalt.BasaltError):
                engine.moe_stats()

    def test_refusals(self):
        for bad, words in [("capacity:factor=0", "factor '0'"), ("capacity:overflow=spill", "overflow 'spill'"),
                           ("capacity:size=3", "unknown key 'size'"), ("topk", "is not 'dropless'")]:
            with self.assertRaises(basalt.BasaltError) as cm:
                basalt.Session(self.rt, self.model, n_ctx=64, moe_router=bad)
            self.assertIn(words, str(cm.exception))
        with basalt.Model(os.path.join(MODELS, "tiny-llama-f32.gguf"), self.rt) as dense:
            with self.assertRaises(basalt.BasaltError) as cm:
                basalt.Session(self.rt, dense, n_ctx=64, moe_router="capacity:factor=1")
            self.assertIn("no experts", str(cm.exception))
            with basalt.Session(self.rt, dense, n_ctx=64) as s:
                with self.assertRaises(basalt.BasaltError):
                    s.set_moe_stats(True)

    def test_cli_eval_and_batch_moe_stats(self):
        router = (0.5, True)
        _, want_stats = forward(self.kv, self.W, [PROMPT_A], router)
        out = subprocess.run([os.environ["BASALT_CLI"], "eval", "-m", MODEL, "--tokens", ",".join(map(str, PROMPT_A)),
                              "--kv-type", "f32", "--moe-router", spec(router), "--moe-stats", "--json"],
                             capture_output=True, text=True, check=True)
        j = json.loads(out.stdout)["moe_stats"]
        self.assertEqual(j["router"], spec(router))
        self.assertEqual([layer["per_expert"] for layer in j["layers"]], [s["per_expert"] for s in want_stats])
        self.assertEqual(j["dropped"], sum(s["dropped"] for s in want_stats))
        self.assertEqual(j["rerouted"], sum(s["rerouted"] for s in want_stats))
        k = self.model.n_expert_used
        self.assertAlmostEqual(j["rerouted_fraction"], j["rerouted"] / (k * len(PROMPT_A) * self.model.n_layer))
        # basalt batch: the engine's statistics in the summary, every routed row counted.
        lines = "".join(json.dumps({"id": i, "tokens": p, "max_tokens": 3}) + "\n"
                        for i, p in enumerate([PROMPT_A, PROMPT_B]))
        out = subprocess.run([os.environ["BASALT_CLI"], "batch", "-m", MODEL, "--requests", "-", "--moe-router",
                              "capacity:factor=0.5,overflow=drop", "--moe-stats"], input=lines, capture_output=True,
                             text=True, check=True)
        self.assertIn("moe router capacity:factor=0.5,overflow=drop: dropped", out.stderr)
        self.assertEqual(out.stderr.count("  layer "), self.model.n_layer)
        bad = subprocess.run([os.environ["BASALT_CLI"], "eval", "-m", MODEL, "--tokens", "1,2", "--moe-router",
                              "capacity:factor=-1"], capture_output=True, text=True)
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn("factor '-1' is not a number above 0", bad.stderr)


if __name__ == "__main__":
    unittest.main()
