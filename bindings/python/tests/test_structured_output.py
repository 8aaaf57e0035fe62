"""Structured output from Python: Engine.submit's grammar / json_schema / regex / json_object arguments reach the
engine's grammar sampler (the output follows them; a bad one raises BasaltError naming it at submit). Environment
as test_basalt.py: BASALT_TEST_MODELS."""
import json
import os
import unittest

import basalt

MODELS = os.environ.get("BASALT_TEST_MODELS", "")
LLAMA = os.path.join(MODELS, "tiny-llama-f32.gguf")
SCHEMA = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1, "maximum": 3}}, "required": ["n"],
          "additionalProperties": False}


class TestStructuredOutput(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.rt = basalt.Runtime(env_plugins=False)
        cls.model = basalt.Model(LLAMA, cls.rt)
        cls.engine = basalt.Engine(cls.rt, cls.model)

    @classmethod
    def tearDownClass(cls):
        cls.engine.close()
        cls.model.close()
        cls.rt.close()

    def test_grammar(self):
        r = self.engine.submit("The answer", samplers="temp:1.0;dist:seed=2", max_tokens=20,
                               grammar='root ::= "answer: " ("yes" | "no")\n')
        self.assertIn(r.text(), ("answer: yes", "answer: no"))
        self.assertEqual(r.finish_reason, "stop")

    def test_regex(self):
        r = self.engine.submit("Once upon a time", samplers="temp:1.0;dist:seed=3", max_tokens=30,
                               regex="[a-z]{2,6}( [a-z]{2,6}){0,2}\\.")
        if r.finish_reason == "stop":
            self.assertRegex(r.text(), r"^[a-z]{2,6}( [a-z]{2,6}){0,2}\.$")
        else:
            self.assertRegex(r.text(), r"^[a-z .]*$")  # cut by max_tokens: a prefix

    def test_json_schema_dict_and_text(self):
        for schema in (SCHEMA, json.dumps(SCHEMA)):
            r = self.engine.submit("JSON:", samplers="temp:0.8;dist:seed=4", max_tokens=200, json_schema=schema)
            if r.finish_reason == "stop":
                self.assertIn(json.loads(r.text())["n"], (1, 2, 3))
            else:
                self.assertTrue(r.text().startswith("{"), r.text())

    def test_json_object(self):
        r = self.engine.submit("JSON:", samplers="temp:0.8;dist:seed=5", max_tokens=200, json_object=True)
        self.assertTrue(r.text().lstrip().startswith("{"), r.text())

    def test_refusals(self):
        with self.assertRaisesRegex(basalt.BasaltError, "undefined rule 'foo'"):
            self.engine.submit("x", max_tokens=4, grammar="root ::= foo\n")
        with self.assertRaisesRegex(basalt.BasaltError, "allOf"):
            self.engine.submit("x", max_tokens=4, json_schema={"type": "object", "allOf": [{}]})
        with self.assertRaisesRegex(ValueError, "give one of grammar, json_schema, regex and json_object"):
            self.engine.submit("x", max_tokens=4, regex="a", json_object=True)
        with self.assertRaisesRegex(ValueError, "NUL byte"):
            self.engine.submit("x", max_tokens=4, regex="a\0b")


if __name__ == "__main__":
    unittest.main()
