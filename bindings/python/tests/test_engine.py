"""Tests of basalt.Engine and basalt.Request (the C engine from Python) on the golden tiny llama and the shipped
models. Environment as test_basalt.py: BASALT_TEST_MODELS, BASALT_CLI."""
import gc
import math
import os
import subprocess
import threading
import unittest

import basalt

MODELS = os.environ.get("BASALT_TEST_MODELS", "")
LLAMA = os.path.join(MODELS, "tiny-llama-f32.gguf")
PROMPT = "Once upon a time"
SEEDED = "top_k:40;temp:0.7;dist:seed=1"


def cli_run(model, prompt, n, chain):
    out = subprocess.run([os.environ["BASALT_CLI"], "run", "-m", model, "-p", prompt, "-n", str(n), "--samplers",
                          chain], capture_output=True, check=True)
    assert out.stdout.endswith(b"\n"), out.stdout
    return out.stdout[:-1].decode("utf-8", "replace")


class PyTopK(basalt.Sampler):
    """top_k in Python (sorted descending, ties by lower id), as the plugin."""
    flags = basalt.SAMPLER_ARGMAX_INVARIANT

    def __init__(self, params):
        self.k = int(params.get("k", params.get("value", "40")))

    def apply(self, c):
        PyTopK.threads.add(threading.get_ident())
        c.selected = -1
        if 0 < self.k < len(c):
            c.assign(sorted(c.entries(), key=lambda e: (-math.inf if math.isnan(e[1]) else -e[1], e[0]))[:self.k])
            c.sorted = True


PyTopK.threads = set()


class TestEngine(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.rt = basalt.Runtime(env_plugins=False)
        cls.rt.register_sampler("py_top_k", PyTopK)
        cls.model = basalt.Model(LLAMA, cls.rt)
        cls.solo_cache = {}

    @classmethod
    def tearDownClass(cls):
        cls.rt.close()

    def engine(self, **kw):
        e = basalt.Engine(self.rt, self.model, **kw)
        self.addCleanup(e.close)
        return e

    def solo(self, prompt, n, chain="greedy", **kw):
        """(text, tokens, finish_reason) of one request alone in its own engine."""
        key = (prompt, n, chain, tuple(sorted(kw.items())))
        if key not in self.solo_cache:
            with basalt.Engine(self.rt, self.model) as e:
                r = e.submit(prompt, samplers=chain, max_tokens=n, **kw)
                self.solo_cache[key] = (r.text(), r.tokens(), r.finish_reason)
        return self.solo_cache[key]

    def test_streaming_equals_the_whole_text_and_the_command_line(self):
        for chain in ("greedy", SEEDED):
            e = self.engine()
            r = e.submit(PROMPT, samplers=chain, max_tokens=24)
            pieces = list(r)
            self.assertGreater(len(pieces), 1)
            self.assertTrue(all(pieces))
            self.assertEqual(r.finish_reason, "length")
            self.assertEqual("".join(pieces), r.text(), chain)
            self.assertEqual(len(r.tokens()), 24)
            self.assertEqual(r.read(), ([], ""))  # everything was read
            self.assertEqual(r.text(), cli_run(LLAMA, PROMPT, 24, chain), chain)
            self.assertEqual(r.tokens(), basalt.generate_tokens(self.model, PROMPT, 24, chain, self.rt))
            self.assertEqual(r.text(), basalt.generate(LLAMA, PROMPT, 24, chain))
        # read() by hand, stepping: the same output
        e = self.engine()
        r = e.submit(PROMPT, max_tokens=24)
        toks, text = [], ""
        while e.step() > 0:
            t, s = r.read()
            toks += t
            text += s
        t, s = r.read()
        self.assertEqual((toks + t, text + s), (r.tokens(), r.text()))
        self.assertEqual(text + s, self.solo(PROMPT, 24)[0])

    def test_tokens_prompt_seed_and_shipped_models(self):
        e = self.engine()
        ids = self.model.tokenize(PROMPT)
        self.assertEqual(e.submit(tokens=ids, max_tokens=12).text(), self.solo(PROMPT, 12)[0])
        # seed= reaches a dist without a seed of its own
        self.assertEqual(e.submit(PROMPT, samplers="top_k:40;temp:0.7;dist", seed=1, max_tokens=16).text(),
                         self.solo(PROMPT, 16, SEEDED)[0])
        # a second model with the same vocabulary: attached, unused by "sample", kept alive, closes the engine
        second = basalt.Model(os.path.join(MODELS, "tiny-llama-f16.gguf"), self.rt)
        both = basalt.Engine(self.rt, self.model, second_model=second)
        self.assertEqual(both.submit(PROMPT, max_tokens=12).text(), self.solo(PROMPT, 12)[0])
        second.close()
        with self.assertRaisesRegex(ValueError, r"^Engine is closed \(closed with its Model\)$"):
            both.submit(PROMPT)
        self.assertFalse(self.model.closed)
        for name in ("target", "draft"):
            with basalt.Model(name, self.rt) as m, basalt.Engine(self.rt, m) as shipped:
                for chain in ("greedy", SEEDED):
                    self.assertEqual(shipped.submit("The best way to", samplers=chain, max_tokens=20).text(),
                                     cli_run(name, "The best way to", 20, chain), (name, chain))

    def test_concurrent_requests_each_get_their_solo_output(self):
        cases = [(PROMPT, 24, "greedy"), ("The little dog", 20, SEEDED),
                 ("Long ago, in a land far away, there lived", 16, "penalties:repeat=1.3,last_n=16;greedy"),
                 ("Hello", 30, "py_top_k:8;temp:0.7;dist:seed=3")]
        for kw in ({"parallel": 2}, {"parallel": 4, "prefill_chunk": 3}, {"parallel": 4, "max_batch_tokens": 8}):
            e = self.engine(**kw)
            reqs = [e.submit(p, samplers=c, max_tokens=n) for p, n, c in cases]
            # iterated in turns: each iteration that needs output steps the engine, advancing all of them
            its = [iter(r) for r in reqs]
            outs = [[] for _ in reqs]
            live = list(range(len(reqs)))
            while live:
                for i in list(live):
                    piece = next(its[i], None)
                    if piece is None:
                        live.remove(i)
                    else:
                        outs[i].append(piece)
            for (p, n, c), r, out in zip(cases, reqs, outs):
                self.assertEqual("".join(out), self.solo(p, n, c)[0], (kw, p, c))
                self.assertEqual(r.text(), self.solo(p, n, c)[0], (kw, p, c))
                self.assertEqual(r.tokens(), self.solo(p, n, c)[1], (kw, p, c))
            s = e.stats()
            self.assertEqual((s["finished"], s["queued"], s["running"]), (len(cases), 0, 0))
            self.assertEqual(s["generated_tokens"], sum(n for _, n, _ in cases))
            self.assertEqual(s["kv_slots_free"], s["kv_slots"])
        # run() to the end, then collect
        e = self.engine(parallel=2)
        reqs = [e.submit(p, samplers=c, max_tokens=n) for p, n, c in cases]
        e.run()
        self.assertEqual([r.finish_reason for r in reqs], ["length"] * len(cases))
        self.assertEqual([r.text() for r in reqs], [self.solo(p, n, c)[0] for p, n, c in cases])

    def test_admission_policies_and_preemption(self):
        # 4 requests that grow to about 65 positions (80 in blocks) in 160 KV slots: on demand they all start and
        # the newest are preempted and recomputed (stats count it); by reservation they run two at a time. The
        # same output either way.
        cases = [(PROMPT, 56, "greedy"), ("The cat", 56, SEEDED), ("A", 56, "greedy"), ("Hello there", 56, SEEDED)]
        want = [self.solo(p, n, c) for p, n, c in cases]
        for admission in ("on-demand", "reserve"):
            e = self.engine(parallel=4, ctx=128, kv_slots=160, admission=admission)
            reqs = [e.submit(p, samplers=c, max_tokens=n) for p, n, c in cases]
            e.step()
            self.assertEqual(e.stats()["running"], 4 if admission == "on-demand" else 2, admission)
            e.run()
            self.assertEqual([(r.text(), r.tokens(), r.finish_reason) for r in reqs], want, admission)
            s = e.stats()
            self.assertEqual(s["preemptions"] > 0, admission == "on-demand", (admission, s))
            self.assertEqual(s["kv_slots_free"], s["kv_slots"])
        with self.assertRaises(ValueError):
            basalt.Engine(self.rt, self.model, admission="lazy")

    def test_cancel(self):
        e = self.engine(parallel=1)
        running = e.submit(PROMPT, max_tokens=-1, ignore_eog=True)
        queued = e.submit("The cat", max_tokens=10)
        pieces = []
        for piece in running:
            pieces.append(piece)
            if len(pieces) == 3:
                running.cancel()
                queued.cancel()
                running.cancel()  # idempotent
        self.assertEqual(running.finish_reason, "cancelled")
        self.assertLess(len(running.tokens()), 10)
        self.assertEqual("".join(pieces), running.text())
        self.assertTrue(self.solo(PROMPT, -1, ignore_eog=True)[0].startswith(running.text()))
        self.assertEqual(queued.wait(), "cancelled")
        self.assertEqual((queued.tokens(), queued.text(), queued.stats()["generated_tokens"]), ([], "", 0))
        self.assertIsNone(running.error)

    def test_stop_strings_and_tokens(self):
        full, tokens, _ = self.solo(PROMPT, 24)
        stop = full[9:12]
        self.assertNotIn(stop, full[:9 + len(stop) - 1])
        e = self.engine()
        r = e.submit(PROMPT, max_tokens=24, stop=[stop, "never appears"])
        pieces = list(r)
        self.assertEqual(r.finish_reason, "stop")
        self.assertEqual(r.text(), full[:full.index(stop)])
        self.assertEqual("".join(pieces), r.text())
        self.assertTrue(all(stop not in p for p in pieces))
        self.assertEqual(e.submit(PROMPT, max_tokens=24, stop=stop).text(), r.text())  # one string, not a list
        # a stop token ends before it, like an end-of-generation token
        r = e.submit(PROMPT, max_tokens=24, stop_tokens=[tokens[5]])
        self.assertEqual((r.tokens(), r.finish_reason), (tokens[:5], "stop"))
        # a NUL byte would silently cut a C string: refused, naming the field
        for kwargs, field in ((dict(stop=["ok", "a\x00b"]), "submit: stop[1]"), (dict(stop=b"a\x00"), "submit: stop[0]"),
                              (dict(samplers="greedy\x00junk"), "submit: samplers"),
                              (dict(cache_salt="s\x00t"), "submit: cache_salt")):
            with self.assertRaises(ValueError) as cm:
                e.submit(PROMPT, max_tokens=4, **kwargs)
            self.assertIn(field + " contains a NUL byte", str(cm.exception))

    def test_max_tokens_and_the_context(self):
        e = self.engine()
        r = e.submit(PROMPT, max_tokens=5)
        self.assertEqual(r.wait(), "length")
        self.assertEqual(len(r.tokens()), 5)
        stats = r.stats()
        self.assertEqual(sorted(stats), sorted(["prompt_tokens", "cached_tokens", "generated_tokens", "queue_ms",
                                                "ttft_ms", "total_ms", "itl_mean_ms", "itl_p50_ms", "itl_p99_ms",
                                                "itl_max_ms", "tokens_per_s", "source_tokens", "encode_ms"]))
        self.assertEqual((stats["source_tokens"], stats["encode_ms"]), (0, 0))  # decoder-only: no encoder
        self.assertEqual((stats["prompt_tokens"], stats["generated_tokens"]), (len(self.model.tokenize(PROMPT)), 5))
        self.assertEqual(len(r.itl()), 4)
        self.assertGreater(stats["total_ms"], 0)
        self.assertEqual(e.submit(PROMPT, max_tokens=0).tokens(), [])
        small = self.engine(ctx=16)
        r = small.submit(PROMPT, max_tokens=-1, ignore_eog=True)
        self.assertEqual(r.wait(), "context")
        self.assertEqual(len(r.tokens()) + len(self.model.tokenize(PROMPT)), 17)  # the last is never fed
        with self.assertRaises(basalt.BasaltError) as cm:
            small.submit("word " * 40)
        self.assertEqual(cm.exception.status_name, "BASALT_ERR_CAPACITY")
        self.assertIn("more than the context of 16", str(cm.exception))

    def test_bad_requests_raise_the_library_message(self):
        e = self.engine()
        with self.assertRaises(basalt.BasaltError) as cm:
            e.submit(PROMPT, samplers="top_k:40;;dist")
        self.assertEqual(str(cm.exception), "bad sampler chain: an empty entry in 'top_k:40;;dist'")
        self.assertEqual(cm.exception.status_name, "BASALT_ERR_FORMAT")
        with self.assertRaises(basalt.BasaltError) as cm:
            e.submit(PROMPT, decoder="nope")
        self.assertIn("no decoder named 'nope' is loaded (available: ", str(cm.exception))
        with self.assertRaises(basalt.BasaltError) as cm:
            e.submit(PROMPT, decoder="sample:bogus=1")
        self.assertIn("bogus", str(cm.exception))
        with self.assertRaises(basalt.BasaltError) as cm:
            e.submit()
        self.assertEqual(str(cm.exception), "the request has neither a prompt nor tokens")
        with self.assertRaises(basalt.BasaltError) as cm:
            e.submit(PROMPT, max_tokens=-2)
        self.assertIn("max_tokens -2 is out of range", str(cm.exception))
        with self.assertRaises(ValueError):
            e.submit(PROMPT, max_tokens=2**31)
        with self.assertRaises(ValueError):
            basalt.Engine(self.rt, self.model, ctx=-1)
        with self.assertRaises(basalt.BasaltError) as cm:
            basalt.Engine(self.rt, self.model, backend="nope")
        self.assertIn("nope", str(cm.exception))
        with basalt.Model("target", self.rt) as other:
            with self.assertRaises(basalt.BasaltError) as cm:
                basalt.Engine(self.rt, self.model, second_model=other)
            self.assertIn("vocabulary", str(cm.exception))
        with self.assertRaises(basalt.BasaltError) as cm:
            self.engine(own_thread=True).step()
        self.assertIn("the engine runs its own thread", str(cm.exception))

    def test_a_failing_sampler_fails_its_request_only(self):
        class Boom(basalt.Sampler):
            flags = basalt.SAMPLER_SELECTS
            calls = 0

            def apply(self, c):
                Boom.calls += 1
                if Boom.calls >= 4:
                    raise RuntimeError("boom")
                c.selected = 0

        rt = basalt.Runtime(env_plugins=False)
        rt.register_sampler("boom", Boom)
        self.addCleanup(rt.close)
        model = basalt.Model(LLAMA, rt)
        e = basalt.Engine(rt, model, parallel=2)
        bad = e.submit(PROMPT, samplers="boom", max_tokens=10)
        good = e.submit(PROMPT, max_tokens=10)
        self.assertEqual(bad.wait(), "error")
        self.assertEqual(len(bad.read()[0]), 3)  # what it produced before failing
        with self.assertRaises(basalt.RequestError) as cm:
            bad.text()
        self.assertEqual(str(cm.exception), "decoder 'sample': consume: sampler 'boom': RuntimeError: boom")
        self.assertIs(cm.exception.request, bad)
        self.assertEqual(bad.error, str(cm.exception))
        self.assertEqual(good.text(), self.solo(PROMPT, 10)[0])
        with self.assertRaises(basalt.BasaltError):
            basalt.generate(model, PROMPT, 8, "boom")

    def test_callbacks(self):
        e = self.engine(parallel=2)
        got = {}

        def collect(request, tokens, text, finish_reason):
            entry = got.setdefault(id(request), [[], "", []])
            entry[0] += tokens
            entry[1] += text
            entry[2].append(finish_reason)

        def submit(prompt, **kw):  # the request is all that refers to its function
            return e.submit(prompt, callback=lambda *args: collect(*args), **kw)

        a = submit(PROMPT, max_tokens=20)
        b = submit("The little dog", samplers=SEEDED, max_tokens=12)
        gc.collect()  # the ctypes callback belongs to the engine, the function to the request
        e.run()
        for r in (a, b):
            tokens, text, reasons = got[id(r)]
            self.assertEqual((tokens, text), (r.tokens(), r.text()))  # the callback does not consume the output
            self.assertEqual(reasons[-1], "length")
            self.assertTrue(all(x is None for x in reasons[:-1]))
        # a callback may cancel its request
        stopper = e.submit(PROMPT, max_tokens=-1, ignore_eog=True, callback=lambda r, t, s, f: r.cancel())
        self.assertEqual(stopper.wait(), "cancelled")
        self.assertLess(len(stopper.tokens()), 5)
        # ...but not step or close the engine
        errors = []

        def reenter(request, tokens, text, finish_reason):
            for call in (e.step, e.run, e.close):
                try:
                    call()
                except RuntimeError as ex:
                    errors.append(str(ex))

        e.submit(PROMPT, max_tokens=2, callback=reenter).wait()
        self.assertEqual(len(errors), 6)  # three refusals for each of the two calls
        self.assertIn("cannot be called from inside the engine's step", errors[0])
        self.assertIn("cannot be called from inside the engine's step", errors[1])
        self.assertIn("cannot be closed from inside its own step", errors[2])
        self.assertFalse(e.closed)

    def test_a_raising_callback_cancels_its_request_and_raises_once(self):
        e = self.engine(parallel=2)
        calls = []

        def bad(request, tokens, text, finish_reason):
            calls.append(text)
            if len(calls) == 2:
                raise KeyError("from the callback")

        r = e.submit(PROMPT, max_tokens=30, callback=bad)
        other = e.submit("The little dog", max_tokens=8)
        with self.assertRaises(KeyError):
            e.run()
        e.run()  # raised once: the engine goes on
        self.assertEqual(r.finish_reason, "cancelled")
        self.assertEqual(len(calls), 2)  # no call after it raised
        self.assertEqual(r.text(), "".join(calls))
        self.assertTrue(self.solo(PROMPT, 30)[0].startswith(r.text()))
        self.assertEqual(other.text(), self.solo("The little dog", 8)[0])

        # the request's own call re-raises it when that comes first (here: its iteration, which steps)
        def first(request, tokens, text, finish_reason):
            raise ValueError("at once")

        r = e.submit(PROMPT, max_tokens=30, callback=first)
        with self.assertRaisesRegex(ValueError, "at once"):
            r.text()
        self.assertEqual(r.text(), r.text())  # not again
        self.assertEqual(r.finish_reason, "cancelled")
        # with the engine's own thread, the request is the only one to raise it
        t = self.engine(own_thread=True)
        r = t.submit(PROMPT, max_tokens=30, callback=first)
        with self.assertRaisesRegex(ValueError, "at once"):
            for _ in r:
                pass
        self.assertEqual(r.wait(), "cancelled")

    def test_own_thread(self):
        cases = [(PROMPT, 24, "greedy"), ("The little dog", 16, SEEDED), ("Hello", 20, "py_top_k:8;greedy")]
        for case in cases:
            self.solo(*case)
        PyTopK.threads.clear()
        e = self.engine(own_thread=True, parallel=3)
        seen = []
        reqs = [e.submit(p, samplers=c, max_tokens=n, callback=lambda r, t, s, f: seen.append(threading.get_ident()))
                for p, n, c in cases]
        pieces = list(reqs[0])  # iterated from the main thread: it waits for the engine's thread
        self.assertEqual("".join(pieces), self.solo(*cases[0])[0])
        for (p, n, c), r in zip(cases, reqs):
            self.assertEqual(r.text(), self.solo(p, n, c)[0], c)
        e.run()
        self.assertNotIn(threading.get_ident(), set(seen))  # callbacks ran on the engine's thread
        self.assertTrue(PyTopK.threads)
        self.assertNotIn(threading.get_ident(), PyTopK.threads)  # and the Python sampler too
        # submit from several Python threads while it runs
        out = {}

        def worker(i):
            out[i] = e.submit(PROMPT, max_tokens=10 + i).text()

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(out, {i: self.solo(PROMPT, 10 + i)[0] for i in range(4)})
        # closing the engine cancels what is left; the request stays readable
        r = e.submit(PROMPT, max_tokens=-1, ignore_eog=True)
        next(iter(r))
        e.close()
        self.assertEqual(r.finish_reason, "cancelled")
        self.assertTrue(self.solo(PROMPT, -1, ignore_eog=True)[0].startswith(r.text()))

    def test_engine_lifetimes(self):
        rt = basalt.Runtime(env_plugins=False)
        model = basalt.Model(LLAMA, rt)
        e = basalt.Engine(rt, model)
        r = e.submit(PROMPT, max_tokens=-1, ignore_eog=True)
        e.step()
        rt.close()  # closes the model, which closes the engine first
        self.assertTrue(e.closed and model.closed)
        with self.assertRaisesRegex(ValueError, r"^Engine is closed \(closed with its Model\)$"):
            e.submit(PROMPT)
        with self.assertRaisesRegex(ValueError, "Engine is closed"):
            e.step()
        with self.assertRaisesRegex(ValueError, "Engine is closed"):
            e.stats()
        self.assertEqual(r.finish_reason, "cancelled")  # the request outlives its engine, readable
        self.assertEqual(r.wait(), "cancelled")
        self.assertGreaterEqual(len(r.tokens()), 1)
        r.close()
        with self.assertRaisesRegex(ValueError, r"^Request is closed$"):
            r.read()
        with self.assertRaisesRegex(ValueError, "Request is closed"):
            r.finish_reason  # noqa: B018
        with self.assertRaisesRegex(ValueError, "Request is closed"):
            list(r)
        # a request keeps its engine alive; garbage in any order frees children first
        rt = basalt.Runtime(env_plugins=False)
        model = basalt.Model(LLAMA, rt)
        e = basalt.Engine(rt, model, own_thread=True)
        r = e.submit(PROMPT, max_tokens=-1, ignore_eog=True, callback=lambda *a: None)
        node = rt._node
        r.cycle, rt.cycle = rt, r
        del rt, model, e, r
        gc.collect()
        self.assertIsNone(node.handle)


if __name__ == "__main__":
    unittest.main()
