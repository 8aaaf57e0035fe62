"""T5 (encoder-decoder) against an independent float64 forward: ../shared/testdata/reference_forward.py's fwd_t5.

The golden files cover one source of 18 tokens; here sources up to 150 tokens reach every relative-position bucket
(distances past max_distance 128 included, where the buckets saturate), several sources go through one ragged
encoder batch and one decode batch, and the F16/Q8_0/Q4_0 files are compared on their dequantized weights. Then the
C API's other front ends: the engine (prompt as the source, or an explicit source), the CLI's `run` and `eval
--encoder-tokens`, and the tied-head rescaling of a model written without output.weight.
Run by CTest with Debian's python3 + numpy and the bindings from the build tree; BASALT_TEST_BACKENDS="cpu,vulkan"
checks each backend."""
import os
import subprocess
import sys
import tempfile
import unittest
import warnings

import numpy as np

import basalt

warnings.simplefilter("ignore", ResourceWarning)  # make_models.read_gguf leaves its files to the GC
MODELS = os.environ["BASALT_TEST_MODELS"]
TESTDATA = os.path.dirname(os.path.dirname(os.path.abspath(MODELS)))
sys.path.insert(0, TESTDATA)
sys.path.insert(0, os.path.join(os.environ["BASALT_SOURCE_DIR"], "tools", "train"))
import reference_forward as ref  # noqa: E402
from make_models import read_gguf  # noqa: E402

BACKENDS = os.environ.get("BASALT_TEST_BACKENDS", "cpu").split(",")
F32_KV = {"k_type": "f32", "v_type": "f32"}
T5 = os.path.join(MODELS, "tiny-t5-f32.gguf")


def rand_tokens(rng, n, vocab=512):
    return [int(t) for t in rng.integers(3, vocab, size=n - 1)] + [1]  # ends with </s>


def basalt_logits(session, sources, decoders, seqs):
    """Encodes the sources (one ragged batch) and decodes the decoder tokens (one ragged batch, interleaved);
    returns float64 logits per sequence [len(decoder), n_vocab]."""
    enc_t, enc_s = [], []
    for i in range(max(len(s) for s in sources)):
        for s, src in zip(seqs, sources):
            if i < len(src):
                enc_t.append(src[i])
                enc_s.append(s)
    session.encode(enc_t, seq_ids=enc_s)
    toks, pos, ids, owner = [], [], [], []
    for i in range(max(len(d) for d in decoders)):
        for k, (s, dec) in enumerate(zip(seqs, decoders)):
            if i < len(dec):
                toks.append(dec[i])
                pos.append(i)
                ids.append(s)
                owner.append(k)
    session.decode(toks, positions=pos, seq_ids=ids, logits="all")
    out = [[] for _ in sources]
    for r, k in enumerate(owner):
        out[k].append(session.logits(r))
    return [np.array(o, dtype=np.float64) for o in out]


class ReferenceTest(unittest.TestCase):
    def check_model(self, name, tol):
        kv, W = ref.load(os.path.join(MODELS, name + ".gguf"))
        rng = np.random.default_rng(7)
        sources = [rand_tokens(rng, n) for n in (150, 5, 40)]
        decoders = [[0] + rand_tokens(rng, n)[:-1] for n in (12, 3, 140)]  # 140: causal buckets past 128 too
        want = [ref.fwd_t5(kv, W, np.array(s), np.array(d)) for s, d in zip(sources, decoders)]
        for backend in BACKENDS:
            with self.subTest(model=name, backend=backend):
                with basalt.Runtime() as rt, basalt.Model(os.path.join(MODELS, name + ".gguf"), rt) as model, \
                        basalt.Session(rt, model, n_ctx=256, n_batch=64, n_seq_max=4, kv_params=F32_KV,
                                       backend=backend) as s:
                    got = basalt_logits(s, sources, decoders, [2, 0, 3])
                # Vulkan computes in F32 on the dequantized weights whatever their type: 1e-4 (measured <= 6e-6).
                limit = tol if backend == "cpu" else 1e-4
                for g, w in zip(got, want):
                    d = np.abs(g - w).max()
                    self.assertLess(d, limit, f"{name} on {backend}: max abs {d:.3g}")

    def test_f32_long_sources_every_bucket(self):
        self.check_model("tiny-t5-f32", 1e-4)

    def test_quantized_files_on_their_dequantized_weights(self):
        # The CPU quantizes activations to Q8_0 for Q8_0/Q4_0 weights and rounds them to F16 for F16 weights (as
        # llama.cpp does): the golden README's "act. effect" (0.0099 / 0.21 / 0.21 on 18 tokens); measured here on
        # sources up to 150 tokens 0.0077 / 0.28 / 0.23. Vulkan keeps activations in F32: the float64 answer.
        for variant, tol in (("f16", 0.03), ("q8_0", 0.4), ("q4_0", 0.4)):
            self.check_model("tiny-t5-" + variant, tol)


class FrontEndTest(unittest.TestCase):
    SOURCE = "Once upon a time, the stranger opened the wooden box."

    def test_engine_prompt_as_source_equals_the_reference_greedy(self):
        kv, W = ref.load(T5)
        with basalt.Runtime() as rt, basalt.Model(T5, rt) as model, \
                basalt.Engine(rt, model, kv_params=F32_KV) as engine:
            src = model.tokenize(self.SOURCE)
            self.assertEqual(src[-1], 1)  # T5's vocabulary appends </s>
            r = engine.submit(self.SOURCE, max_tokens=8, ignore_eog=True)
            r.wait()
            toks = r.tokens()
            stats = r.stats()
            self.assertEqual(stats["source_tokens"], len(src))
            self.assertGreater(stats["encode_ms"], 0)
            self.assertEqual(stats["prompt_tokens"], 1)  # the decoder start token
            # The float64 greedy continuation of the same source from the decoder start token.
            dec = [0]
            for _ in range(8):
                dec.append(int(np.argmax(ref.fwd_t5(kv, W, np.array(src), np.array(dec))[-1])))
            self.assertEqual(toks, dec[1:])
            # An explicit source with the prompt as the decoder's prefix: the same, one token further in.
            r2 = engine.submit(tokens=dec[:2], source=self.SOURCE, max_tokens=7, ignore_eog=True)
            r2.wait()
            self.assertEqual(r2.tokens(), dec[2:])
            # The CLI runs the same request (stopping at </s>, as a plain request does).
            r3 = engine.submit(self.SOURCE, max_tokens=8)
            r3.wait()
            out = subprocess.run([os.environ["BASALT_CLI"], "run", "-m", T5, "-p", self.SOURCE, "-n", "8",
                                  "--kv-type", "f32"], capture_output=True, check=True)
            self.assertEqual(out.stdout.decode("utf-8", "replace").rstrip("\n"), r3.text())

    def test_cli_eval_writes_the_decoder_logits(self):
        kv, W = ref.load(T5)
        src = [21, 396, 245, 104, 54, 52, 360, 4, 56, 168, 65, 426, 56, 248, 78, 228, 5, 1]
        dec = [0, 21, 396, 245, 104]
        want = ref.fwd_t5(kv, W, np.array(src), np.array(dec))
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "logits.f32")
            subprocess.run([os.environ["BASALT_CLI"], "eval", "-m", T5, "--encoder-tokens", ",".join(map(str, src)),
                            "--tokens", ",".join(map(str, dec)), "--logits", path, "--kv-type", "f32"],
                           capture_output=True, check=True)
            got = np.fromfile(path, dtype="<f4").reshape(len(dec), -1)
        self.assertLess(np.abs(got - want).max(), 1e-4)
        # Without the source, eval refuses naming what is missing.
        out = subprocess.run([os.environ["BASALT_CLI"], "eval", "-m", T5, "--tokens", "0,5"], capture_output=True)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn(b"--encoder-tokens", out.stderr)

    def test_tied_head_is_rescaled(self):
        # tiny-t5 with its output.weight removed: the head is the embedding matrix and T5 scales the decoder's output
        # by d_model^-1/2 before it.
        kv, W = ref.load(T5)
        del W["output.weight"]
        src, dec = [5, 9, 200, 1], [0, 7, 3]
        E = kv["t5.embedding_length"]
        W["output.weight"] = W["token_embd.weight"] / np.sqrt(E)  # the rescaling, folded into the reference's head
        want = ref.fwd_t5(kv, W, np.array(src), np.array(dec))
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "tied.gguf")
            write_without(T5, path, "output.weight")
            with basalt.Runtime() as rt, basalt.Model(path, rt) as model, \
                    basalt.Session(rt, model, n_ctx=32, kv_params=F32_KV) as s:
                got = basalt_logits(s, [src], [dec], [0])[0]
        self.assertLess(np.abs(got - want).max(), 1e-4)


def write_without(src, dst, drop):
    """Copies F32 GGUF file src to dst without tensor `drop` (the same metadata and other tensors)."""
    import make_models as mm
    _, kv, tensors = read_gguf(src)
    with open(src, "rb") as f:
        data = f.read()
    g = mm.GGUFWriter()
    for k, v in kv.items():
        vt, st = mm._kv_types(data, k)
        g.add(k, vt, v, st)
    for name, (ne, t, raw) in tensors.items():
        if name != drop:
            g.add_tensor(name, mm.dequantize(ne, t, raw), mm.GGML_F32)
    g.write(dst)


if __name__ == "__main__":
    unittest.main()
