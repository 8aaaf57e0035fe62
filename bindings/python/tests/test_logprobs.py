"""Per-token log-probabilities of engine requests (submit(logprobs=N), Request.logprobs()) against an independent
float64 log-softmax of the logits a Session computes for the same tokens, on the golden tiny llama. Environment
as test_basalt.py: BASALT_TEST_MODELS."""
import json
import math
import os
import subprocess
import unittest

import basalt

MODELS = os.environ.get("BASALT_TEST_MODELS", "")
LLAMA = os.path.join(MODELS, "tiny-llama-f32.gguf")
PROMPT = "Once upon a time"


def log_softmax64(row):
    """float64 log-softmax of a logits row (max-shifted, fsum)."""
    m = max(row)
    log_z = m + math.log(math.fsum(math.exp(x - m) for x in row))
    return [x - log_z for x in row]


class TestLogprobs(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        if not os.path.isfile(LLAMA):
            raise AssertionError(f"golden model {LLAMA} is missing (BASALT_TEST_MODELS)")
        cls.rt = basalt.Runtime(env_plugins=False)
        cls.model = basalt.Model(LLAMA, cls.rt)

    @classmethod
    def tearDownClass(cls):
        cls.model.close()
        cls.rt.close()

    def engine(self, **kw):
        e = basalt.Engine(self.rt, self.model, **kw)
        self.addCleanup(e.close)
        return e

    def reference_rows(self, prompt, generated):
        """The logits row each generated token was drawn from: prompt + generated[:i], by a Session."""
        rows = []
        with basalt.Session(self.rt, self.model) as s:
            s.decode(prompt)
            rows.append(s.logits())
            for t in generated[:-1]:
                s.decode([t])
                rows.append(s.logits())
        return rows

    def test_greedy_logprobs_match_an_independent_log_softmax(self):
        n_top = 5
        e = self.engine()
        r = e.submit(PROMPT, max_tokens=12, samplers="greedy", logprobs=n_top, ignore_eog=True)
        tokens = r.tokens()
        lps = r.logprobs()
        self.assertEqual(len(tokens), 12)
        self.assertEqual([x["token"] for x in lps], tokens)
        rows = self.reference_rows(self.model.tokenize(PROMPT), tokens)
        for i, (entry, row) in enumerate(zip(lps, rows)):
            ref = log_softmax64(row)
            self.assertAlmostEqual(entry["logprob"], ref[entry["token"]], delta=1e-4, msg=f"token {i}")
            top = entry["top"]
            self.assertEqual(len(top), n_top)
            values = [v for _, v in top]
            self.assertEqual(values, sorted(values, reverse=True), f"token {i}: top not sorted")
            # greedy: the chosen token is the most likely one
            self.assertEqual(top[0][0], entry["token"], f"token {i}")
            self.assertAlmostEqual(top[0][1], entry["logprob"], delta=1e-6)
            expected_ids = sorted(range(len(ref)), key=lambda v: (-ref[v], v))[:n_top]
            self.assertEqual([t for t, _ in top], expected_ids, f"token {i}")
            for t, v in top:
                self.assertAlmostEqual(v, ref[t], delta=1e-4)
            self.assertLessEqual(entry["logprob"], 0.0)

    def test_sampled_tokens_get_their_raw_logprob_not_the_tempered_one(self):
        e = self.engine()
        chain = "top_k:40;temp:0.7;dist:seed=3"
        r = e.submit(PROMPT, max_tokens=8, samplers=chain, logprobs=0, ignore_eog=True)
        tokens = r.tokens()
        lps = r.logprobs()
        self.assertEqual([x["token"] for x in lps], tokens)
        rows = self.reference_rows(self.model.tokenize(PROMPT), tokens)
        for entry, row in zip(lps, rows):
            self.assertEqual(entry["top"], [])
            self.assertAlmostEqual(entry["logprob"], log_softmax64(row)[entry["token"]], delta=1e-4)
        # the same request without logprobs gives the same tokens (recording changes nothing)
        self.assertEqual(e.submit(PROMPT, max_tokens=8, samplers=chain, ignore_eog=True).tokens(), tokens)

    def test_without_the_flag_nothing_is_recorded(self):
        r = self.engine().submit(PROMPT, max_tokens=4)
        r.tokens()
        self.assertEqual(r.logprobs(), [])

    def test_basalt_batch_reports_the_same_logprobs(self):
        r = self.engine().submit(PROMPT, max_tokens=6, samplers="greedy", logprobs=3, ignore_eog=True)
        expected = r.logprobs()
        lines = (json.dumps({"id": "a", "prompt": PROMPT, "max_tokens": 6, "logprobs": 3}) + "\n" +
                 json.dumps({"id": "b", "prompt": PROMPT, "max_tokens": 2, "logprobs": 21}) + "\n")
        out = subprocess.run([os.environ["BASALT_CLI"], "batch", "-m", LLAMA, "-r", "-"], input=lines.encode(),
                             capture_output=True)
        self.assertEqual(out.returncode, 1, out.stderr)  # line b is refused
        results = {j["id"]: j for j in map(json.loads, out.stdout.decode().splitlines())}
        self.assertIn("'logprobs' must be an integer in 0..20", results["b"]["error"])
        got = results["a"]["logprobs"]
        self.assertEqual(len(got), len(results["a"]["tokens"]))
        for g, e in zip(got, expected[:len(got)]):
            self.assertEqual(g["token"], e["token"])
            self.assertAlmostEqual(g["logprob"], e["logprob"], delta=1e-6)
            self.assertEqual([t for t, _ in g["top"]], [t for t, _ in e["top"]])

    def test_refusals(self):
        e = self.engine(seq_max=4)
        with self.assertRaisesRegex(basalt.BasaltError, "decoder 'beam'"):
            e.submit(PROMPT, max_tokens=4, decoder="beam:width=2", logprobs=2)
        with self.assertRaisesRegex(basalt.BasaltError, "n_top_logprobs 21 is out of range"):
            e.submit(PROMPT, max_tokens=4, logprobs=21)
        with self.assertRaisesRegex(basalt.BasaltError, "n_top_logprobs -1 is out of range"):
            e.submit(PROMPT, max_tokens=4, logprobs=-1)
        with self.assertRaises(TypeError):
            e.submit(PROMPT, max_tokens=4, logprobs=True)


if __name__ == "__main__":
    unittest.main()
