"""The streaming KV cache with attention sinks (kv_cache 'sink') against an independent float64 forward.

StreamingLLM's definition, written out here without Basalt's shortcut: query t sees the first n_sink positions and
its last `window` ones; they get *cache positions* (sinks 0..n_sink-1, then the window in order), the query the
last cache position, and keys and queries are rotated (RoPE) at those positions. Basalt keeps keys rotated at their
own positions and rotates the query back for the sinks only; the logits must match within the golden README's F32
tolerance, past the context several times over, on every backend listed in BASALT_TEST_BACKENDS. Before the window
fills the sink cache must equal the plain cache (bit for bit on the CPU). Run by CTest with Debian's python3 + numpy
and the bindings from the build tree."""
import math
import os
import sys
import unittest
import warnings

import numpy as np

import basalt

warnings.simplefilter("ignore", ResourceWarning)
MODELS = os.environ["BASALT_TEST_MODELS"]
TESTDATA = os.path.dirname(os.path.dirname(os.path.abspath(MODELS)))
sys.path.insert(0, TESTDATA)
import reference_forward as ref  # noqa: E402

BACKENDS = os.environ.get("BASALT_TEST_BACKENDS", "cpu").split(",")
F32_KV = {"k_type": "f32", "v_type": "f32"}


def stream_forward(kv, W, toks, n_sink, window):
    """float64 logits [T, n_vocab] of a llama-like model whose every query t attends over exactly the sinks
    (positions < n_sink) and positions t-window+1..t, at cache positions."""
    A = kv["general.architecture"]
    E, L = kv[f"{A}.embedding_length"], kv[f"{A}.block_count"]
    H, Hkv = kv[f"{A}.attention.head_count"], kv[f"{A}.attention.head_count_kv"]
    eps = kv[f"{A}.attention.layer_norm_rms_epsilon"]
    hd = kv.get(f"{A}.attention.key_length", E // H)
    base = kv.get(f"{A}.rope.freq_base", 10000.0)
    neox = A in ("qwen2",)
    T = len(toks)
    x = W["token_embd.weight"][toks]
    for il in range(L):
        p = f"blk.{il}."
        h = ref.rms_norm(x, W[p + "attn_norm.weight"], eps)
        q, k, v = (h @ W[p + f"attn_{n}.weight"].T for n in "qkv")
        if p + "attn_q.bias" in W:
            q, k, v = (t + W[p + f"attn_{n}.bias"] for t, n in zip((q, k, v), "qkv"))
        q, k, v = q.reshape(T, H, hd), k.reshape(T, Hkv, hd), v.reshape(T, Hkv, hd)
        att = np.zeros((T, H * hd))
        for t in range(T):
            keep = [j for j in range(t + 1) if j < n_sink or j > t - window]
            cache_pos = np.arange(len(keep))  # the kept tokens, in order, at positions 0..
            qt = ref.rope(q[t:t + 1], cache_pos[-1:], base, neox)
            kt = ref.rope(k[keep], cache_pos, base, neox)
            att[t] = ref.attention(qt, kt, v[keep], 1.0 / math.sqrt(hd), np.ones((1, len(keep)), bool))[0]
        x = x + att @ W[p + "attn_output.weight"].T
        h = ref.rms_norm(x, W[p + "ffn_norm.weight"], eps)
        f = (ref.silu(h @ W[p + "ffn_gate.weight"].T) * (h @ W[p + "ffn_up.weight"].T)) @ W[p + "ffn_down.weight"].T
        x = x + f
    x = ref.rms_norm(x, W["output_norm.weight"], eps)
    return x @ W.get("output.weight", W["token_embd.weight"]).T


def logits_of(session, toks, chunk):
    rows = []
    for b in range(0, len(toks), chunk):
        piece = toks[b:b + chunk]
        session.decode(piece, positions=list(range(b, b + len(piece))), seq_ids=[0] * len(piece), logits="all")
        rows += [session.logits(r) for r in range(len(piece))]
    return np.array(rows, dtype=np.float64)


class SinkReferenceTest(unittest.TestCase):
    MODEL = os.path.join(MODELS, "tiny-llama-f32.gguf")

    def check(self, name, n_ctx, n_sink, window, n_tokens, chunk):
        kv, W = ref.load(os.path.join(MODELS, name + ".gguf"))
        rng = np.random.default_rng(5)
        toks = [1] + rng.integers(2, W["token_embd.weight"].shape[0], n_tokens - 1).tolist()
        want = stream_forward(kv, W, toks, n_sink, window)
        full = stream_forward(kv, W, toks, n_tokens, n_tokens)  # nothing evicted: the plain forward
        with basalt.Runtime() as rt, basalt.Model(os.path.join(MODELS, name + ".gguf"), rt) as model:
            for backend in BACKENDS:
                spec = f"sink:n_sink={n_sink},window={window}"
                with basalt.Session(rt, model, n_ctx=n_ctx, kv_cache=spec, kv_params=F32_KV, backend=backend) as s:
                    got = logits_of(s, toks, chunk)
                    self.assertEqual(s.seq_length(0), n_tokens)
                scale = max(1.0, float(np.sqrt(np.mean(want ** 2))))
                err = float(np.abs(got - want).max())
                effect = float(np.abs(want - full)[n_sink + window:].max())
                print(f"{name} ({backend}) n_ctx {n_ctx}, {spec}, {n_tokens} tokens in chunks of {chunk}: "
                      f"max |basalt - float64| {err:.3g}; eviction changes the logits by {effect:.3g}")
                self.assertLess(err, 1e-4 * scale, f"{name} on {backend}")
                self.assertGreater(effect, 1000 * err, "eviction must change the logits")

    def test_llama_three_contexts(self):
        # 32 rows: 3 sinks + a window of 13; the ring of 29 takes batches of up to 17 tokens (given 20: split).
        self.check("tiny-llama-f32", 32, 3, 13, 96, 20)

    def test_qwen2_window_only(self):
        # n_sink 0: a plain sliding window over the cache (neox rotation, biases), token by token.
        self.check("tiny-qwen2-f32", 24, 0, 16, 60, 1)

    def test_qwen2_sinks_token_by_token(self):
        self.check("tiny-qwen2-f32", 20, 4, 16, 50, 1)

    def test_equal_to_plain_cache_before_the_window_fills(self):
        toks = [1, 17, 42, 99, 7, 300, 12, 5, 250, 3, 64, 8, 31, 77, 2, 9]
        with basalt.Runtime() as rt, basalt.Model(self.MODEL, rt) as model:
            for backend in BACKENDS:
                with basalt.Session(rt, model, n_ctx=64, backend=backend) as s:
                    plain = logits_of(s, toks, 64)
                with basalt.Session(rt, model, n_ctx=64, kv_cache="sink:n_sink=4,window=28", backend=backend) as s:
                    sink = logits_of(s, toks, 64)
                if backend == "cpu":
                    self.assertEqual(sink.tobytes(), plain.tobytes())
                else:
                    self.assertLess(float(np.abs(sink - plain).max()), 1e-4)


if __name__ == "__main__":
    unittest.main()
