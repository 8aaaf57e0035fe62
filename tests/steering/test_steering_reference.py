"""Activation steering against an independent float64 forward (../shared/testdata/reference_forward.py's helpers).

The forward below is the reference's math with one addition: after layer il's feed-forward residual add, the
steering vector of il (if any) is added to every row. Basalt's logits with the same vectors must match it within the
golden README's F32 tolerance, and a zero vector must change nothing bit for bit. Then llama.cpp-format files written
by an independent writer (tools/train/gguf_writer.py) go through the engine: a steered request batched with others
gives its solo output, a file that does not fit the model is refused naming the file and both figures, and the
prefix cache never hands K/V computed under one steering to a request under another.
Run by CTest with Debian's python3 + numpy and the bindings from the build tree."""
import math
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
from gguf_writer import GGUFWriter  # noqa: E402
from make_models import read_gguf  # noqa: E402

F32_KV = {"k_type": "f32", "v_type": "f32"}  # the F16 default would add ~1e-3 to the comparison
# BASALT_TEST_BACKENDS="cpu,vulkan" (CTest's Vulkan variant) checks the logits on each backend.
BACKENDS = os.environ.get("BASALT_TEST_BACKENDS", "cpu").split(",")
PROMPT = [1, 17, 42, 99, 7, 300, 12, 5, 250, 3, 64, 8]


def forward(kv, W, toks, add, hidden=None):
    """float64 logits [T, n_vocab] of every position with add[il] (n_embd) added after layer il; hidden (a dict),
    when given, receives each layer's output rows [T, n_embd] (the hook point, after the addition)."""
    A = kv["general.architecture"]
    T = len(toks)
    pos = np.arange(T)
    if A == "gpt2":
        E, L, H = kv["gpt2.embedding_length"], kv["gpt2.block_count"], kv["gpt2.attention.head_count"]
        eps, hd = kv["gpt2.attention.layer_norm_epsilon"], E // H
        x = W["token_embd.weight"][toks] + W["position_embd.weight"][pos]
        for il in range(L):
            p = f"blk.{il}."
            h = ref.layer_norm(x, W[p + "attn_norm.weight"], W[p + "attn_norm.bias"], eps)
            qkv = h @ W[p + "attn_qkv.weight"].T + W[p + "attn_qkv.bias"]
            q, k, v = (qkv[:, j * E:(j + 1) * E].reshape(T, H, hd) for j in range(3))
            x = x + ref.attention(q, k, v, 1.0 / math.sqrt(hd), ref.causal(T)) @ W[p + "attn_output.weight"].T
            x = x + W[p + "attn_output.bias"]
            h = ref.layer_norm(x, W[p + "ffn_norm.weight"], W[p + "ffn_norm.bias"], eps)
            up = ref.gelu_tanh(h @ W[p + "ffn_up.weight"].T + W[p + "ffn_up.bias"])
            x = x + up @ W[p + "ffn_down.weight"].T + W[p + "ffn_down.bias"]
            if il in add:
                x = x + add[il]
            if hidden is not None:
                hidden[il] = x.copy()
        x = ref.layer_norm(x, W["output_norm.weight"], W["output_norm.bias"], eps)
        return x @ W.get("output.weight", W["token_embd.weight"]).T
    E, L = kv[f"{A}.embedding_length"], kv[f"{A}.block_count"]
    H, Hkv = kv[f"{A}.attention.head_count"], kv[f"{A}.attention.head_count_kv"]
    eps = kv[f"{A}.attention.layer_norm_rms_epsilon"]
    hd = kv.get(f"{A}.attention.key_length", E // H)
    neox = A in ("qwen2", "gemma3")
    gemma = A == "gemma3"
    n_exp, k_used = kv.get(f"{A}.expert_count", 0), kv.get(f"{A}.expert_used_count", 0)
    x = W["token_embd.weight"][toks]
    if gemma:
        x = x * np.float64(np.float32(math.sqrt(E)))
    for il in range(L):
        p = f"blk.{il}."
        h = ref.rms_norm(x, W[p + "attn_norm.weight"], eps)
        q, k, v = (h @ W[p + f"attn_{n}.weight"].T for n in "qkv")
        if p + "attn_q.bias" in W:
            q, k, v = (t + W[p + f"attn_{n}.bias"] for t, n in zip((q, k, v), "qkv"))
        q, k, v = q.reshape(T, H, hd), k.reshape(T, Hkv, hd), v.reshape(T, Hkv, hd)
        base, mask = kv.get(f"{A}.rope.freq_base", 10000.0), ref.causal(T)
        if gemma:
            q = ref.rms_norm(q, W[p + "attn_q_norm.weight"], eps)
            k = ref.rms_norm(k, W[p + "attn_k_norm.weight"], eps)
            swa = kv.get(f"{A}.attention.sliding_window", 0)
            if swa > 0 and il % 6 < 5:  # every 6th layer global, as llama.cpp's default gemma3 pattern
                base, mask = kv.get(f"{A}.rope.freq_base_swa", 10000.0), ref.causal(T, swa)
        q, k = ref.rope(q, pos, base, neox), ref.rope(k, pos, base, neox)
        a = ref.attention(q, k, v, 1.0 / math.sqrt(hd), mask) @ W[p + "attn_output.weight"].T
        if gemma:
            a = ref.rms_norm(a, W[p + "post_attention_norm.weight"], eps)
        x = x + a
        h = ref.rms_norm(x, W[p + "ffn_norm.weight"], eps)
        if n_exp:
            f = np.zeros_like(h)
            probs = ref.softmax(h @ W[p + "ffn_gate_inp.weight"].T)
            for t in range(T):
                sel = np.argsort(-probs[t], kind="stable")[:k_used]
                for e, we in zip(sel, probs[t, sel] / probs[t, sel].sum()):
                    g = ref.silu(h[t] @ W[p + "ffn_gate_exps.weight"][e].T) * (h[t] @ W[p + "ffn_up_exps.weight"][e].T)
                    f[t] += we * (g @ W[p + "ffn_down_exps.weight"][e].T)
        else:
            act = ref.gelu_tanh if gemma else ref.silu
            f = (act(h @ W[p + "ffn_gate.weight"].T) * (h @ W[p + "ffn_up.weight"].T)) @ W[p + "ffn_down.weight"].T
        if gemma:
            f = ref.rms_norm(f, W[p + "post_ffw_norm.weight"], eps)
        x = x + f
        if il in add:
            x = x + add[il]
        if hidden is not None:
            hidden[il] = x.copy()
    x = ref.rms_norm(x, W["output_norm.weight"], eps)
    return x @ W.get("output.weight", W["token_embd.weight"]).T


def directions(n_embd, layers, seed, scale=1.0):
    rng = np.random.default_rng(seed)
    return {il: (scale * rng.standard_normal(n_embd)).astype(np.float32) for il in layers}


def write_control_vector(path, dirs, n_embd, layer_count=None, hint="tiny", arch="controlvector"):
    """A llama.cpp control-vector file: direction.N (F32 [n_embd]) for layer N, N >= 1."""
    w = GGUFWriter()
    w.add_string("general.architecture", arch)
    w.add_string("controlvector.model_hint", hint)
    w.add_i32("controlvector.layer_count", layer_count if layer_count is not None else len(dirs))
    for il, v in sorted(dirs.items()):
        w.add_tensor(f"direction.{il}", np.asarray(v, dtype=np.float32).reshape(n_embd), 0)  # F32
    w.write(path)


def basalt_logits(session, toks):
    session.decode(toks, seq_id=0, logits="all")
    return np.array([session.logits(r) for r in range(len(toks))], dtype=np.float64)


class ReferenceTest(unittest.TestCase):
    # F32 models of every decoder-only golden architecture; the tolerance is the README's F32 acceptance (1e-4
    # max abs), scaled by the logits' size (qwen2's and gemma3's are larger).
    def check_model(self, name, layers):
        kv, W = ref.load(os.path.join(MODELS, name + ".gguf"))
        with basalt.Runtime() as rt, basalt.Model(os.path.join(MODELS, name + ".gguf"), rt) as model:
            add = {il: v.astype(np.float64) for il, v in directions(model.n_embd, layers, 7).items()}
            want = forward(kv, W, PROMPT, add)
            plain = forward(kv, W, PROMPT, {})
            for backend in BACKENDS:
                with basalt.Session(rt, model, n_ctx=64, kv_params=F32_KV, backend=backend) as s:
                    s.set_steering(0, {il: v.tolist() for il, v in add.items()})
                    got = basalt_logits(s, PROMPT)
                scale = max(1.0, float(np.sqrt(np.mean(want ** 2))))
                err = float(np.abs(got - want).max())
                effect = float(np.abs(want - plain).max())
                print(f"{name} ({backend}): steered at {sorted(layers)}: max |basalt - float64| {err:.3g}, "
                      f"effect {effect:.3g}")
                self.assertLess(err, 1e-4 * scale, f"{name} on {backend}")
                self.assertGreater(effect, 1000 * err, f"{name}: the vector must change the logits")

    def test_llama(self):
        self.check_model("tiny-llama-f32", [1, 3])

    def test_qwen2(self):
        self.check_model("tiny-qwen2-f32", [0, 2])

    def test_gemma3(self):
        self.check_model("tiny-gemma3-f32", [2, 5])

    def test_moe(self):
        self.check_model("tiny-llama-moe-f32", [1])

    def test_gpt2(self):
        self.check_model("tiny-gpt2-f32", [1, 2])

    def test_zero_vector_and_unsteered_rows_are_bit_identical(self):
        for backend in BACKENDS:
            self.check_bits(backend)

    def check_bits(self, backend):
        with basalt.Runtime() as rt, basalt.Model(os.path.join(MODELS, "tiny-llama-f32.gguf"), rt) as model:
            with basalt.Session(rt, model, n_ctx=64, n_seq_max=2, backend=backend) as s:
                plain = basalt_logits(s, PROMPT)
                s.seq_drop(0)
                s.set_steering(0, {1: [0.0] * model.n_embd, 2: [0.0] * model.n_embd})
                zero = basalt_logits(s, PROMPT)
                self.assertEqual(zero.tobytes(), plain.tobytes())
                # Sequence 1 steered, sequence 0 not, in one batch: sequence 0's rows are today's bits.
                s.seq_drop(0)
                s.set_steering(0, None)
                s.set_steering(1, {il: v.tolist() for il, v in directions(model.n_embd, [1, 2], 3).items()})
                n = len(PROMPT)
                s.decode(PROMPT + PROMPT, positions=list(range(n)) * 2, seq_ids=[0] * n + [1] * n, logits="all")
                mixed = np.array([s.logits(r) for r in range(n)], dtype=np.float64)
                other = np.array([s.logits(r) for r in range(n, 2 * n)], dtype=np.float64)
                self.assertEqual(mixed.tobytes(), plain.tobytes())
                self.assertGreater(float(np.abs(other - plain).max()), 1e-2)


class EngineTest(unittest.TestCase):
    MODEL = os.path.join(MODELS, "tiny-llama-f32.gguf")

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.a = os.path.join(self.dir.name, "a.gguf")
        self.b = os.path.join(self.dir.name, "b.gguf")
        self.da = directions(64, [1, 2, 3], 11, 2.0)
        self.db = directions(64, [2], 12, 3.0)
        write_control_vector(self.a, self.da, 64)
        write_control_vector(self.b, self.db, 64)

    def tearDown(self):
        self.dir.cleanup()

    def test_file_scale_and_range_equal_the_reference(self):
        kv, W = ref.load(self.MODEL)
        # a at 0.5 on layers 2-3, plus b at scale 1: the vectors sum.
        add = {2: 0.5 * self.da[2].astype(np.float64) + self.db[2], 3: 0.5 * self.da[3].astype(np.float64)}
        want = forward(kv, W, PROMPT, add)[-1]
        with basalt.Runtime() as rt, basalt.Model(self.MODEL, rt) as model, basalt.Engine(rt, model) as engine:
            r = engine.submit(tokens=PROMPT, max_tokens=1, steer=[self.a + ":0.5:2-3", self.b])
            token = r.tokens()[0]
        self.assertEqual(token, int(np.argmax(want)))

    def test_batched_requests_equal_their_solo_runs(self):
        specs = [self.a, self.b + ":1.5", None, [self.a + ":-1", self.b + ":0.5:2-2"]]
        prompts = [PROMPT, PROMPT[:7], PROMPT[2:], PROMPT]
        with basalt.Runtime() as rt, basalt.Model(self.MODEL, rt) as model:
            solo = []
            for spec, prompt in zip(specs, prompts):
                with basalt.Engine(rt, model, prefix_cache=False) as engine:
                    solo.append(engine.submit(tokens=prompt, max_tokens=10, steer=spec).tokens())
            with basalt.Engine(rt, model, parallel=4, seq_max=4) as engine:
                reqs = [engine.submit(tokens=p, max_tokens=10, steer=s) for s, p in zip(specs, prompts)]
                together = [r.tokens() for r in reqs]
        self.assertEqual(together, solo)

    def test_speculative_verifies_against_the_steered_target(self):
        # The draft stays unsteered; greedy verification by the steered target must give the steered greedy text.
        with tempfile.TemporaryDirectory() as d, basalt.Runtime() as rt, basalt.Model("target", rt) as target:
            vec = os.path.join(d, "t.gguf")
            write_control_vector(vec, directions(target.n_embd, [1, 2, 3], 5, 0.5), target.n_embd)
            with basalt.Model("draft", rt) as draft:
                with basalt.Engine(rt, target) as e:
                    plain = e.submit("The cat", max_tokens=24, steer=vec + ":2").tokens()
                    unsteered = e.submit("The cat", max_tokens=24).tokens()
                with basalt.Engine(rt, target, second_model=draft) as e:
                    spec = e.submit("The cat", max_tokens=24, decoder="speculative:k=4", steer=vec + ":2").tokens()
        self.assertEqual(spec, plain)
        self.assertNotEqual(plain, unsteered)

    def test_zero_scale_changes_nothing(self):
        with basalt.Runtime() as rt, basalt.Model(self.MODEL, rt) as model, basalt.Engine(rt, model) as engine:
            plain = engine.submit(tokens=PROMPT, max_tokens=12).tokens()
            zero = engine.submit(tokens=PROMPT, max_tokens=12, steer=self.a + ":0").tokens()
        self.assertEqual(zero, plain)

    def test_prefix_cache_never_crosses_steering(self):
        prompt = list(range(1, 70))  # four full blocks of 16
        with basalt.Runtime() as rt, basalt.Model(self.MODEL, rt) as model:
            with basalt.Engine(rt, model, ctx=256) as engine:
                steered = engine.submit(tokens=prompt, max_tokens=4, steer=self.a)
                steered.tokens()
                plain = engine.submit(tokens=prompt, max_tokens=4)
                plain.tokens()
                again = engine.submit(tokens=prompt, max_tokens=4, steer=self.a)
                again_tokens = again.tokens()
                other = engine.submit(tokens=prompt, max_tokens=4, steer=self.a + ":2")
                other.tokens()
                self.assertEqual(plain.stats()["cached_tokens"], 0)
                self.assertEqual(again.stats()["cached_tokens"], 64)  # same steering: reused
                self.assertEqual(again_tokens, steered.tokens())
                self.assertEqual(other.stats()["cached_tokens"], 0)

    def test_bad_files_are_refused_by_name(self):
        wide = os.path.join(self.dir.name, "wide.gguf")
        write_control_vector(wide, directions(128, [1], 1), 128)
        deep = os.path.join(self.dir.name, "deep.gguf")
        write_control_vector(deep, directions(64, [1, 2, 3, 4], 1), 64, layer_count=3)
        counted = os.path.join(self.dir.name, "counted.gguf")
        write_control_vector(counted, directions(64, [1], 1), 64, layer_count=9)
        model_file = os.path.join(MODELS, "tiny-gpt2-f32.gguf")
        cases = [(wide, r"wide\.gguf: direction\.1 has 128 values, the model's n_embd is 64"),
                 (deep, r"deep\.gguf: direction\.4 is past the model's 4 layers"),
                 (counted, r"counted\.gguf: controlvector\.layer_count 9 does not fit the model's 4 layers"),
                 (model_file, r"tiny-gpt2-f32\.gguf: general\.architecture is 'gpt2', not 'controlvector'"),
                 (os.path.join(self.dir.name, "missing.gguf"), r"cannot open control vector '.*missing\.gguf'")]
        with basalt.Runtime() as rt, basalt.Model(self.MODEL, rt) as model, basalt.Engine(rt, model) as engine:
            for path, message in cases:
                with self.assertRaisesRegex(basalt.BasaltError, message):
                    engine.submit(tokens=PROMPT, max_tokens=1, steer=path)
            with self.assertRaisesRegex(basalt.BasaltError, "layers '3-1' is not a range"):
                engine.submit(tokens=PROMPT, max_tokens=1, steer=self.a + ":1:3-1")


class BuilderTest(unittest.TestCase):
    """basalt steer build: OBSERVE rows averaged over each prompt's tokens, mean-diff and pca, against the float64
    residual stream; the file it writes loads back through --steer."""
    MODEL = os.path.join(MODELS, "tiny-llama-f32.gguf")
    POS = ["the cat sat on the mat", "a happy dog runs in the park", "sun and light and joy"]
    NEG = ["rain fell on the grey town", "the old man was tired", "cold wind at night"]

    def build(self, method, out, layers="1-3"):
        d = os.path.dirname(out)
        pos, neg = os.path.join(d, "pos.txt"), os.path.join(d, "neg.txt")
        with open(pos, "w") as f:
            f.write("\n".join(self.POS) + "\n")
        with open(neg, "w") as f:  # fortune style
            f.write("\n%\n".join(self.NEG) + "\n%\n")
        cmd = [os.environ["BASALT_CLI"], "steer", "build", "-m", self.MODEL, "--positive", pos, "--negative", neg,
               "--layers", layers, "--method", method, "--kv-type", "f32", "-o", out]
        done = subprocess.run(cmd, capture_output=True, text=True)
        self.assertEqual(done.returncode, 0, done.stderr)
        _, kv, tensors = read_gguf(out)
        self.assertEqual(kv["general.architecture"], "controlvector")
        self.assertEqual(kv["controlvector.layer_count"], 3)
        return {int(n.split(".")[1]): np.frombuffer(raw, dtype="<f4").astype(np.float64)
                for n, (ne, t, raw) in tensors.items()}

    def reference_means(self):
        kv, W = ref.load(self.MODEL)
        with basalt.Runtime() as rt, basalt.Model(self.MODEL, rt) as model:
            means = []
            for texts in (self.POS, self.NEG):
                rows = []
                for t in texts:
                    hidden = {}
                    forward(kv, W, model.tokenize(t), {}, hidden)
                    rows.append({il: h.mean(axis=0) for il, h in hidden.items()})
                means.append(rows)
        return means

    def test_mean_diff_and_pca_equal_the_reference_and_load_back(self):
        with tempfile.TemporaryDirectory() as d:
            md = self.build("mean-diff", os.path.join(d, "md.gguf"))
            pca = self.build("pca", os.path.join(d, "pca.gguf"), "2-3")
            pos, neg = self.reference_means()
            self.assertEqual(sorted(md), [1, 2, 3])
            self.assertEqual(sorted(pca), [2, 3])
            for il in (1, 2, 3):
                want = np.mean([m[il] for m in pos], axis=0) - np.mean([m[il] for m in neg], axis=0)
                err = float(np.abs(md[il] - want).max())
                self.assertLess(err, 1e-4 * max(1.0, float(np.abs(want).max())), f"mean-diff layer {il}")
            for il in (2, 3):
                diffs = np.array([p[il] - n[il] for p, n in zip(pos, neg)])
                top = np.linalg.svd(diffs, full_matrices=False)[2][0]
                if (diffs @ top).sum() < 0:
                    top = -top
                self.assertAlmostEqual(float(np.linalg.norm(pca[il])), 1.0, places=5)
                self.assertGreater(float(pca[il] @ top), 0.99999, f"pca layer {il}")
            with basalt.Runtime() as rt, basalt.Model(self.MODEL, rt) as model, basalt.Engine(rt, model) as e:
                plain = e.submit(tokens=PROMPT, max_tokens=6).tokens()
                steered = e.submit(tokens=PROMPT, max_tokens=6, steer=os.path.join(d, "md.gguf") + ":4").tokens()
                self.assertEqual(len(steered), 6)
                self.assertNotEqual(steered, plain)


if __name__ == "__main__":
    unittest.main()
