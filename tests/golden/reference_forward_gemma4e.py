#!/usr/bin/python3
"""Independent float64 numpy forward of the tiny gemma4 model in the small models' layout (tiny-gemma4e: per-layer
embeddings, KV shared between layers, per-layer FFN widths), no llama.cpp code, in the style of
reference_forward_qwen35moe.py (../../../shared/testdata/reference_forward.py imported for its GGUF loader, norms,
rope, attention and GELU):

    /usr/bin/python3 tests/golden/reference_forward_gemma4e.py [tiny-gemma4e-f32 tiny-gemma4e-q4_0 ...]

The math is transformers' Gemma 4 text model as llama.cpp's src/models/gemma4.cpp runs it:
  x0 = token_embd[t] * sqrt(E)
  inputs[l] = (rms_norm(per_layer_model_proj x0 / sqrt(E))[l] * per_layer_proj_norm + per_layer_token_embd[t][l]
               * sqrt(P)) / sqrt(2)            (the [P * L] rows split into L pieces of P)
  per layer: the dense gemma4 block (attention, FFN at the layer's width), then
  x += rms_norm(proj(gelu(inp_gate x) * inputs[l])) * post_norm, then x *= layer_output_scale;
  a layer among the last attention.shared_kv_layers computes no K/V: it attends (with its own queries, rope and
  mask) over the K/V of the last earlier layer of its kind.
F32 files are compared with the `.ref` golden, F16/Q8_0/Q4_0 files (weights dequantized) with `-deq.ref`; GELU is
llama.cpp's fp16 table (gelu_table; exact tanh-GELU reported for information, as the shared script does). Feature
checks: the same forward without per-layer embeddings, and with every layer computing its own K/V from the sharing
layers' source weights, must both be far from the golden (they print how far). Exits 1 when the table-GELU forward
is more than 0.01 from a golden (the shared tiny-gemma4's is 0.0096: the fp16-table emulation is not bit-exact).
"""
import json
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.normpath(os.path.join(HERE, "..", "..", "..", "shared", "testdata")))
import reference_forward as rf  # noqa: E402


def kv_sources(pattern, shared):
    """Per layer, the layer whose K/V it attends over: itself, or (the last `shared` layers) the last earlier layer of
    the same kind that computes its own."""
    L = len(pattern)
    first = L - shared
    src = list(range(L))
    for il in range(first, L):
        src[il] = max(j for j in range(first) if pattern[j] == pattern[il])
    return src


def fwd_gemma4e(kv, W, toks, gelu="table", ple=True, share=True):
    A = "gemma4"
    G = rf.GELU[gelu]
    E = kv[f"{A}.embedding_length"]
    L = kv[f"{A}.block_count"]
    H = kv[f"{A}.attention.head_count"]
    Hkv = kv[f"{A}.attention.head_count_kv"]
    P = kv[f"{A}.embedding_length_per_layer_input"]
    eps = kv[f"{A}.attention.layer_norm_rms_epsilon"]
    pattern = kv[f"{A}.attention.sliding_window_pattern"]
    swa = kv[f"{A}.attention.sliding_window"]
    hd_f, hd_s = kv[f"{A}.attention.key_length"], kv[f"{A}.attention.key_length_swa"]
    base_f, base_s = kv[f"{A}.rope.freq_base"], kv[f"{A}.rope.freq_base_swa"]
    ff = W["rope_freqs.weight"]
    cap = kv[f"{A}.final_logit_softcapping"]
    shared_src = kv_sources(pattern, kv[f"{A}.attention.shared_kv_layers"])
    src = shared_src if share else list(range(L))
    T = len(toks)
    pos = np.arange(T)
    x = W["token_embd.weight"][toks] * np.float64(np.float32(math.sqrt(E)))
    proj = (x @ W["per_layer_model_proj.weight"].T / math.sqrt(E)).reshape(T, L, P)
    proj = rf.rms_norm(proj, W["per_layer_proj_norm.weight"], eps)
    inputs = (proj + W["per_layer_token_embd.weight"][toks].reshape(T, L, P) * math.sqrt(P)) / math.sqrt(2.0)
    cache = {}
    for il in range(L):
        p = f"blk.{il}."
        is_swa = bool(pattern[il])
        hd = hd_s if is_swa else hd_f
        h = rf.rms_norm(x, W[p + "attn_norm.weight"], eps)
        q = rf.rms_norm((h @ W[p + "attn_q.weight"].T).reshape(T, H, hd), W[p + "attn_q_norm.weight"], eps)
        if is_swa:
            q, mask = rf.rope(q, pos, base_s, True), rf.causal(T, swa)
        else:                                                            # proportional rope: 1e30 factors = unrotated
            q, mask = rf.rope(q, pos, base_f, True, 1.0, ff), rf.causal(T)
        s = src[il]
        if s == il:
            ps = f"blk.{shared_src[il]}."   # (share=False: a sharing layer's own K/V from its source's weights)
            k = rf.rms_norm((h @ W[ps + "attn_k.weight"].T).reshape(T, Hkv, hd), W[ps + "attn_k_norm.weight"], eps)
            v = rf.rms_norm((h @ W[ps + "attn_v.weight"].T).reshape(T, Hkv, hd), 1.0, eps)   # V: no weight
            k = rf.rope(k, pos, base_s, True) if is_swa else rf.rope(k, pos, base_f, True, 1.0, ff)
            cache[il] = (k, v)
        k, v = cache[s]
        a = rf.attention(q, k, v, 1.0, mask) @ W[p + "attn_output.weight"].T  # attention scale 1.0
        x = x + rf.rms_norm(a, W[p + "post_attention_norm.weight"], eps)
        h = rf.rms_norm(x, W[p + "ffn_norm.weight"], eps)
        f = (G(h @ W[p + "ffn_gate.weight"].T) * (h @ W[p + "ffn_up.weight"].T)) @ W[p + "ffn_down.weight"].T
        x = x + rf.rms_norm(f, W[p + "post_ffw_norm.weight"], eps)
        if ple:
            g = G(x @ W[p + "inp_gate.weight"].T) * inputs[:, il, :]
            x = x + rf.rms_norm(g @ W[p + "proj.weight"].T, W[p + "post_norm.weight"], eps)
        x = x * W[p + "layer_output_scale.weight"][0]
    x = rf.rms_norm(x, W["output_norm.weight"], eps)
    logits = x @ W["token_embd.weight"].T
    return np.tanh(logits / cap) * cap


def check(name):
    base, variant = name.rsplit("-", 1)
    gname = f"{base}-f32.ref" if variant == "f32" else f"{base}-{variant}-deq.ref"
    j = json.load(open(os.path.join(HERE, "logits", gname + ".json")))
    kv, W = rf.load(os.path.join(HERE, "models", name + ".gguf"))
    gold = np.fromfile(os.path.join(HERE, "logits", j["files"]["batch"]["file"]), dtype="<f4")
    gold = gold.reshape(j["n_prompt"], j["n_vocab"])
    toks = np.array(j["prompt_tokens"])
    d = {}
    for label, kw in (("table", {}), ("exact", {"gelu": "exact"}), ("no-ple", {"ple": False}),
                      ("no-share", {"share": False})):
        d[label] = np.abs(fwd_gemma4e(kv, W, toks, **kw) - gold)
    print("%-20s vs %-26s max|diff| %.3g  rms %.3g  (logit rms %.3g; exact GELU %.3g; without per-layer embeddings "
          "%.3g; K/V computed by every layer %.3g)" % (
              name, gname, d["table"].max(), np.sqrt(np.mean(d["table"] ** 2)), np.sqrt(np.mean(gold ** 2)),
              d["exact"].max(), d["no-ple"].max(), d["no-share"].max()))
    return d["table"].max()


if __name__ == "__main__":
    names = sys.argv[1:] or [f"tiny-gemma4e-{v}" for v in ("f32", "f16", "q8_0", "q4_0")]
    worst = max(check(n) for n in names)
    sys.exit(0 if worst <= 0.01 else 1)
