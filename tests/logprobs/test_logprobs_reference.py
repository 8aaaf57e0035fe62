"""Per-token log-probabilities of engine requests against an independent float64 forward
(../shared/testdata/reference_forward.py) and a float64 log-softmax in numpy.

A greedy request with logprobs=5 and a seeded sampled one on the golden tiny llama (F32 K/V, so the comparison is
the golden README's F32 tolerance): every emitted token's recorded logprob equals log_softmax(reference logits of
the prefix that produced it)[token], the top 5 are the reference's 5 most likely ids, sorted, with their logprobs,
and greedy's token is the first of them. Run by CTest with Debian's python3 + numpy and the bindings from the
build tree."""
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

LLAMA = os.path.join(MODELS, "tiny-llama-f32.gguf")
PROMPT = [1, 17, 42, 99, 7, 300, 12, 5, 250, 3, 64, 8]
F32_KV = {"k_type": "f32", "v_type": "f32"}
TOL = 1e-5  # float32 logits of the engine vs the float64 forward, through log-softmax (measured ~1.4e-7)


def log_softmax(rows):
    m = rows.max(axis=-1, keepdims=True)
    return rows - (m + np.log(np.exp(rows - m).sum(axis=-1, keepdims=True)))


class ReferenceTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        if not os.path.isfile(LLAMA):
            raise AssertionError(f"golden model {LLAMA} is missing (BASALT_TEST_MODELS)")
        cls.kv, cls.W = ref.load(LLAMA)

    def reference(self, generated):
        """float64 log-softmax of the row each generated token was drawn from."""
        toks = np.array(PROMPT + generated[:-1])
        logits = ref.fwd_llama_like(self.kv, self.W, toks, self.kv["general.architecture"])
        return log_softmax(np.asarray(logits, dtype=np.float64))[len(PROMPT) - 1:]

    def run_request(self, samplers, n_top):
        with basalt.Runtime(env_plugins=False) as rt, basalt.Model(LLAMA, rt) as model, \
                basalt.Engine(rt, model, kv_params=F32_KV) as engine:
            r = engine.submit(tokens=PROMPT, max_tokens=10, samplers=samplers, logprobs=n_top, ignore_eog=True)
            return r.tokens(), r.logprobs()

    def test_greedy(self):
        tokens, lps = self.run_request("greedy", 5)
        self.assertEqual(len(tokens), 10)
        ref_lp = self.reference(tokens)
        for i, (t, e) in enumerate(zip(tokens, lps)):
            self.assertEqual(e["token"], t)
            self.assertLess(abs(e["logprob"] - ref_lp[i, t]), TOL, f"token {i}")
            order = sorted(range(ref_lp.shape[1]), key=lambda v: (-ref_lp[i, v], v))[:5]
            self.assertEqual([k for k, _ in e["top"]], order, f"token {i}: top 5")
            self.assertEqual(e["top"][0][0], t, f"token {i}: greedy picks the top one")
            for k, v in e["top"]:
                self.assertLess(abs(v - ref_lp[i, k]), TOL)

    def test_sampled_raw_logprobs(self):
        tokens, lps = self.run_request("top_k:20;temp:1.5;dist:seed=7", 2)
        ref_lp = self.reference(tokens)
        for i, (t, e) in enumerate(zip(tokens, lps)):
            self.assertEqual(e["token"], t)
            # the raw distribution's logprob, not the tempered/truncated one the draw used
            self.assertLess(abs(e["logprob"] - ref_lp[i, t]), TOL, f"token {i}")
            self.assertEqual(len(e["top"]), 2)


if __name__ == "__main__":
    unittest.main()
