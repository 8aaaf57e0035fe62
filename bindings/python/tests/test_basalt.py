"""Tests of the Python package (bindings/python/basalt) on the golden tiny models, run by CTest with Debian's
/usr/bin/python3. Environment: BASALT_TEST_MODELS (the golden models folder; a missing folder fails), BASALT_CLI
(the basalt binary, to compare with the command line). The package and libbasalt come from PYTHONPATH."""
import ctypes
import gc
import math
import os
import subprocess
import unittest

import basalt
from basalt import _capi

MODELS = os.environ.get("BASALT_TEST_MODELS", "")
LLAMA = os.path.join(MODELS, "tiny-llama-f32.gguf")
PROMPT = "Once upon a time"


def setUpModule():
    # missing test data is a failure, never a skip
    if not os.path.isfile(LLAMA):
        raise RuntimeError(f"golden model not found: '{LLAMA}' (set BASALT_TEST_MODELS to ../shared/testdata/golden/models)")


class PyTopK(basalt.Sampler):
    """top_k written in Python: the k highest logits, sorted descending, ties by lower id (as the plugin).
    A bare value in a chain ("py_top_k:8") arrives under the key "value", so that is an alias of k."""
    flags = basalt.SAMPLER_ARGMAX_INVARIANT | basalt.SAMPLER_DRAFT_SAFE

    def __init__(self, params):
        unknown = set(params) - {"k", "value"}
        if unknown:
            raise basalt.SamplerError(f"unknown parameter '{unknown.pop()}' (accepted: k)")
        value = params.get("k", params.get("value", "40"))
        try:
            self.k = int(value)
        except ValueError:
            raise basalt.SamplerError(f"parameter 'k' = '{value}' is not an integer") from None

    def apply(self, c):
        c.selected = -1
        if self.k <= 0 or self.k >= len(c):
            return
        entries = sorted(c.entries(), key=lambda e: (-math.inf if math.isnan(e[1]) else -e[1], e[0]))
        c.assign(entries[:self.k])
        c.sorted = True
        if c.probs_valid:
            total = sum(d.p for d in c.data())
            for d in c.data():
                d.p = d.p / total


class PyGreedy(basalt.Sampler):
    """Selects the highest logit (ties: lowest id; NaN ignored)."""
    flags = basalt.SAMPLER_ARGMAX_INVARIANT | basalt.SAMPLER_DRAFT_SAFE | basalt.SAMPLER_SELECTS

    def apply(self, c):
        best = -1
        for i, d in enumerate(c.data()):
            if math.isnan(d.logit):
                continue
            if best < 0 or d.logit > c[best].logit or (d.logit == c[best].logit and d.id < c[best].id):
                best = i
        if best < 0:
            raise basalt.SamplerError(f"sequence {c.seq_id} has no candidate with a logit")
        c.selected = best


class PyNoRepeat(basalt.Sampler):
    """Stateful: bans the tokens accepted in the last n steps (unless that would ban every candidate)."""

    def __init__(self, params):
        self.n = int(params.get("n", "16"))
        self.window = []

    def apply(self, c):
        c.selected = -1
        data = c.data()
        banned = [d for d in data if d.id in self.window]
        if banned and len(banned) < len(data):
            for d in banned:
                d.logit = -math.inf
                d.p = 0.0
            c.sorted = False
            c.probs_valid = False

    def accept(self, token):
        self.window = (self.window + [token])[-self.n:]

    def reset(self):
        self.window = []


class PyBoom(basalt.Sampler):
    flags = basalt.SAMPLER_SELECTS

    def apply(self, c):
        raise RuntimeError("boom")


def cli_run(chain, n):
    cli = os.environ["BASALT_CLI"]
    out = subprocess.run([cli, "run", "-m", LLAMA, "-p", PROMPT, "-n", str(n), "--samplers", chain],
                         capture_output=True, check=True)
    return out.stdout.decode("utf-8", "replace")


class TestBasalt(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.rt = basalt.Runtime(env_plugins=False)
        cls.rt.register_sampler("py_top_k", PyTopK)
        cls.rt.register_sampler("py_greedy", PyGreedy)
        cls.rt.register_sampler("py_no_repeat", PyNoRepeat)
        cls.rt.register_sampler("py_boom", PyBoom)
        cls.model = basalt.Model(LLAMA, cls.rt)

    @classmethod
    def tearDownClass(cls):
        cls.model.close()
        cls.rt.close()

    def tokens(self, chain, n=16):
        return basalt.generate_tokens(self.model, PROMPT, n, chain, self.rt)

    def test_struct_layouts_match_the_pinned_c_layouts(self):
        sizes = {_capi.Params: 32, _capi.TokenData: 12, _capi.Candidates: 40, _capi.Host: 56,
                 _capi.SamplerIface: 56, _capi.Batch: 48, _capi.RuntimeParams: 8, _capi.ComponentInfo: 64,
                 _capi.ModelInfo: 128, _capi.SessionParams: 72, _capi.SpecialTokens: 40, _capi.EngineParams: 112,
                 _capi.RequestParams: 208, _capi.RequestStats: 112, _capi.EngineStats: 112,
                 _capi.DecoderNeeds: 24, _capi.MoeStats: 56, _capi.ChatRenderParams: 72}
        for struct, size in sizes.items():
            self.assertEqual(ctypes.sizeof(struct), size, struct.__name__)
        self.assertEqual(_capi.Candidates.selected.offset, 24)
        self.assertEqual(_capi.SamplerIface.clone.offset, 48)
        self.assertEqual(_capi.Host.set_error.offset, 32)
        # tests/test-abi-layout.cpp pins the same offsets
        pins = {_capi.EngineParams: {"n_ctx": 8, "prefill_chunk": 28, "backend": 40, "second_model": 72,
                                     "moe_router": 80, "max_step_ms": 88, "max_step_factor": 96,
                                     "prefix_state_bytes": 104},
                _capi.SessionParams: {"backend": 24, "kv_params": 48, "moe_router": 56,
                                      "state_checkpoint_bytes": 64},
                _capi.MoeStats: {"n_expert": 4, "passes": 8, "dropped": 32, "rerouted": 40, "imbalance": 48},
                _capi.RequestParams: {"prompt": 8, "tokens": 24, "samplers": 40, "max_tokens": 56, "seed": 64,
                                      "stop": 88, "callback": 104, "user_data": 112, "cache_salt": 120,
                                      "steer": 128, "n_steer": 136, "source": 144, "source_tokens": 152,
                                      "n_source_tokens": 160, "n_top_logprobs": 168},
                _capi.RequestStats: {"prompt_tokens": 8, "queue_ms": 32, "tokens_per_s": 88, "source_tokens": 96,
                                     "encode_ms": 104},
                _capi.EngineStats: {"steps": 8, "kv_slots_free": 72, "cached_tokens": 80, "preemptions": 88,
                                     "state_checkpoints": 96, "state_checkpoint_bytes": 104},
                _capi.DecoderNeeds: {"n_seq": 4, "n_outputs": 12}}
        for struct, fields in pins.items():
            for field, offset in fields.items():
                self.assertEqual(getattr(struct, field).offset, offset, f"{struct.__name__}.{field}")

    def test_library_and_plugins_are_found(self):
        self.assertRegex(basalt.version(), r"^\d+\.\d+\.\d+$")
        self.assertTrue(basalt.library_path().endswith("libbasalt.so.1"), basalt.library_path())
        names = self.rt.samplers()
        for name in ("greedy", "top_k", "dist", "py_top_k", "py_greedy"):
            self.assertIn(name, names)
        info = [c for c in self.rt.components() if c["name"] == "py_top_k"][0]
        self.assertEqual((info["kind"], info["plugin"], info["file"]), ("sampler", "in-process", ""))

    def test_decoder_layers(self):
        self.assertEqual(self.model.n_layer_decoder, 0)  # decoder-only
        with basalt.Model(os.path.join(MODELS, "tiny-t5-f32.gguf"), self.rt) as t5:
            self.assertEqual(t5.n_layer_decoder, 2)

    def test_rope_scaling(self):
        self.assertEqual(self.model.rope_scaling, "none")
        with basalt.Model(os.path.join(MODELS, "tiny-gemma3scaled-f32.gguf"), self.rt) as g:
            self.assertTrue(g.rope_scaling.startswith("linear x8 on global layers"), g.rope_scaling)

    def test_tokenize_roundtrip(self):
        text = "Once upon a time, the stranger opened the wooden box."
        ids = self.model.tokenize(text)
        # the same ids as llama.cpp's tokenizer (tests/CMakeLists.txt: cli: tokenize-llama)
        self.assertEqual(ids[:6], [1, 472, 294, 373, 501, 360])
        self.assertEqual(self.model.detokenize(ids[1:]), text)
        self.assertEqual(self.model.detokenize(ids, unparse_special=True), "<s> " + text)  # as llama.cpp renders it
        self.assertEqual("".join(self.model.token_to_piece(t) for t in ids[1:]).lstrip(), text)
        self.assertEqual(self.model.tokenize(text, add_special=False), ids[1:])
        self.assertEqual(self.model.tokenize("", add_special=False), [])
        self.assertEqual(self.model.tokenize(""), [1])
        self.assertEqual(self.model.special_tokens()["bos"], 1)
        self.assertEqual(self.model.arch, "llama")

    def test_logits_access(self):
        with basalt.Session(self.rt, self.model) as s:
            prompt = self.model.tokenize(PROMPT)
            self.assertEqual(s.decode(prompt), 1)
            row = s.logits()
            view = s.logits_view()
            self.assertEqual(len(row), self.model.n_vocab)
            self.assertEqual(len(view), self.model.n_vocab)
            self.assertEqual(list(view), row)
            self.assertTrue(all(math.isfinite(x) for x in row))
            argmax = max(range(len(row)), key=lambda i: (row[i], -i))
            with basalt.SamplerChain(self.rt, "greedy") as greedy:
                self.assertEqual(greedy.sample(row), argmax)
                self.assertEqual(greedy.sample(view), argmax)
                self.assertEqual(s.sample(greedy), argmax)
            # every row of a batch: the last row equals the single-row decode above
            with basalt.Session(self.rt, self.model) as all_rows:
                self.assertEqual(all_rows.decode(prompt, logits="all"), len(prompt))
                self.assertEqual(all_rows.logits(len(prompt) - 1), row)
                self.assertNotEqual(all_rows.logits(0), row)
                with self.assertRaises(basalt.BasaltError):
                    all_rows.logits(len(prompt))
            self.assertEqual(s.seq_length(0), len(prompt))
            # truncation forgets the last positions: decoding the last token again gives the same logits
            s.seq_truncate(0, len(prompt) - 1)
            self.assertEqual(s.seq_length(0), len(prompt) - 1)
            s.decode([prompt[-1]])
            self.assertEqual(s.seq_length(0), len(prompt))
            self.assertLess(max(abs(a - b) for a, b in zip(s.logits(), row)), 1e-3)

    def test_generate_matches_the_command_line(self):
        # both go through the engine: byte-identical text
        for chain in ("greedy", "top_k:20;top_p:0.9;temp:0.8;dist:seed=5", "top_k:40;temp:0.7;dist:seed=1"):
            text = basalt.generate(LLAMA, PROMPT, 16, samplers=chain)
            self.assertTrue(text)
            self.assertEqual(text + "\n", cli_run(chain, 16), chain)
        greedy = self.tokens("greedy")
        self.assertEqual(len(greedy), 16)
        # greedy by hand: argmax of the logits, one token at a time
        with basalt.Session(self.rt, self.model) as s:
            s.decode(self.model.tokenize(PROMPT))
            manual = []
            for _ in range(16):
                row = s.logits()
                manual.append(max(range(len(row)), key=lambda i: (row[i], -i)))
                s.decode([manual[-1]])
        self.assertEqual(manual, greedy)
        # the old keywords of generate (Session's) still apply, now to its engine
        self.assertEqual(basalt.generate(self.model, PROMPT, 16, runtime=self.rt, n_ctx=64, n_batch=4, n_threads=1),
                         basalt.generate(LLAMA, PROMPT, 16))
        with basalt.Engine(self.rt, self.model) as engine:
            self.assertEqual(basalt.generate_tokens(self.model, PROMPT, 16, engine=engine), greedy)
            with basalt.Session(self.rt, self.model) as s:
                with self.assertRaisesRegex(TypeError, "no longer takes a Session"):
                    basalt.generate_tokens(self.model, PROMPT, 16, "greedy", self.rt, s)
        self.assertEqual(self.tokens("greedy", 0), [])

    def test_python_samplers_give_the_same_tokens_as_the_c_samplers(self):
        pairs = [("py_greedy", "greedy"),
                 ("py_top_k:8;temp:0.7;dist:seed=3", "top_k:8;temp:0.7;dist:seed=3"),
                 ("penalties:repeat=1.3,last_n=16;py_top_k:k=5;py_greedy", "penalties:repeat=1.3,last_n=16;top_k:5;greedy"),
                 ("top_p:0.9;py_top_k:3;dist:seed=11", "top_p:0.9;top_k:3;dist:seed=11")]
        for py, c in pairs:
            a, b = self.tokens(py, 24), self.tokens(c, 24)
            self.assertEqual(len(a), 24, py)
            self.assertEqual(a, b, py)
        # the seeded chain really samples: it departs from greedy
        self.assertNotEqual(self.tokens("py_top_k:8;temp:2;dist:seed=3", 24), self.tokens("greedy", 24))

    def test_stateful_python_sampler_accept_reset_clone(self):
        logits = [0.0, 3.0, 2.0, 1.0]
        chain = basalt.SamplerChain(self.rt, "py_no_repeat:n=2;py_greedy")
        self.assertEqual(chain.names, ["py_no_repeat", "py_greedy"])
        self.assertEqual([chain.sample(logits) for _ in range(2)], [1, 2])
        copy = chain.clone()
        self.assertEqual([chain.sample(logits) for _ in range(3)], [3, 1, 2])
        self.assertEqual([copy.sample(logits) for _ in range(3)], [3, 1, 2])
        chain.reset()
        self.assertEqual(chain.sample(logits), 1)
        chain.accept(2)  # the window now holds 1, 2
        self.assertEqual(chain.sample(logits), 3)
        copy.close()
        chain.close()
        tokens = self.tokens("py_no_repeat:n=1000;greedy", 24)
        self.assertEqual(len(set(tokens)), len(tokens))

    def test_session_device_and_parameters(self):
        prompt = self.model.tokenize(PROMPT)
        with basalt.Session(self.rt, self.model) as plain:
            plain.decode(prompt)
            expected = plain.logits()
        # device 0 and backend / KV parameters reach the plugins: same logits with the scalar kernels and f32 K/V
        # up to rounding, and the parameters are really passed (a wrong one fails naming it)
        with basalt.Session(self.rt, self.model, device=0, backend_params={"isa": "scalar"},
                            kv_params={"k_type": "f32", "v_type": "f32"}) as s:
            s.decode(prompt)
            got = s.logits()
            self.assertLess(max(abs(a - b) for a, b in zip(got, expected)), 1e-3)
        with self.assertRaises(basalt.BasaltError) as e:
            basalt.Session(self.rt, self.model, device=3)
        self.assertIn("device 3 does not exist (1 device)", str(e.exception))
        with self.assertRaises(basalt.BasaltError) as e:
            basalt.Session(self.rt, self.model, backend_params={"nope": 1})
        self.assertIn("unknown parameter 'nope'", str(e.exception))
        with self.assertRaises(basalt.BasaltError) as e:
            basalt.Session(self.rt, self.model, kv_params={"k_type": "q2_k"})
        self.assertIn("q2_k", str(e.exception))

    def test_errors_carry_status_and_message(self):
        with self.assertRaises(basalt.BasaltError) as e:
            basalt.SamplerChain(self.rt, "py_top_k:k=many;py_greedy")
        self.assertEqual(e.exception.status, _capi.ERR_INVALID_ARGUMENT)
        self.assertEqual(str(e.exception), "sampler 'py_top_k': parameter 'k' = 'many' is not an integer")
        with self.assertRaises(basalt.BasaltError) as e:
            basalt.SamplerChain(self.rt, "py_top_k:40")
        self.assertEqual(e.exception.status_name, "BASALT_ERR_FORMAT")
        self.assertIn("does not select a token", str(e.exception))
        with self.assertRaises(basalt.BasaltError) as e:
            basalt.SamplerChain(self.rt, "top_k:40;;dist")
        self.assertEqual(str(e.exception), "bad sampler chain: an empty entry in 'top_k:40;;dist'")
        with basalt.SamplerChain(self.rt, "py_boom") as boom:
            with self.assertRaises(basalt.BasaltError) as e:
                boom.sample([1.0, 2.0])
        self.assertEqual(e.exception.status, _capi.ERR_INTERNAL)
        self.assertEqual(str(e.exception), "sampler 'py_boom': RuntimeError: boom")
        with self.assertRaises(basalt.BasaltError) as e:
            self.rt.register_sampler("greedy", PyGreedy)
        self.assertEqual(e.exception.status, _capi.ERR_DUPLICATE)
        self.assertIn("cannot register sampler 'greedy': it is already provided by", str(e.exception))
        with self.assertRaises(basalt.BasaltError) as e:
            self.rt.register_sampler("py_top_k", PyTopK)
        self.assertIn("registered in process", str(e.exception))
        with self.assertRaises(basalt.BasaltError) as e:
            basalt.Model(os.path.join(MODELS, "no-such-model.gguf"))
        self.assertIn("no-such-model.gguf", str(e.exception))

    def test_callbacks_survive_garbage_collection(self):
        rt = basalt.Runtime(env_plugins=False)

        def register():
            class Last(basalt.Sampler):  # a class and callbacks no one else refers to
                flags = basalt.SAMPLER_SELECTS

                def apply(self, c):
                    c.selected = len(c) - 1

            rt.register_sampler("last", Last)

        register()
        gc.collect()
        with basalt.SamplerChain(rt, "top_k:3;last") as chain:
            gc.collect()
            self.assertEqual(chain.sample([5.0, 1.0, 4.0, 3.0, 2.0]), 3)
        rt.close()


if __name__ == "__main__":
    unittest.main()
