#!/usr/bin/python3
"""Independent float64 numpy forward of the tiny qwen35moe model (no llama.cpp code), in the style of
reference_forward_granite_olmo2.py (../../../shared/testdata/reference_forward.py imported for its GGUF loader,
norms, rope and attention):

    /usr/bin/python3 tests/golden/reference_forward_qwen35moe.py [tiny-qwen35moe-f32 tiny-qwen35moe-q4_0 ...]

F32 files are compared with the `.ref` golden, F16/Q8_0/Q4_0 files (weights dequantized, exact float64 math) with
the `-deq.ref` golden. The Gated DeltaNet layers run the delta rule twice, token by token (the recurrent form)
and in chunks of 4 (the WY / UT-transform form Basalt's prefill kernel uses, docs/kv-cache.md), and the two must
agree to 1e-10. Prints max abs / rms differences; exits 1 when one exceeds 1e-4.
"""
import json
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.normpath(os.path.join(HERE, "..", "..", "..", "shared", "testdata")))
import reference_forward as rf  # noqa: E402


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def delta_recurrent(q, k, v, g, beta):
    """One head: S_t = g_t S_{t-1} + beta_t (v_t - g_t S_{t-1} k_t) k_t^T, o_t = S_t q_t. q, k [T, dk], v [T, dv],
    g (decay, in (0, 1)) and beta [T]."""
    T, dv, dk = len(q), v.shape[1], q.shape[1]
    S = np.zeros((dv, dk))
    o = np.zeros((T, dv))
    for t in range(T):
        S = g[t] * S
        S = S + beta[t] * np.outer(v[t] - S @ k[t], k[t])
        o[t] = S @ q[t]
    return o


def delta_chunked(q, k, v, g, beta, C=4):
    """The same rule in chunks of C tokens. Within a chunk with cumulative log-decay G_i (G_i = sum_{j<=i} log g_j):
    the new values u = (I + A)^-1 beta (v - e^G S k) with A_ij = beta_i e^(G_i - G_j) k_i.k_j (i > j) (the UT
    transform, a unit lower-triangular solve), outputs o_i = e^G_i S q_i + sum_{j<=i} e^(G_i - G_j) (q_i.k_j) u_j,
    and the state S' = e^G_C S + sum_j e^(G_C - G_j) u_j k_j^T."""
    T, dv, dk = len(q), v.shape[1], q.shape[1]
    S = np.zeros((dv, dk))
    o = np.zeros((T, dv))
    for s in range(0, T, C):
        e = min(T, s + C)
        qc, kc, vc, bc = q[s:e], k[s:e], v[s:e], beta[s:e]
        G = np.cumsum(np.log(g[s:e]))
        D = np.exp(G[:, None] - G[None, :])                      # e^(G_i - G_j)
        n = e - s
        A = np.tril(bc[:, None] * D * (kc @ kc.T), -1)
        rhs = bc[:, None] * (vc - np.exp(G)[:, None] * (kc @ S.T))
        u = np.linalg.solve(np.eye(n) + A, rhs)
        o[s:e] = np.exp(G)[:, None] * (qc @ S.T) + (np.tril(D * (qc @ kc.T))) @ u
        S = np.exp(G[-1]) * S + (np.exp(G[-1] - G)[:, None] * u).T @ kc
    return o


def fwd_qwen35moe(kv, W, toks, worst):
    A = "qwen35moe"
    L, H, Hkv = kv[f"{A}.block_count"], kv[f"{A}.attention.head_count"], kv[f"{A}.attention.head_count_kv"]
    eps, base, hd = kv[f"{A}.attention.layer_norm_rms_epsilon"], kv[f"{A}.rope.freq_base"], kv[f"{A}.attention.key_length"]
    n_rot, K, dk = kv[f"{A}.rope.dimension_count"], kv[f"{A}.ssm.conv_kernel"], kv[f"{A}.ssm.state_size"]
    nk, nv = kv[f"{A}.ssm.group_count"], kv[f"{A}.ssm.time_step_rank"]
    dv = kv[f"{A}.ssm.inner_size"] // nv
    interval = kv[f"{A}.full_attention_interval"]
    n_used = kv[f"{A}.expert_used_count"]
    T = len(toks)
    pos = np.arange(T)
    x = W["token_embd.weight"][toks]
    for il in range(L):
        p = f"blk.{il}."
        h = rf.rms_norm(x, W[p + "attn_norm.weight"], eps)
        if (il + 1) % interval == 0:                                     # gated full attention
            qg = (h @ W[p + "attn_q.weight"].T).reshape(T, H, 2 * hd)
            q = rf.rms_norm(qg[..., :hd], W[p + "attn_q_norm.weight"], eps)
            k = rf.rms_norm((h @ W[p + "attn_k.weight"].T).reshape(T, Hkv, hd), W[p + "attn_k_norm.weight"], eps)
            v = (h @ W[p + "attn_v.weight"].T).reshape(T, Hkv, hd)
            q = np.concatenate([rf.rope(q[..., :n_rot], pos, base, True), q[..., n_rot:]], -1)
            k = np.concatenate([rf.rope(k[..., :n_rot], pos, base, True), k[..., n_rot:]], -1)
            a = rf.attention(q, k, v, 1.0 / math.sqrt(hd), rf.causal(T)) * sigmoid(qg[..., hd:].reshape(T, H * hd))
            a = a @ W[p + "attn_output.weight"].T
        else:                                                            # Gated DeltaNet
            mixed = h @ W[p + "attn_qkv.weight"].T
            cw = W[p + "ssm_conv1d.weight"]
            padded = np.concatenate([np.zeros((K - 1, mixed.shape[1])), mixed], 0)
            conv = rf.silu(sum(padded[j:j + T] * cw[:, j] for j in range(K)))
            l2 = lambda t: t / np.sqrt(np.sum(t * t, -1, keepdims=True) + eps)  # noqa: E731
            q = l2(conv[:, :nk * dk].reshape(T, nk, dk)) / math.sqrt(dk)
            k = l2(conv[:, nk * dk:2 * nk * dk].reshape(T, nk, dk))
            v = conv[:, 2 * nk * dk:].reshape(T, nv, dv)
            beta = sigmoid(h @ W[p + "ssm_beta.weight"].T)
            decay = np.exp(np.logaddexp(0.0, h @ W[p + "ssm_alpha.weight"].T + W[p + "ssm_dt.bias"]) * W[p + "ssm_a"])
            o = np.zeros((T, nv, dv))
            for hv in range(nv):
                hk = hv % nk                                             # V heads tiled over K heads (GGUF order)
                o[:, hv] = delta_recurrent(q[:, hk], k[:, hk], v[:, hv], decay[:, hv], beta[:, hv])
                chunked = delta_chunked(q[:, hk], k[:, hk], v[:, hv], decay[:, hv], beta[:, hv])
                worst[0] = max(worst[0], np.abs(chunked - o[:, hv]).max())
            z = (h @ W[p + "attn_gate.weight"].T).reshape(T, nv, dv)
            a = (rf.rms_norm(o, W[p + "ssm_norm.weight"], eps) * rf.silu(z)).reshape(T, nv * dv) @ W[p + "ssm_out.weight"].T
        x = x + a
        h = rf.rms_norm(x, W[p + "post_attention_norm.weight"], eps)
        probs = rf.softmax(h @ W[p + "ffn_gate_inp.weight"].T)           # routed experts: softmax, top-k, renormalise
        f = np.zeros_like(h)
        for t in range(T):
            sel = np.argsort(-probs[t], kind="stable")[:n_used]
            for e, we in zip(sel, probs[t, sel] / probs[t, sel].sum()):
                u = rf.silu(h[t] @ W[p + "ffn_gate_exps.weight"][e].T) * (h[t] @ W[p + "ffn_up_exps.weight"][e].T)
                f[t] += we * (u @ W[p + "ffn_down_exps.weight"][e].T)
        shared = (rf.silu(h @ W[p + "ffn_gate_shexp.weight"].T) * (h @ W[p + "ffn_up_shexp.weight"].T)) @ \
            W[p + "ffn_down_shexp.weight"].T
        x = x + f + sigmoid(h @ W[p + "ffn_gate_inp_shexp.weight"].reshape(-1))[:, None] * shared
    x = rf.rms_norm(x, W["output_norm.weight"], eps)
    return x @ W.get("output.weight", W["token_embd.weight"]).T


def check(name, worst):
    base, variant = name.rsplit("-", 1)
    gname = f"{base}-f32.ref" if variant == "f32" else f"{base}-{variant}-deq.ref"
    j = json.load(open(os.path.join(HERE, "logits", gname + ".json")))
    kv, W = rf.load(os.path.join(HERE, "models", name + ".gguf"))
    out = fwd_qwen35moe(kv, W, np.array(j["prompt_tokens"]), worst)
    gold = np.fromfile(os.path.join(HERE, "logits", j["files"]["batch"]["file"]), dtype="<f4")
    gold = gold.reshape(j["n_prompt"], j["n_vocab"])
    diff = np.abs(out - gold)
    print("%-22s vs %-28s max|diff| %.3g  rms %.3g  (logit rms %.3g)" % (
        name, gname, diff.max(), np.sqrt(np.mean(diff ** 2)), np.sqrt(np.mean(gold ** 2))))
    return diff.max()


if __name__ == "__main__":
    names = sys.argv[1:] or [f"tiny-qwen35moe-{v}" for v in ("f32", "f16", "q8_0", "q4_0")]
    worst_chunked = [0.0]
    worst = max(check(n, worst_chunked) for n in names)
    print("delta rule: chunked (C=4) vs recurrent max|diff| %.3g" % worst_chunked[0])
    sys.exit(0 if worst <= 1e-4 and worst_chunked[0] <= 1e-10 else 1)
