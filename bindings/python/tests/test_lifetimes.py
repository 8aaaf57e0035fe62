"""Lifetimes of the Python package's objects: C objects are freed children first whatever order Python finalises
the wrappers in (interpreter shutdown, garbage cycles), close() on a parent closes its children first, and a
closed object raises ValueError instead of touching a freed handle. The shutdown scripts run in a subprocess
under every interpreter of INTERPRETERS present on the machine (at least one must be)."""
import gc
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

import basalt

MODELS = os.environ.get("BASALT_TEST_MODELS", "")
LLAMA = os.path.join(MODELS, "tiny-llama-f32.gguf")

# Debian's (CI has only this one) and pyenv's: module teardown order differs between them.
INTERPRETERS = ["/usr/bin/python3", "/root/.pyenv/versions/3.10.13/bin/python3",
                "/root/.pyenv/versions/3.11.7/bin/python3", "/root/.pyenv/versions/3.12.1/bin/python3",
                "/root/.pyenv/versions/3.13.0/bin/python3"]

# The reported crash: the runtime was finalised before the chain (the function makes __main__'s dict part of a
# garbage cycle, so shutdown's collector finalises rt and c in no particular order).
SCRIPT_CHAIN = 'import basalt; rt=basalt.Runtime(); c=basalt.SamplerChain(rt,"greedy")\ndef f(): pass\n'

# Everything left open at exit: a Python sampler in a chain, a model, a session, a caller-driven engine with a
# request half done and one queued, an engine on its own thread running a request with a Python callback and
# one with a Python sampler, and a garbage cycle holding a runtime and its chain.
SCRIPT_ALL = textwrap.dedent('''\
    import basalt, sys

    class Last(basalt.Sampler):
        flags = basalt.SAMPLER_SELECTS

        def apply(self, c):
            c.selected = len(c) - 1

    rt = basalt.Runtime(env_plugins=False)
    rt.register_sampler("last", Last)
    chain = basalt.SamplerChain(rt, "top_k:3;last")
    model = basalt.Model(sys.argv[1], rt)
    session = basalt.Session(rt, model)
    session.decode(model.tokenize("Once upon a time"))
    engine = basalt.Engine(rt, model, parallel=1)
    half = engine.submit("Once upon a time", samplers="top_k:3;last", max_tokens=50)
    queued = engine.submit("The cat", max_tokens=50)
    engine.step()
    engine.step()
    seen = []
    threaded = basalt.Engine(rt, model, own_thread=True, parallel=2)
    running = threaded.submit("Once upon a time", max_tokens=-1, ignore_eog=True,
                              callback=lambda r, t, s, f: seen.append(s))
    sampling = threaded.submit("The cat", samplers="top_k:3;last", max_tokens=-1, ignore_eog=True)
    next(iter(running))
    other = basalt.Runtime(env_plugins=False)
    loop = basalt.SamplerChain(other, "greedy")
    loop.me = loop
    other.me = (other, loop)
    del other, loop

    def f():
        pass
    ''')


def run_everywhere(test, script, *args):
    """Runs script under each interpreter present; each must exit 0 with nothing on stderr."""
    ran = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "script.py")
        with open(path, "w") as f:
            f.write(script)
        for exe in dict.fromkeys(INTERPRETERS + [sys.executable]):
            if not os.path.exists(exe):
                continue
            with test.subTest(interpreter=exe):
                out = subprocess.run([exe, path, *args], capture_output=True, timeout=120)
                ran.append(exe)
                test.assertEqual((out.returncode, out.stderr.decode("utf-8", "replace")), (0, ""), exe)
    test.assertTrue(ran, "no Python interpreter of the list exists on this machine")
    return ran


class TestShutdown(unittest.TestCase):

    def test_chain_left_open_at_exit(self):
        ran = run_everywhere(self, SCRIPT_CHAIN)
        print(f"\n  exit script ran under {len(ran)} interpreters: {', '.join(ran)}", file=sys.stderr)

    def test_everything_left_open_at_exit(self):
        run_everywhere(self, SCRIPT_ALL, LLAMA)


class TestClose(unittest.TestCase):

    def setUp(self):
        self.rt = basalt.Runtime(env_plugins=False)

    def tearDown(self):
        self.rt.close()

    def test_runtime_close_closes_its_children_first(self):
        class Last(basalt.Sampler):
            flags = basalt.SAMPLER_SELECTS

            def apply(self, c):
                c.selected = len(c) - 1

        self.rt.register_sampler("last", Last)
        reg = self.rt._registrations[0]
        chain = basalt.SamplerChain(self.rt, "top_k:3;last")
        copy = chain.clone()
        model = basalt.Model(LLAMA, self.rt)
        session = basalt.Session(self.rt, model)
        self.assertEqual(len(reg.objects), 2)  # one Python sampler instance per chain
        self.rt.close()
        self.assertEqual(reg.objects, {})  # the chains were destroyed (while the runtime still existed)
        for obj, kind in ((chain, "SamplerChain"), (copy, "SamplerChain"), (model, "Model"), (session, "Session")):
            self.assertTrue(obj.closed, kind)
        with self.assertRaisesRegex(ValueError, r"^SamplerChain is closed \(closed with its Runtime\)$"):
            chain.sample([1.0, 2.0, 3.0])
        with self.assertRaisesRegex(ValueError, r"^Model is closed \(closed with its Runtime\)$"):
            model.tokenize("Hello")
        # the session was closed by its model, which the runtime closed
        with self.assertRaisesRegex(ValueError, r"^Session is closed \(closed with its Model\)$"):
            session.logits()
        with self.assertRaisesRegex(ValueError, r"^Runtime is closed$"):
            self.rt.samplers()
        with self.assertRaisesRegex(ValueError, "Runtime is closed"):
            basalt.SamplerChain(self.rt, "greedy")
        with self.assertRaisesRegex(ValueError, "Runtime is closed"):
            with self.rt:
                pass
        for obj in (chain, copy, model, session, self.rt):
            obj.close()  # closing again does nothing

    def test_model_close_closes_its_sessions_not_the_runtime(self):
        model = basalt.Model(LLAMA, self.rt)
        session = basalt.Session(self.rt, model)
        with basalt.Session(self.rt, model) as gone:
            gone.close()
        model.close()
        self.assertTrue(session.closed)
        with self.assertRaisesRegex(ValueError, r"^Session is closed \(closed with its Model\)$"):
            session.decode([1])
        with self.assertRaisesRegex(ValueError, "Model is closed"):
            basalt.Session(self.rt, model)
        self.assertIn("greedy", self.rt.samplers())
        with basalt.SamplerChain(self.rt, "greedy") as chain:
            self.assertEqual(chain.sample([0.0, 1.0]), 1)

    def test_children_closed_first_then_the_parent(self):
        chain = basalt.SamplerChain(self.rt, "greedy")
        chain.close()
        self.assertEqual(self.rt._node.children, {})
        with self.assertRaisesRegex(ValueError, r"^SamplerChain is closed$"):
            len(chain)

    def test_finalisers_in_any_order_free_children_first(self):
        # What shutdown's collector may do: the runtime's finaliser runs while its chain still lives. The C
        # runtime must stay until the chain is freed, then go.
        rt = basalt.Runtime(env_plugins=False)
        chain = basalt.SamplerChain(rt, "top_k:2;greedy")
        rt.__del__()
        self.assertIsNotNone(rt._node.handle)
        self.assertEqual(chain.sample([0.0, 2.0, 1.0]), 1)
        chain.__del__()
        self.assertIsNone(chain._node.handle)
        self.assertIsNone(rt._node.handle)
        # and a garbage cycle holding both
        rt = basalt.Runtime(env_plugins=False)
        chain = basalt.SamplerChain(rt, "greedy")
        node = rt._node
        rt.cycle, chain.cycle = chain, rt
        del rt, chain
        gc.collect()
        self.assertIsNone(node.handle)


if __name__ == "__main__":
    unittest.main()
