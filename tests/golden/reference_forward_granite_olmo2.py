#!/usr/bin/python3
"""Independent float64 numpy forward of the tiny granite and olmo2 models (no llama.cpp code), in the style of
../../../shared/testdata/reference_forward.py (imported for its GGUF loader, norms, rope and attention):

    /usr/bin/python3 tests/golden/reference_forward_granite_olmo2.py [tiny-granite-f32 tiny-olmo2-q4_0 ...]

F32 files are compared with the `.ref` golden, F16/Q8_0/Q4_0 files (weights dequantized, exact float64 math) with
the `-deq.ref` golden. Prints max abs / rms differences; exits 1 when one exceeds 1e-4.
"""
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.normpath(os.path.join(HERE, "..", "..", "..", "shared", "testdata")))
import reference_forward as rf  # noqa: E402


def ffn(x, W, p):
    return (rf.silu(x @ W[p + "ffn_gate.weight"].T) * (x @ W[p + "ffn_up.weight"].T)) @ W[p + "ffn_down.weight"].T


def fwd_granite(kv, W, toks):
    """llama block with embedding_scale, residual_scale on both branches, attention.scale and logit_scale."""
    A = "granite"
    E, H, Hkv = kv[f"{A}.embedding_length"], kv[f"{A}.attention.head_count"], kv[f"{A}.attention.head_count_kv"]
    L, eps, base = kv[f"{A}.block_count"], kv[f"{A}.attention.layer_norm_rms_epsilon"], kv[f"{A}.rope.freq_base"]
    d = E // H
    T = len(toks)
    pos = np.arange(T)
    x = W["token_embd.weight"][toks] * kv[f"{A}.embedding_scale"]
    rs = kv[f"{A}.residual_scale"]
    for il in range(L):
        p = f"blk.{il}."
        h = rf.rms_norm(x, W[p + "attn_norm.weight"], eps)
        q = rf.rope((h @ W[p + "attn_q.weight"].T).reshape(T, H, d), pos, base, neox=False)
        k = rf.rope((h @ W[p + "attn_k.weight"].T).reshape(T, Hkv, d), pos, base, neox=False)
        v = (h @ W[p + "attn_v.weight"].T).reshape(T, Hkv, d)
        a = rf.attention(q, k, v, kv[f"{A}.attention.scale"], rf.causal(T)) @ W[p + "attn_output.weight"].T
        x = x + rs * a
        x = x + rs * ffn(rf.rms_norm(x, W[p + "ffn_norm.weight"], eps), W, p)
    out = W.get("output.weight", W["token_embd.weight"])
    return (rf.rms_norm(x, W["output_norm.weight"], eps) @ out.T) / kv[f"{A}.logit_scale"]


def fwd_olmo2(kv, W, toks):
    """post-norms only; q/k RMS norm over the whole projection, then rope NEOX; 1/sqrt(head_dim)."""
    A = "olmo2"
    E, H, Hkv = kv[f"{A}.embedding_length"], kv[f"{A}.attention.head_count"], kv[f"{A}.attention.head_count_kv"]
    L, eps, base = kv[f"{A}.block_count"], kv[f"{A}.attention.layer_norm_rms_epsilon"], kv[f"{A}.rope.freq_base"]
    d = E // H
    T = len(toks)
    pos = np.arange(T)
    x = W["token_embd.weight"][toks]
    for il in range(L):
        p = f"blk.{il}."
        q = rf.rms_norm(x @ W[p + "attn_q.weight"].T, W[p + "attn_q_norm.weight"], eps)
        k = rf.rms_norm(x @ W[p + "attn_k.weight"].T, W[p + "attn_k_norm.weight"], eps)
        q = rf.rope(q.reshape(T, H, d), pos, base, neox=True)
        k = rf.rope(k.reshape(T, Hkv, d), pos, base, neox=True)
        v = (x @ W[p + "attn_v.weight"].T).reshape(T, Hkv, d)
        a = rf.attention(q, k, v, 1.0 / np.sqrt(d), rf.causal(T)) @ W[p + "attn_output.weight"].T
        x = x + rf.rms_norm(a, W[p + "post_attention_norm.weight"], eps)
        x = x + rf.rms_norm(ffn(x, W, p), W[p + "post_ffw_norm.weight"], eps)
    return rf.rms_norm(x, W["output_norm.weight"], eps) @ W["output.weight"].T


FORWARD = {"granite": fwd_granite, "olmo2": fwd_olmo2}


def check(name):
    base, variant = name.rsplit("-", 1)
    gname = f"{base}-f32.ref" if variant == "f32" else f"{base}-{variant}-deq.ref"
    j = json.load(open(os.path.join(HERE, "logits", gname + ".json")))
    kv, W = rf.load(os.path.join(HERE, "models", name + ".gguf"))
    out = FORWARD[kv["general.architecture"]](kv, W, np.array(j["prompt_tokens"]))
    gold = np.fromfile(os.path.join(HERE, "logits", j["files"]["batch"]["file"]), dtype="<f4")
    gold = gold.reshape(j["n_prompt"], j["n_vocab"])
    diff = np.abs(out - gold)
    print("%-20s vs %-26s max|diff| %.3g  rms %.3g  (logit rms %.3g)" % (
        name, gname, diff.max(), np.sqrt(np.mean(diff ** 2)), np.sqrt(np.mean(gold ** 2))))
    return diff.max()


if __name__ == "__main__":
    names = sys.argv[1:] or [f"{m}-{v}" for m in ("tiny-granite", "tiny-olmo2") for v in ("f32", "f16", "q8_0", "q4_0")]
    worst = max(check(n) for n in names)
    sys.exit(0 if worst <= 1e-4 else 1)
