"""Prefix caching from Python: a second request with the same prompt reuses the cached blocks (counted in its
stats and the engine's), gives the same output, cache_salt isolates, prefix_cache=False turns it off. On a hybrid
model (tiny-qwen35) reuse goes as far as a kept checkpoint of the recurrent state, within prefix_state_bytes."""
import os
import unittest

import basalt

MODELS = os.environ.get("BASALT_TEST_MODELS", "")
LLAMA = os.path.join(MODELS, "tiny-llama-f32.gguf")
LLAMA256 = os.path.join(MODELS, "tiny-llama256-q6_k.gguf")  # head dim 64: quantized K/V
QWEN35 = os.path.join(MODELS, "tiny-qwen35-f32.gguf")  # hybrid: Gated DeltaNet layers beside attention
PROMPT = list(range(1, 101))  # 100 tokens: 6 full blocks of 16 and 4 more


class PrefixCacheTest(unittest.TestCase):
    def run_twice(self, **engine_args):
        with basalt.Runtime() as rt, basalt.Model(LLAMA, rt) as model:
            with basalt.Engine(rt, model, ctx=256, **engine_args) as engine:
                first = engine.submit(tokens=PROMPT, max_tokens=8)
                first_tokens = first.tokens()
                second = engine.submit(tokens=PROMPT, max_tokens=8)
                other = engine.submit(tokens=PROMPT, max_tokens=8, cache_salt="tenant-x")
                out = (first_tokens, second.tokens(), second.stats()["cached_tokens"], other.tokens(),
                       other.stats()["cached_tokens"], engine.stats()["cached_tokens"])
                return out

    def test_hit_equals_miss_and_salts_isolate(self):
        first, second, cached, other, other_cached, engine_cached = self.run_twice()
        self.assertEqual(second, first)
        self.assertEqual(cached, 96)
        self.assertEqual(other, first)
        self.assertEqual(other_cached, 0)
        self.assertEqual(engine_cached, 96)

    def test_quantized_kv_hit_equals_miss(self):
        # K per channel at 2 bits, V per token at 2 bits, a residual window of 32 (kv-paged's block size then)
        with basalt.Runtime() as rt, basalt.Model(LLAMA256, rt) as model:
            with basalt.Engine(rt, model, ctx=256, k_type="kivi_c2", v_type="kivi_t2", kv_residual=32) as engine:
                first = engine.submit(tokens=PROMPT, max_tokens=8).tokens()
                again = engine.submit(tokens=PROMPT, max_tokens=8)
                self.assertEqual(again.tokens(), first)
                self.assertEqual(again.stats()["cached_tokens"], 96)
            with self.assertRaises(basalt.BasaltError) as e:
                basalt.Engine(rt, model, ctx=256, k_type="kivi_c2")
            self.assertIn("kivi_c2", str(e.exception))

    def test_off(self):
        first, second, cached, _, _, engine_cached = self.run_twice(prefix_cache=False)
        self.assertEqual(second, first)
        self.assertEqual(cached, 0)
        self.assertEqual(engine_cached, 0)

    def test_hybrid_model_reuses_a_state_checkpoint(self):
        shared = [(37 * i + 11) % 500 for i in range(40)]
        longer = shared + [(13 * i + 5) % 500 for i in range(30)]
        with basalt.Runtime() as rt, basalt.Model(QWEN35, rt) as model:
            with basalt.Engine(rt, model, ctx=256, prefix_cache=False) as engine:
                alone = engine.submit(tokens=longer, max_tokens=6).tokens()
            with basalt.Engine(rt, model, ctx=256) as engine:
                engine.submit(tokens=shared, max_tokens=2).tokens()
                hit = engine.submit(tokens=longer, max_tokens=6)
                self.assertEqual(hit.tokens(), alone)
                # the shared prompt's checkpoint at its last block boundary (32 of 40 tokens)
                self.assertEqual(hit.stats()["cached_tokens"], 32)
                # 2 states of tiny-qwen35 (31,488 bytes each): the shared prompt's at 32, the longer one's at 64
                stats = engine.stats()
                self.assertEqual(stats["state_checkpoints"], 2)
                self.assertEqual(stats["state_checkpoint_bytes"], 2 * 31488)
            # A budget below one state keeps none: no reuse.
            with basalt.Engine(rt, model, ctx=256, prefix_state_bytes=1) as engine:
                engine.submit(tokens=shared, max_tokens=2).tokens()
                miss = engine.submit(tokens=longer, max_tokens=6)
                self.assertEqual(miss.tokens(), alone)
                self.assertEqual(miss.stats()["cached_tokens"], 0)
                self.assertEqual(engine.stats()["state_checkpoints"], 0)
            with self.assertRaisesRegex(ValueError, "prefix_state_bytes"):
                basalt.Engine(rt, model, prefix_state_bytes=-1)

    def test_hybrid_session_attaches_as_far_as_a_checkpoint(self):
        shared = [(37 * i + 11) % 500 for i in range(40)]
        longer = shared + [(13 * i + 5) % 500 for i in range(30)]
        with basalt.Runtime() as rt, basalt.Model(QWEN35, rt) as model:
            with basalt.Session(rt, model, n_ctx=256, n_seq_max=2, n_threads=2) as plain:
                plain.decode(shared, seq_id=0)
                self.assertEqual(plain.prefix_attach(longer, seq_id=1), 0)  # no budget: no checkpoint, no reuse
                # the passes the cached run below makes: [0, 32) (the shared prompt's), [32, 64), [64, 70)
                for a, b in ((0, 32), (32, 64), (64, 70)):
                    plain.decode(longer[a:b], seq_id=1)
                want = plain.logits(0)
            with basalt.Session(rt, model, n_ctx=256, n_seq_max=3, n_threads=2,
                                state_checkpoint_bytes=64 << 20) as s:
                s.decode(shared, seq_id=0)
                self.assertEqual(s.prefix_attach(longer, seq_id=1), 32)
                self.assertEqual(s.seq_length(1), 32)
                s.decode(longer[32:], seq_id=1)
                self.assertEqual(s.logits(0), want)
                s.seq_set_salt(2, 99)  # another tenant sees nothing
                self.assertEqual(s.prefix_attach(longer, seq_id=2), 0)
                with self.assertRaisesRegex(ValueError, "salt"):
                    s.seq_set_salt(2, -1)

    def test_bad_salt(self):
        with basalt.Runtime() as rt, basalt.Model(LLAMA, rt) as model, basalt.Engine(rt, model) as engine:
            with self.assertRaisesRegex(TypeError, "cache_salt must be str or bytes"):
                engine.submit(tokens=PROMPT, max_tokens=1, cache_salt=5)


if __name__ == "__main__":
    unittest.main()
