"""The package's shape: __init__.py only re-exports the modules split by concern, every public name is there, and
the errors form one hierarchy rooted at BasaltError (SamplerError and RequestError included). Run by CTest with
the other binding tests; BASALT_TEST_MODELS names the golden models folder."""
import ast
import os
import subprocess
import sys
import unittest

import basalt
from basalt import _capi

MODELS = os.environ.get("BASALT_TEST_MODELS", "")
LLAMA = os.path.join(MODELS, "tiny-llama-f32.gguf")

# Where each public name lives (the package re-exports them all as basalt.NAME).
HOMES = {
    "errors": ["BasaltError", "RequestError", "SamplerError"],
    "runtime": ["Runtime", "version", "library_path"],
    "model": ["Model"],
    "chat_template": ["ChatTemplate"],
    "session": ["Session"],
    "samplers": ["SamplerChain", "Sampler", "Candidates"],
    "engine": ["Engine", "decoder_requirements"],
    "request": ["Request"],
    "generation": ["generate", "generate_tokens"],
    "_capi": ["SAMPLER_ARGMAX_INVARIANT", "SAMPLER_DRAFT_SAFE", "SAMPLER_SELECTS", "TokenData"],
}


class Failing(basalt.Sampler):
    """Refuses every parameter set with a SamplerError of status ERR_UNSUPPORTED."""

    def __init__(self, params):
        raise basalt.SamplerError("never", _capi.ERR_UNSUPPORTED)


class TestLayout(unittest.TestCase):
    def test_init_only_reexports(self):
        with open(basalt.__file__, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        body = tree.body
        self.assertIsInstance(body[0], ast.Expr)  # the package docstring
        for node in body[1:]:
            if isinstance(node, ast.ImportFrom):
                self.assertEqual(node.level, 1, "only the package's own modules are imported")
                continue
            self.assertIsInstance(node, ast.Assign, ast.dump(node))
            self.assertEqual([t.id for t in node.targets], ["__all__"])

    def test_every_public_name_from_its_module(self):
        names = [n for ns in HOMES.values() for n in ns]
        self.assertEqual(sorted(basalt.__all__), sorted(names))
        for module, ns in HOMES.items():
            mod = getattr(basalt, module)
            for n in ns:
                self.assertIs(getattr(basalt, n), getattr(mod, n), f"basalt.{n} is basalt.{module}.{n}")
        star = {}
        exec("from basalt import *", star)  # noqa: S102 -- the star import gives exactly __all__
        self.assertEqual(sorted(k for k in star if k != "__builtins__"), sorted(names))


class TestErrors(unittest.TestCase):
    def test_one_hierarchy(self):
        self.assertTrue(issubclass(basalt.BasaltError, Exception))
        self.assertTrue(issubclass(basalt.RequestError, basalt.BasaltError))
        self.assertTrue(issubclass(basalt.SamplerError, basalt.BasaltError))
        self.assertFalse(issubclass(basalt.SamplerError, basalt.RequestError))

    def test_sampler_error_keeps_its_signature(self):
        e = basalt.SamplerError("bad k")
        self.assertEqual((str(e), e.args, e.status), ("bad k", ("bad k",), _capi.ERR_INVALID_ARGUMENT))
        self.assertEqual(e.status_name, "BASALT_ERR_INVALID_ARGUMENT")
        e = basalt.SamplerError("late", status=_capi.ERR_CAPACITY)
        self.assertEqual((e.status, e.status_name), (_capi.ERR_CAPACITY, "BASALT_ERR_CAPACITY"))
        for catch in (basalt.SamplerError, basalt.BasaltError):
            with self.assertRaises(catch):
                raise basalt.SamplerError("caught by either name")

    def test_status_name_settable(self):
        e = basalt.BasaltError(_capi.ERR_IO, "disk")
        self.assertEqual((str(e), e.status, e.status_name), ("disk", _capi.ERR_IO, "BASALT_ERR_IO"))
        e.status_name = "renamed"
        self.assertEqual(e.status_name, "renamed")

    def test_sampler_error_needs_no_library(self):
        # a Python sampler's own unit tests may raise SamplerError where libbasalt cannot be loaded
        script = ("import basalt\n"
                  "e = basalt.SamplerError('x', 3)\n"
                  "assert isinstance(e, basalt.BasaltError) and e.status == 3 and str(e) == 'x'\n"
                  "try:\n"
                  "    e.status_name\n"
                  "except OSError as err:\n"
                  "    assert 'cannot load libbasalt' in str(err), err\n"
                  "else:\n"
                  "    raise AssertionError('libbasalt loaded from a missing path')\n")
        env = dict(os.environ, BASALT_LIBRARY="/nonexistent/libbasalt.so.1")
        r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_status_reaches_c_through_the_hierarchy(self):
        if not os.path.isfile(LLAMA):
            raise RuntimeError(f"golden model not found: '{LLAMA}'")
        with basalt.Runtime() as rt:
            rt.register_sampler("py_failing", Failing)
            with self.assertRaises(basalt.BasaltError) as e:
                basalt.SamplerChain(rt, "py_failing;greedy")
            self.assertEqual((e.exception.status, e.exception.status_name), (_capi.ERR_UNSUPPORTED,
                                                                              "BASALT_ERR_UNSUPPORTED"))
            self.assertEqual(str(e.exception), "sampler 'py_failing': never")


if __name__ == "__main__":
    unittest.main()
