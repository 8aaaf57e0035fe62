"""Arguments the Python package must refuse by name instead of passing on wrapped or reinterpreted (issue 22,
item 12): a negative count, integers past 32 bits (ctypes wraps them), a non-text prompt, a closed model."""
import os
import unittest

import basalt

MODELS = os.environ.get("BASALT_TEST_MODELS", "")
LLAMA = os.path.join(MODELS, "tiny-llama-f32.gguf")


def setUpModule():
    if not os.path.isfile(LLAMA):
        raise RuntimeError(f"golden model not found: '{LLAMA}' (set BASALT_TEST_MODELS)")


class Arguments(unittest.TestCase):
    def setUp(self):
        self.rt = basalt.Runtime()
        self.model = basalt.Model(LLAMA, self.rt)

    def tearDown(self):
        self.rt.close()

    def test_generate_negative_count(self):
        with self.assertRaisesRegex(ValueError, "n_predict -1 is out of range"):
            basalt.generate(self.model, "hi", -1)
        with self.assertRaisesRegex(TypeError, "n_predict must be an integer"):
            basalt.generate(self.model, "hi", 2.5)
        self.assertEqual(basalt.generate(self.model, "hi", 0), "")

    def test_ids_past_32_bits(self):
        with self.assertRaisesRegex(ValueError, r"detokenize: tokens\[0\] 4294967596 is out of range"):
            self.model.detokenize([2**32 + 300])
        with self.assertRaisesRegex(ValueError, "token_to_piece: token"):
            self.model.token_to_piece(2**40)
        with self.assertRaisesRegex(ValueError, "is_eog: token"):
            self.model.is_eog(-2**33)
        with self.assertRaisesRegex(TypeError, r"detokenize: tokens\[1\] must be an integer, not str"):
            self.model.detokenize([1, "2"])
        self.assertEqual(self.model.detokenize(self.model.tokenize("Once", add_special=False)), "Once")

    def test_text_must_be_text(self):
        with self.assertRaisesRegex(TypeError, "tokenize: text must be str or bytes, not int"):
            self.model.tokenize(5)
        self.assertEqual(self.model.tokenize(b"Once", add_special=False), self.model.tokenize("Once", add_special=False))

    def test_closed_model(self):
        m = basalt.Model(LLAMA, self.rt)
        m.close()
        with self.assertRaisesRegex(ValueError, "Model is closed"):
            m.is_eog(1)
        with self.assertRaisesRegex(ValueError, "Model is closed"):
            m.tokenize("x")


if __name__ == "__main__":
    unittest.main()
