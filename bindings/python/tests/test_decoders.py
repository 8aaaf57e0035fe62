"""Decoding strategies from Python: decoder specs on Engine.submit and generate, the second model (draft), the
hypotheses and decoder figures of a request, decoder_requirements. Environment as test_basalt.py."""
import os
import unittest

import basalt

MODELS = os.environ.get("BASALT_TEST_MODELS", "")
LLAMA = os.path.join(MODELS, "tiny-llama-f32.gguf")
QWEN35 = os.path.join(MODELS, "tiny-qwen35-f32.gguf")  # hybrid: Gated DeltaNet layers keep a recurrent state
QWEN35_DRAFT = os.path.join(MODELS, "tiny-qwen35-q8_0.gguf")


class SpeculativeTest(unittest.TestCase):
    def test_greedy_speculation_equals_plain_generation(self):
        plain = basalt.generate_tokens("target", "The cat", 24)
        for decoder in ("speculative:k=3", "speculative:k=5,adaptive=1"):
            with self.subTest(decoder=decoder):
                self.assertEqual(basalt.generate_tokens("target", "The cat", 24, decoder=decoder, draft="draft"), plain)
        self.assertEqual(basalt.generate_tokens("target", "The cat", 24, decoder="speculative:source=ngram"), plain)

    def test_speculation_on_a_hybrid_model_restores_snapshots(self):
        # A recurrent state cannot be cut back: rejected drafts restore a snapshot and feed the kept tokens again.
        if not os.path.exists(QWEN35):
            raise RuntimeError(f"golden model not found: '{QWEN35}' (set BASALT_TEST_MODELS)")
        prompt = "The wooden box and the wooden box and the"
        plain = basalt.generate_tokens(QWEN35, prompt, 40)
        self.assertEqual(basalt.generate_tokens(QWEN35, prompt, 40, decoder="speculative:source=ngram"), plain)
        with basalt.Runtime() as rt, basalt.Model(QWEN35, rt) as target, basalt.Model(QWEN35_DRAFT, rt) as draft:
            self.assertGreater(target.n_layer_recurrent, 0)
            needs = basalt.decoder_requirements(rt, "speculative:k=4")
            self.assertEqual(needs["n_snapshot_seq"], 1)
            with basalt.Engine(rt, target, second_model=draft, seq_max=needs["n_seq"] + 1) as engine:
                spec = engine.submit(prompt, max_tokens=40, decoder="speculative:k=4,adaptive=false")
                self.assertEqual(spec.tokens(), plain)
                figures = spec.decoder_stats()
                self.assertGreater(figures["accepted"], 0)
                self.assertLess(figures["accepted"], figures["drafted"])  # some rejected: a snapshot was restored
                self.assertGreater(figures["refed"], 0)
            with basalt.Engine(rt, target, second_model=draft) as engine:  # one sequence: no room for a snapshot
                with self.assertRaisesRegex(basalt.BasaltError, "needs 2 sequences.*snapshots of a recurrent state"):
                    engine.submit(prompt, max_tokens=4, decoder="speculative:k=4")

    def test_request_figures_and_hypotheses(self):
        with basalt.Runtime() as rt, basalt.Model("target", rt) as target, basalt.Model("draft", rt) as draft:
            with basalt.Engine(rt, target, second_model=draft, parallel=2) as engine:
                spec = engine.submit("The cat", max_tokens=20, decoder="speculative:k=4")
                plain = engine.submit("The cat", max_tokens=20)
                hyps = spec.hypotheses()
                self.assertEqual(len(hyps), 1)
                self.assertEqual(hyps[0]["tokens"], plain.tokens())
                self.assertEqual(hyps[0]["text"], plain.text())
                figures = spec.decoder_stats()
                self.assertGreater(figures["verify_steps"], 0)
                self.assertLessEqual(figures["accepted"], figures["drafted"])
                self.assertAlmostEqual(figures["acceptance_rate"], figures["accepted"] / figures["drafted"])
                self.assertEqual(plain.decoder_stats(), {})
                self.assertEqual(plain.hypotheses()[0]["score"], 0.0)

    def test_requirements_and_errors(self):
        with basalt.Runtime() as rt:
            self.assertEqual(basalt.decoder_requirements(rt, "sample"),
                             {"n_seq": 1, "n_models": 1, "n_outputs": 1, "n_snapshot_seq": 0})
            self.assertEqual(basalt.decoder_requirements(rt, "speculative:k=2")["n_models"], 2)
            self.assertEqual(basalt.decoder_requirements(rt, "speculative:source=ngram")["n_models"], 1)
            with self.assertRaisesRegex(basalt.BasaltError, "no decoder named 'nope'.*available: .*speculative"):
                basalt.decoder_requirements(rt, "nope")
            with self.assertRaisesRegex(basalt.BasaltError, "unknown parameter 'width'"):
                basalt.decoder_requirements(rt, "speculative:width=3")
            with self.assertRaises(TypeError):
                basalt.decoder_requirements("not a runtime", "sample")
        with self.assertRaisesRegex(basalt.BasaltError, "needs a second model"):
            basalt.generate("target", "The cat", 4, decoder="speculative")
        with self.assertRaisesRegex(basalt.BasaltError, "'penalties'.*not draft-safe"):
            basalt.generate("target", "The cat", 4, samplers="penalties:repeat=1.2;greedy", decoder="speculative",
                            draft="draft")


if __name__ == "__main__":
    unittest.main()
