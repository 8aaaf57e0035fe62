#!/usr/bin/python3
"""Independent float64 numpy forward of the tiny embedding models made here (no llama.cpp code): nomic-bert, the
bert reranker, the Qwen3-Embedding-style qwen3 and gemma-embedding, in the style of
../../../shared/testdata/reference_forward.py (imported for its GGUF loader, norms, rope, attention and GELUs):

    /usr/bin/python3 tests/golden/reference_forward_embeddings.py [tiny-nomic-bert-f32 tiny-qwen3-embed-q8_0 ...]

Compares every row's embedding (`.embd.f32`) and the pooled result (`.pooled.f32`: a vector, or the reranker's
score) with llama.cpp's golden: of the same file for f32, of the dequantized file (`-q8_0-deq`) for q8_0 (exact
float64 math on the dequantized weights). Prints max abs differences; exits 1 when one exceeds 2e-3 (GELU models:
llama.cpp's fp16 table, emulated here with `gelu_table`).
"""
import json
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.normpath(os.path.join(HERE, "..", "..", "..", "shared", "testdata")))
import reference_forward as rf  # noqa: E402


def pool(x, kind):
    return {1: x.mean(0), 2: x[0], 3: x[-1]}[kind]


def fwd_nomic_bert(kv, W, toks):
    """bert's post-LN encoder: no position table, rope NEOX on q and k, fused qkv, SwiGLU FFN."""
    A = "nomic-bert"
    E, H, L = kv[f"{A}.embedding_length"], kv[f"{A}.attention.head_count"], kv[f"{A}.block_count"]
    eps, base = kv[f"{A}.attention.layer_norm_epsilon"], kv[f"{A}.rope.freq_base"]
    hd = E // H
    T = len(toks)
    pos = np.arange(T)
    x = W["token_embd.weight"][toks] + W["token_types.weight"][0]
    x = rf.layer_norm(x, W["token_embd_norm.weight"], W["token_embd_norm.bias"], eps)
    for il in range(L):
        p = f"blk.{il}."
        qkv = x @ W[p + "attn_qkv.weight"].T
        q, k, v = (qkv[:, i * E:(i + 1) * E].reshape(T, H, hd) for i in range(3))
        q, k = rf.rope(q, pos, base, True), rf.rope(k, pos, base, True)
        a = rf.attention(q, k, v, 1.0 / math.sqrt(hd), np.ones((T, T), bool)) @ W[p + "attn_output.weight"].T
        x = rf.layer_norm(a + x, W[p + "attn_output_norm.weight"], W[p + "attn_output_norm.bias"], eps)
        f = (rf.silu(x @ W[p + "ffn_gate.weight"].T) * (x @ W[p + "ffn_up.weight"].T)) @ W[p + "ffn_down.weight"].T
        x = rf.layer_norm(f + x, W[p + "layer_output_norm.weight"], W[p + "layer_output_norm.bias"], eps)
    return x, pool(x, kv[f"{A}.pooling_type"])


def fwd_bert_rerank(kv, W, toks):
    """tiny-bert's encoder, then the rank head on the first row: tanh(cls x + b), then cls.output."""
    x, _ = rf.fwd_bert(kv, W, toks, gelu="table")
    h = np.tanh(x[0] @ W["cls.weight"].T + W["cls.bias"])
    return x, h @ W["cls.output.weight"].T + W["cls.output.bias"]


def fwd_qwen3_embed(kv, W, toks):
    """qwen3 causally (the shared forward's layers), output_norm on every row, the last row pooled."""
    A = "qwen3"
    eps = kv[f"{A}.attention.layer_norm_rms_epsilon"]
    rows = {}
    # The shared forward returns logits; take its hidden rows by replacing the output matrix with the identity.
    W2 = dict(W)
    E = kv[f"{A}.embedding_length"]
    W2["token_embd.weight"] = W["token_embd.weight"]
    W2["output.weight"] = np.eye(E)
    rows = rf.fwd_llama_like(kv, W2, toks, A)
    assert eps > 0
    return rows, pool(rows, kv[f"{A}.pooling_type"])


def fwd_gemma_embedding(kv, W, toks, gelu="table"):
    """gemma3's block both ways (no causal mask), the symmetric window |i - j| <= n_swa / 2 on 5 of every 6 layers
    (base 1e4 there), output_norm, mean pooling, dense_2 then dense_3 (per row for pooling none, after the mean for
    the pooled vector, as llama.cpp orders them)."""
    A = "gemma-embedding"
    E, H, Hkv, L = (kv[f"{A}.embedding_length"], kv[f"{A}.attention.head_count"], kv[f"{A}.attention.head_count_kv"],
                    kv[f"{A}.block_count"])
    eps, base, hd = kv[f"{A}.attention.layer_norm_rms_epsilon"], kv[f"{A}.rope.freq_base"], kv[f"{A}.attention.key_length"]
    swa = kv[f"{A}.attention.sliding_window"]
    T = len(toks)
    pos = np.arange(T)
    x = W["token_embd.weight"][toks] * np.float64(np.float32(math.sqrt(E)))
    i, j = np.arange(T)[:, None], np.arange(T)[None, :]
    full, window = np.ones((T, T), bool), np.abs(i - j) <= swa // 2
    for il in range(L):
        p = f"blk.{il}."
        local = il % 6 < 5
        h = rf.rms_norm(x, W[p + "attn_norm.weight"], eps)
        q = rf.rms_norm((h @ W[p + "attn_q.weight"].T).reshape(T, H, hd), W[p + "attn_q_norm.weight"], eps)
        k = rf.rms_norm((h @ W[p + "attn_k.weight"].T).reshape(T, Hkv, hd), W[p + "attn_k_norm.weight"], eps)
        v = (h @ W[p + "attn_v.weight"].T).reshape(T, Hkv, hd)
        b = 10000.0 if local else base
        q, k = rf.rope(q, pos, b, True), rf.rope(k, pos, b, True)
        a = rf.attention(q, k, v, 1.0 / math.sqrt(hd), window if local else full) @ W[p + "attn_output.weight"].T
        x = x + rf.rms_norm(a, W[p + "post_attention_norm.weight"], eps)
        h = rf.rms_norm(x, W[p + "ffn_norm.weight"], eps)
        f = (rf.GELU[gelu](h @ W[p + "ffn_gate.weight"].T) * (h @ W[p + "ffn_up.weight"].T)) @ W[p + "ffn_down.weight"].T
        x = x + rf.rms_norm(f, W[p + "post_ffw_norm.weight"], eps)
    x = rf.rms_norm(x, W["output_norm.weight"], eps)

    def dense(y):
        return (y @ W["dense_2.weight"].T) @ W["dense_3.weight"].T

    return dense(x), dense(x.mean(0))


FORWARD = {"tiny-nomic-bert": fwd_nomic_bert, "tiny-bert-rerank": fwd_bert_rerank,
           "tiny-qwen3-embed": fwd_qwen3_embed, "tiny-gemma-embedding": fwd_gemma_embedding}


def check(name):
    base, variant = name.rsplit("-", 1)
    gname = name if variant == "f32" else name + "-deq"
    j = json.load(open(os.path.join(HERE, "logits", gname + ".json")))
    kv, W = rf.load(os.path.join(HERE, "models", name + ".gguf"))
    rows, pooled = FORWARD[base](kv, W, np.array(j["prompt_tokens"]))
    gold = np.fromfile(os.path.join(HERE, "logits", j["files"]["embd"]["file"]), dtype="<f4")
    gold = gold.reshape(j["n_prompt"], j["n_embd"])
    gold_pooled = np.fromfile(os.path.join(HERE, "logits", j["files"]["pooled"]["file"]), dtype="<f4")
    d_rows = np.abs(rows - gold).max()
    d_pooled = np.abs(np.atleast_1d(pooled) - gold_pooled).max()
    print("%-22s vs %-28s per-row max|diff| %.3g  pooled %.3g  (embedding rms %.3g)" % (
        name, gname, d_rows, d_pooled, np.sqrt(np.mean(gold ** 2))))
    return max(d_rows, d_pooled)


if __name__ == "__main__":
    names = sys.argv[1:] or [f"{m}-{v}" for m in FORWARD for v in ("f32", "q8_0")]
    worst = max(check(n) for n in names)
    sys.exit(0 if worst <= 2e-3 else 1)
