"""Engine.embed (docs/embeddings.md) on the golden tiny-bert: llama.cpp's mean-pooled golden, several inputs in one
call equal to each alone, poolings, L2 and dimensions, and the refusals. Environment as test_basalt.py:
BASALT_TEST_MODELS."""
import array
import math
import os
import unittest

import basalt

MODELS = os.environ.get("BASALT_TEST_MODELS", "")
BERT = os.path.join(MODELS, "tiny-bert-f32.gguf")
TEXT = "Once upon a time, the stranger opened the wooden box."


class TestEmbeddings(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        if not os.path.isfile(BERT):
            raise AssertionError(f"golden model {BERT} is missing (BASALT_TEST_MODELS)")
        cls.rt = basalt.Runtime(env_plugins=False)
        cls.model = basalt.Model(BERT, cls.rt)

    @classmethod
    def tearDownClass(cls):
        cls.model.close()
        cls.rt.close()

    def engine(self, **kw):
        e = basalt.Engine(self.rt, self.model, ctx=128, **kw)
        self.addCleanup(e.close)
        return e

    def test_golden_mean_pooled(self):
        golden = array.array("f")
        with open(os.path.join(MODELS, "..", "logits", "tiny-bert-f32.ref.pooled.f32"), "rb") as f:
            golden.frombytes(f.read())
        got = self.engine().embed(TEXT, normalize=False)
        self.assertEqual(len(got), 64)
        self.assertLess(max(abs(a - b) for a, b in zip(got, golden)), 3e-3)

    def test_many_inputs_poolings_dimensions(self):
        e = self.engine(parallel=4)
        inputs = [TEXT, "the wooden box", [101, 224, 282, 102]]
        many = e.embed(inputs)
        self.assertEqual(len(many), 3)
        for one, got in zip(inputs, many):
            alone = e.embed(one)
            self.assertLess(max(abs(a - b) for a, b in zip(alone, got)), 1e-5)
            self.assertAlmostEqual(math.fsum(x * x for x in got), 1.0, places=5)
        rows = e.embed([101, 224, 282, 102], pooling="none", normalize=False)
        self.assertEqual(len(rows), 4 * 64)
        cls = e.embed([101, 224, 282, 102], pooling="cls", normalize=False)
        self.assertEqual(cls, rows[:64])
        last = e.embed([101, 224, 282, 102], pooling="last", normalize=False)
        self.assertEqual(last, rows[3 * 64:])
        small = e.embed(TEXT, dimensions=8)
        self.assertEqual(len(small), 8)
        self.assertAlmostEqual(math.fsum(x * x for x in small), 1.0, places=5)

    def test_refusals(self):
        e = self.engine()
        with self.assertRaisesRegex(basalt.BasaltError, "no rank head"):
            e.embed(TEXT, pooling="rank")
        with self.assertRaisesRegex(basalt.BasaltError, "more than the context"):
            e.embed([[101, 102], [120] * 200])
        with self.assertRaises(ValueError):
            e.embed(TEXT, pooling="max")
        with self.assertRaisesRegex(basalt.BasaltError, "cannot generate"):
            e.submit(TEXT, max_tokens=2)


if __name__ == "__main__":
    unittest.main()
