#!/usr/bin/env python3
"""Tiny random-weight GGUF models of granite, olmo2, mistral3, qwen35moe, gemma4 (E2B's layout) and four embedding models (nomic-bert, a
bert reranker, a Qwen3-Embedding-style qwen3, gemma-embedding) for Basalt's golden tests.

Same generator as ../../../shared/testdata/make_models.py (imported, not copied: its GGUF writer, seeded
RNG, tokenizers, quantizers and llama-quantize --pure type rule); only the builders are new. Metadata keys
and tensor names are the ones llama.cpp's converter writes (conversion/granite.py, olmo.py, mistral3.py on top
of conversion/base.py and llama.py; qwen.py for qwen35moe), shapes the ones src/models/<arch>.cpp loads.

    /usr/bin/python3 tests/golden/make_tiny_models.py [--only tiny-granite,...] [--variants f32,...] [--out DIR]

Writes tests/golden/models/<name>-<variant>.gguf and MANIFEST.json (bytes + sha256). The goldens are then made
with golden-dump (README.md here).
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.path.normpath(os.path.join(HERE, "..", "..", "..", "shared", "testdata"))
sys.path.insert(0, SHARED)
import make_models as mm  # noqa: E402


def build_granite(h, seed, g):
    """granite (IBM Granite 3.x dense, conversion/granite.py = LlamaModel + four multipliers): llama block
    (RMSNorm, SwiGLU, GQA, rope NORM) with x = embedding_scale * token_embd; each block adds
    residual_scale * attn and residual_scale * ffn; attention scale `attention.scale` instead of
    1/sqrt(head_dim); logits / logit_scale. The converter drops head_dim (no key_length)."""
    A = "granite"
    b = mm.Builder(seed)
    E, V, L, F = h["n_embd"], h["n_vocab"], h["n_layer"], h["n_ff"]
    hd = E // h["n_head"]
    mm.common_hp(g, A, h)
    g.f32(f"{A}.rope.freq_base", h.get("rope_base", 10000.0))
    g.f32(f"{A}.attention.layer_norm_rms_epsilon", 1e-5)
    g.u32(f"{A}.vocab_size", V)
    g.u32(f"{A}.rope.dimension_count", hd)
    g.f32(f"{A}.attention.scale", h["attention_scale"])
    g.f32(f"{A}.embedding_scale", h["embedding_scale"])
    g.f32(f"{A}.residual_scale", h["residual_scale"])
    g.f32(f"{A}.logit_scale", h["logit_scale"])
    if "rope_finetuned" in h:  # llama.cpp's granite loaders: false turns rope off on every layer
        g.bool(f"{A}.rope.scaling.finetuned", h["rope_finetuned"])
    b.w("token_embd.weight", (V, E), h["std_embd"])
    for i in range(L):
        p = f"blk.{i}."
        b.norm(p + "attn_norm.weight", E)
        b.w(p + "attn_q.weight", (h["n_head"] * hd, E), h["std"])
        b.w(p + "attn_k.weight", (h["n_head_kv"] * hd, E), h["std"])
        b.w(p + "attn_v.weight", (h["n_head_kv"] * hd, E), h["std"])
        b.w(p + "attn_output.weight", (E, h["n_head"] * hd), h["std"])
        b.norm(p + "ffn_norm.weight", E)
        b.w(p + "ffn_gate.weight", (F, E), h["std"])
        b.w(p + "ffn_down.weight", (E, F), h["std"])
        b.w(p + "ffn_up.weight", (F, E), h["std"])
    b.norm("output_norm.weight", E)
    if not h.get("tied"):
        b.w("output.weight", (V, E), h["std_out"])
    mm.tok_spm(g, "llama", V)
    return A, b.tensors


def build_olmo2(h, seed, g):
    """olmo2 (OLMo 2, conversion/olmo.py Olmo2Model = TextModel): no pre-norms; x += post_attention_norm(attn(x)),
    x += post_ffw_norm(ffn(x)); q and k RMS-normalised over the whole projection (attn_q_norm [n_head*hd],
    attn_k_norm [n_head_kv*hd]) before rope NEOX; untied output (required). TextModel writes no
    rope.dimension_count (n_rot = head_dim)."""
    A = "olmo2"
    b = mm.Builder(seed)
    E, V, L, F = h["n_embd"], h["n_vocab"], h["n_layer"], h["n_ff"]
    hd = E // h["n_head"]
    mm.common_hp(g, A, h)
    g.f32(f"{A}.rope.freq_base", h.get("rope_base", 500000.0))
    g.f32(f"{A}.attention.layer_norm_rms_epsilon", 1e-6)
    b.w("token_embd.weight", (V, E), h["std_embd"])
    for i in range(L):
        p = f"blk.{i}."
        b.w(p + "attn_q.weight", (h["n_head"] * hd, E), h["std"])
        b.w(p + "attn_k.weight", (h["n_head_kv"] * hd, E), h["std"])
        b.w(p + "attn_v.weight", (h["n_head_kv"] * hd, E), h["std"])
        b.norm(p + "attn_q_norm.weight", h["n_head"] * hd, mean=h.get("qk_norm_mean", 1.0))
        b.norm(p + "attn_k_norm.weight", h["n_head_kv"] * hd, mean=h.get("qk_norm_mean", 1.0))
        b.w(p + "attn_output.weight", (E, h["n_head"] * hd), h["std"])
        b.norm(p + "post_attention_norm.weight", E)
        b.w(p + "ffn_gate.weight", (F, E), h["std"])
        b.w(p + "ffn_down.weight", (E, F), h["std"])
        b.w(p + "ffn_up.weight", (F, E), h["std"])
        b.norm(p + "post_ffw_norm.weight", E)
    b.norm("output_norm.weight", E)
    b.w("output.weight", (V, E), h["std_out"])
    mm.tok_spm(g, "llama", V)
    return A, b.tensors


def build_mistral3(h, seed, g):
    """mistral3 (Ministral 3 text model, conversion/mistral3.py Ministral3Model = LlamaModel): llama block with
    head_dim from key_length (q dim != n_embd), YaRN rope scaling (rope.scaling.type yarn, factor,
    original_context_length, beta_fast/slow as base.py writes them from rope_parameters, yarn_log_multiplier
    = mscale_all_dim) and the Llama-4 attention temperature (attention.temperature_scale = llama_4_scaling_beta):
    q *= 1 + beta * ln(1 + floor(pos / original_context_length)). Tied output."""
    A = "mistral3"
    b = mm.Builder(seed)
    E, V, L, F, hd = h["n_embd"], h["n_vocab"], h["n_layer"], h["n_ff"], h["head_dim"]
    mm.common_hp(g, A, h)
    y = h["yarn"]
    g.str(f"{A}.rope.scaling.type", "yarn")
    g.f32(f"{A}.rope.scaling.factor", y["factor"])
    g.u32(f"{A}.rope.scaling.original_context_length", y["orig_ctx"])
    g.f32(f"{A}.rope.scaling.yarn_beta_fast", y["beta_fast"])
    g.f32(f"{A}.rope.scaling.yarn_beta_slow", y["beta_slow"])
    g.f32(f"{A}.rope.freq_base", h["rope_base"])
    g.f32(f"{A}.attention.layer_norm_rms_epsilon", 1e-5)
    g.u32(f"{A}.attention.key_length", hd)
    g.u32(f"{A}.attention.value_length", hd)
    g.u32(f"{A}.vocab_size", V)
    g.u32(f"{A}.rope.dimension_count", hd)
    g.f32(f"{A}.rope.scaling.yarn_log_multiplier", y["mscale_all_dim"])
    g.f32(f"{A}.attention.temperature_scale", h["attn_temp_beta"])
    b.w("token_embd.weight", (V, E), h["std_embd"])
    for i in range(L):
        p = f"blk.{i}."
        b.norm(p + "attn_norm.weight", E)
        b.w(p + "attn_q.weight", (h["n_head"] * hd, E), h["std"])
        b.w(p + "attn_k.weight", (h["n_head_kv"] * hd, E), h["std"])
        b.w(p + "attn_v.weight", (h["n_head_kv"] * hd, E), h["std"])
        b.w(p + "attn_output.weight", (E, h["n_head"] * hd), h["std"])
        b.norm(p + "ffn_norm.weight", E)
        b.w(p + "ffn_gate.weight", (F, E), h["std"])
        b.w(p + "ffn_down.weight", (E, F), h["std"])
        b.w(p + "ffn_up.weight", (F, E), h["std"])
    b.norm("output_norm.weight", E)
    if not h.get("tied"):
        b.w("output.weight", (V, E), h["std_out"])
    mm.tok_spm(g, "llama", V)
    return A, b.tensors


def build_qwen35moe(h, seed, g):
    """qwen35moe (Qwen3.5 MoE, conversion/qwen.py Qwen3_5MoeTextModel on Qwen3NextModel + Qwen2MoeModel): qwen35's
    hybrid blocks (Gated DeltaNet layers, every 4th layer gated full attention with partial NEOX rope) with a
    routed MoE FFN (router ffn_gate_inp, softmax, top-k, weights renormalised) plus a shared SwiGLU expert of
    width expert_shared_feed_forward_length scaled per token by sigmoid(ffn_gate_inp_shexp . h). No
    feed_forward_length (Qwen3.5 MoE configs have no dense intermediate_size); tied output."""
    A = "qwen35moe"
    b = mm.Builder(seed)
    E, V, L, hd = h["n_embd"], h["n_vocab"], h["n_layer"], h["head_dim"]
    H, Hkv, X, Fe, Fs = h["n_head"], h["n_head_kv"], h["n_expert"], h["n_ff_exp"], h["n_ff_shexp"]
    nk, nv, dk, K = h["ssm_n_k_heads"], h["ssm_n_v_heads"], h["ssm_head_dim"], h["ssm_conv"]
    interval = 4
    g.u32(f"{A}.block_count", L)
    g.u32(f"{A}.context_length", h["n_ctx"])
    g.u32(f"{A}.embedding_length", E)
    g.u32(f"{A}.attention.head_count", H)
    g.u32(f"{A}.attention.head_count_kv", Hkv)
    g.f32(f"{A}.rope.freq_base", h["rope_base"])
    g.f32(f"{A}.attention.layer_norm_rms_epsilon", 1e-6)
    g.u32(f"{A}.expert_count", X)
    g.u32(f"{A}.expert_used_count", h["n_expert_used"])
    g.u32(f"{A}.attention.key_length", hd)
    g.u32(f"{A}.attention.value_length", hd)
    g.u32(f"{A}.expert_feed_forward_length", Fe)
    g.u32(f"{A}.expert_shared_feed_forward_length", Fs)
    g.u32(f"{A}.ssm.conv_kernel", K)
    g.u32(f"{A}.ssm.state_size", dk)
    g.u32(f"{A}.ssm.group_count", nk)
    g.u32(f"{A}.ssm.time_step_rank", nv)
    g.u32(f"{A}.ssm.inner_size", dk * nv)
    g.u32(f"{A}.full_attention_interval", interval)
    g.u32(f"{A}.rope.dimension_count", h["n_rot"])
    g.arr(f"{A}.rope.dimension_sections", mm.T_INT32, h["rope_sections"])
    b.w("token_embd.weight", (V, E), h["std_embd"])
    for i in range(L):
        p = f"blk.{i}."
        b.norm(p + "attn_norm.weight", E)
        if (i + 1) % interval == 0:
            b.w(p + "attn_q.weight", (H * hd * 2, E), h["std"])
            b.w(p + "attn_k.weight", (Hkv * hd, E), h["std"])
            b.w(p + "attn_v.weight", (Hkv * hd, E), h["std"])
            b.w(p + "attn_output.weight", (E, H * hd), h["std"])
            b.norm(p + "attn_q_norm.weight", hd)
            b.norm(p + "attn_k_norm.weight", hd)
        else:
            conv_dim = 2 * nk * dk + nv * dk
            b.w(p + "attn_qkv.weight", (conv_dim, E), h["std"])
            b.w(p + "attn_gate.weight", (nv * dk, E), h["std"])
            b.w(p + "ssm_conv1d.weight", (conv_dim, K), 0.5)
            b.bias(p + "ssm_dt.bias", nv, 0.5)
            # ssm_a = -exp(A_log) with A_log spread over log [1, 16] (the converter stores -exp(A_log))
            u = 0.5 + 0.5 * mm.np.tanh(mm.randn(seed, p + "A_log", (nv,)))
            b.tensors.append((p + "ssm_a", (-(1.0 + 15.0 * u)).astype(mm.np.float32)))
            b.w(p + "ssm_beta.weight", (nv, E), 0.3)
            b.w(p + "ssm_alpha.weight", (nv, E), 0.3)
            b.norm(p + "ssm_norm.weight", dk)
            b.w(p + "ssm_out.weight", (E, nv * dk), h["std"])
        b.norm(p + "post_attention_norm.weight", E)
        b.w(p + "ffn_gate_inp.weight", (X, E), h["std_router"])
        b.w(p + "ffn_gate_exps.weight", (X, Fe, E), h["std"])
        b.w(p + "ffn_down_exps.weight", (X, E, Fe), h["std"])
        b.w(p + "ffn_up_exps.weight", (X, Fe, E), h["std"])
        b.w(p + "ffn_gate_inp_shexp.weight", (E,), h["std_router"])
        b.w(p + "ffn_gate_shexp.weight", (Fs, E), h["std"])
        b.w(p + "ffn_down_shexp.weight", (E, Fs), h["std"])
        b.w(p + "ffn_up_shexp.weight", (Fs, E), h["std"])
    b.norm("output_norm.weight", E)
    mm.tok_bpe(g, "qwen2", V, ["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
               bos="<|endoftext|>", eos="<|im_end|>", add_bos=False)
    return A, b.tensors


def build_gemma4e(h, seed, g):
    """gemma4 in the layout of its small models (Gemma 4 E2B/E4B, conversion/gemma.py Gemma4Model): the dense gemma4
    block of the shared tiny-gemma4 (per-layer head sizes, q/k norms, weightless V norm, scale-1 attention,
    proportional rope on full layers, layer_output_scale, final soft-cap) plus
    - per-layer embeddings (embedding_length_per_layer_input = P): per_layer_token_embd [P*L rows per token],
      per_layer_model_proj [n_embd -> P*L], per_layer_proj_norm [P]; per layer inp_gate [n_embd -> P], proj
      [P -> n_embd], post_norm [n_embd];
    - KV sharing (attention.shared_kv_layers): the last layers have no attn_k/attn_v/attn_k_norm (the converter writes
      none for them) and read the K/V of the last earlier layer of their kind;
    - use_double_wide_mlp: feed_forward_length per layer, twice as wide on the sharing layers.
    Like E2B: attn_v on every layer (attention_k_eq_v false), one head_count_kv for both kinds."""
    A = "gemma4"
    b = mm.Builder(seed)
    E, V, L, F, P = h["n_embd"], h["n_vocab"], h["n_layer"], h["n_ff"], h["n_ple"]
    H, Hkv, hd_f, hd_s = h["n_head"], h["n_head_kv"], h["head_dim_full"], h["head_dim_swa"]
    pattern, shared = h["swa_pattern"], h["shared_kv"]
    assert len(pattern) == L
    first_shared = L - shared
    # llama.cpp's loader reuses layer first_shared - 2 (sliding) / - 1 (full); transformers the last of the same kind:
    # the same layers when the last caching layer is full and the one before it slides.
    assert not pattern[first_shared - 1] and pattern[first_shared - 2]
    g.u32(f"{A}.context_length", h["n_ctx"])
    g.u32(f"{A}.embedding_length", E)
    g.u32(f"{A}.block_count", L)
    g.arr(f"{A}.feed_forward_length", mm.T_INT32, [F if il < first_shared else 2 * F for il in range(L)])
    g.u32(f"{A}.attention.head_count", H)
    g.u32(f"{A}.attention.head_count_kv", Hkv)
    g.u32(f"{A}.attention.shared_kv_layers", shared)
    g.u32(f"{A}.embedding_length_per_layer_input", P)
    g.arr(f"{A}.attention.sliding_window_pattern", mm.T_BOOL, pattern)
    g.u32(f"{A}.attention.key_length", hd_f)
    g.u32(f"{A}.attention.value_length", hd_f)
    g.u32(f"{A}.attention.key_length_swa", hd_s)
    g.u32(f"{A}.attention.value_length_swa", hd_s)
    g.u32(f"{A}.rope.dimension_count", hd_f)
    g.u32(f"{A}.rope.dimension_count_swa", hd_s)
    g.f32(f"{A}.rope.freq_base", 1000000.0)
    g.f32(f"{A}.rope.freq_base_swa", 10000.0)
    g.f32(f"{A}.attention.layer_norm_rms_epsilon", 1e-6)
    g.u32(f"{A}.attention.sliding_window", h["swa"])
    g.f32(f"{A}.final_logit_softcapping", 30.0)
    n_rot_pairs = hd_f // 8                          # partial_rotary_factor 0.25 of the full layers' pairs
    b.tensors.append(("rope_freqs.weight",
                      mm.np.array([1.0] * n_rot_pairs + [1e30] * (hd_f // 2 - n_rot_pairs), dtype=mm.np.float32)))
    b.w("token_embd.weight", (V, E), h["std_embd"])
    b.w("per_layer_token_embd.weight", (V, P * L), h["std_ple"])
    b.w("per_layer_model_proj.weight", (P * L, E), h["std"])
    b.norm("per_layer_proj_norm.weight", P)
    for i in range(L):
        p = f"blk.{i}."
        hd = hd_s if pattern[i] else hd_f
        own_kv = i < first_shared
        b.norm(p + "attn_norm.weight", E)
        b.w(p + "attn_q.weight", (H * hd, E), h["std"])
        if own_kv:
            b.w(p + "attn_k.weight", (Hkv * hd, E), h["std"])
            b.w(p + "attn_v.weight", (Hkv * hd, E), h["std"])
        b.w(p + "attn_output.weight", (E, H * hd), h["std"])
        b.norm(p + "attn_q_norm.weight", hd, mean=h.get("qk_norm_mean", 1.0))
        if own_kv:
            b.norm(p + "attn_k_norm.weight", hd, mean=h.get("qk_norm_mean", 1.0))
        b.norm(p + "post_attention_norm.weight", E)
        f = F if own_kv else 2 * F
        b.norm(p + "ffn_norm.weight", E)
        b.w(p + "ffn_gate.weight", (f, E), h["std"])
        b.w(p + "ffn_up.weight", (f, E), h["std"])
        b.w(p + "ffn_down.weight", (E, f), h["std"])
        b.norm(p + "post_ffw_norm.weight", E)
        b.w(p + "inp_gate.weight", (P, E), h["std"])
        b.w(p + "proj.weight", (E, P), h["std"])
        b.norm(p + "post_norm.weight", E)
        b.tensors.append((p + "layer_output_scale.weight",
                          (0.75 + 0.25 * mm.np.tanh(mm.randn(seed, p + "layer_output_scale", (1,)))).astype(
                              mm.np.float32)))
    b.norm("output_norm.weight", E, mean=h.get("out_norm_mean", 1.0))
    toks, scores, types, merges = mm.gemma4_vocab(V)
    g.str("tokenizer.ggml.model", "gemma4")
    g.arr("tokenizer.ggml.tokens", mm.T_STRING, toks)
    g.arr("tokenizer.ggml.scores", mm.T_FLOAT32, scores)
    g.arr("tokenizer.ggml.token_type", mm.T_INT32, types)
    g.arr("tokenizer.ggml.merges", mm.T_STRING, merges)
    g.u32("tokenizer.ggml.bos_token_id", 2)
    g.u32("tokenizer.ggml.eos_token_id", 1)
    g.u32("tokenizer.ggml.unknown_token_id", 3)
    g.u32("tokenizer.ggml.padding_token_id", 0)
    g.bool("tokenizer.ggml.add_space_prefix", False)
    g.bool("tokenizer.ggml.add_bos_token", True)
    return A, b.tensors


def build_nomic_bert(h, seed, g):
    """nomic-bert (nomic-embed-text v1/v1.5, conversion/bert.py NomicBertModel on BertModel): bert's post-LN
    encoder without a position table: rope NEOX (rotary_emb_base, here 1000) on q and k; one fused attn_qkv
    without bias; attn_output without bias; SwiGLU FFN (ffn_gate, ffn_up, ffn_down, no biases); LayerNorms with
    bias; token_types (2 rows, row 0 added); mean pooling; WordPiece vocabulary."""
    A = "nomic-bert"
    b = mm.Builder(seed)
    E, V, L, F, H = h["n_embd"], h["n_vocab"], h["n_layer"], h["n_ff"], h["n_head"]
    g.u32(f"{A}.context_length", h["n_ctx"])
    g.u32(f"{A}.embedding_length", E)
    g.u32(f"{A}.feed_forward_length", F)
    g.u32(f"{A}.block_count", L)
    g.u32(f"{A}.attention.head_count", H)
    g.f32(f"{A}.attention.layer_norm_epsilon", 1e-12)
    g.f32(f"{A}.rope.freq_base", h["rope_base"])
    g.bool(f"{A}.attention.causal", False)
    g.u32(f"{A}.pooling_type", 1)
    b.w("token_embd.weight", (V, E), h["std_embd"])
    b.w("token_types.weight", (2, E), h["std_embd"])
    b.norm("token_embd_norm.weight", E)
    b.bias("token_embd_norm.bias", E, 0.1)
    for i in range(L):
        p = f"blk.{i}."
        b.w(p + "attn_qkv.weight", (3 * E, E), h["std"])
        b.w(p + "attn_output.weight", (E, E), h["std"])
        b.norm(p + "attn_output_norm.weight", E)
        b.bias(p + "attn_output_norm.bias", E, 0.1)
        b.w(p + "ffn_up.weight", (F, E), h["std"])
        b.w(p + "ffn_gate.weight", (F, E), h["std"])
        b.w(p + "ffn_down.weight", (E, F), h["std"])
        b.norm(p + "layer_output_norm.weight", E)
        b.bias(p + "layer_output_norm.bias", E, 0.1)
    _wpm(g, V)
    return A, b.tensors


def _wpm(g, V):
    toks, types = mm.wpm_vocab(V)
    g.u32("tokenizer.ggml.token_type_count", 2)
    g.str("tokenizer.ggml.model", "bert")
    g.str("tokenizer.ggml.pre", "default")
    g.arr("tokenizer.ggml.tokens", mm.T_STRING, toks)
    g.arr("tokenizer.ggml.token_type", mm.T_INT32, types)
    g.u32("tokenizer.ggml.unknown_token_id", 100)
    g.u32("tokenizer.ggml.seperator_token_id", 102)
    g.u32("tokenizer.ggml.padding_token_id", 0)
    g.u32("tokenizer.ggml.cls_token_id", 101)
    g.u32("tokenizer.ggml.mask_token_id", 103)


def build_bert_rerank(h, seed, g):
    """bert reranker (a cross-encoder as conversion/bert.py writes BertForSequenceClassification / roberta's
    classifier): tiny-bert's encoder plus cls.weight/bias [n_embd, n_embd] (then tanh) and cls.output.weight/bias
    [n_embd, 1]; pooling_type 4 (rank): the head reads each sequence's first row."""
    A, tensors = mm.build_bert(dict(h, pooling=4), seed, g)
    b = mm.Builder(seed)
    E = h["n_embd"]
    b.w("cls.weight", (E, E), h["std"])
    b.bias("cls.bias", E, 0.1)
    b.w("cls.output.weight", (1, E), h["std_out"])
    b.bias("cls.output.bias", 1, 0.1)
    return A, tensors + b.tensors


def build_qwen3_embed(h, seed, g):
    """Qwen3-Embedding: a qwen3 model (tiny-qwen3's builder) whose converter found sentence-transformers'
    lasttoken pooling (conversion/base.py _try_set_pooling_type): qwen3.pooling_type = 3 (last). llama.cpp runs it
    causally and takes each sequence's last row after output_norm."""
    A, tensors = mm.build_qwen3(h, seed, g)
    g.u32(f"{A}.pooling_type", 3)
    return A, tensors


def build_gemma_embedding(h, seed, g):
    """gemma-embedding (EmbeddingGemma, conversion/gemma.py EmbeddingGemma on Gemma3Model): gemma3's block
    (embeddings * sqrt(n_embd), pre/post RMS norms, q/k norms, GeGLU, rope NEOX global base 1e6 / sliding 1e4)
    with bidirectional attention, a symmetric sliding window (n_swa / 2 each side) on 5 of every 6 layers,
    output_norm, mean pooling, and (--sentence-transformers-dense-modules) dense_2 [n_embd -> d] and
    dense_3 [d -> n_embd] without biases, applied after pooling."""
    A = "gemma-embedding"
    b = mm.Builder(seed)
    E, V, L, F, hd, D = h["n_embd"], h["n_vocab"], h["n_layer"], h["n_ff"], h["head_dim"], h["dense"]
    mm.common_hp(g, A, h)
    g.u32(f"{A}.attention.key_length", hd)
    g.u32(f"{A}.attention.value_length", hd)
    g.f32(f"{A}.rope.freq_base", 1000000.0)
    g.f32(f"{A}.attention.layer_norm_rms_epsilon", 1e-6)
    g.u32(f"{A}.attention.sliding_window", h["swa"])
    g.bool(f"{A}.attention.causal", False)
    g.u32(f"{A}.dense_2_feat_in", E)
    g.u32(f"{A}.dense_2_feat_out", D)
    g.u32(f"{A}.dense_3_feat_in", D)
    g.u32(f"{A}.dense_3_feat_out", E)
    g.u32(f"{A}.pooling_type", 1)
    b.w("token_embd.weight", (V, E), h["std_embd"])
    for i in range(L):
        p = f"blk.{i}."
        b.norm(p + "attn_norm.weight", E)
        b.w(p + "attn_q.weight", (h["n_head"] * hd, E), h["std"])
        b.w(p + "attn_k.weight", (h["n_head_kv"] * hd, E), h["std"])
        b.w(p + "attn_v.weight", (h["n_head_kv"] * hd, E), h["std"])
        b.norm(p + "attn_q_norm.weight", hd, mean=h.get("qk_norm_mean", 1.0))
        b.norm(p + "attn_k_norm.weight", hd, mean=h.get("qk_norm_mean", 1.0))
        b.w(p + "attn_output.weight", (E, h["n_head"] * hd), h["std"])
        b.norm(p + "post_attention_norm.weight", E)
        b.norm(p + "ffn_norm.weight", E)
        b.w(p + "ffn_gate.weight", (F, E), h["std"])
        b.w(p + "ffn_up.weight", (F, E), h["std"])
        b.w(p + "ffn_down.weight", (E, F), h["std"])
        b.norm(p + "post_ffw_norm.weight", E)
    b.norm("output_norm.weight", E)
    b.w("dense_2.weight", (D, E), h["std_dense"])
    b.w("dense_3.weight", (E, D), h["std_dense"])
    mm.tok_spm(g, "gemma", V)
    return A, b.tensors


TINY = {
    # Granite 3.x multipliers in kind: embedding 12, residual 0.22, attention 1/head_dim (not 1/sqrt), logits / 8.
    "tiny-granite": (build_granite, dict(n_vocab=512, n_embd=64, n_layer=2, n_head=4, n_head_kv=2, n_ff=128,
                                         n_ctx=256, std=0.15, std_embd=0.1, std_out=2.0, attention_scale=0.0625,
                                         embedding_scale=12.0, residual_scale=0.22, logit_scale=8.0), 1242),
    # The same with granite.rope.scaling.finetuned = false: llama.cpp then rotates no layer (f32 only).
    "tiny-granite-norope": (build_granite, dict(n_vocab=512, n_embd=64, n_layer=2, n_head=4, n_head_kv=2, n_ff=128,
                                                n_ctx=256, std=0.15, std_embd=0.1, std_out=2.0,
                                                attention_scale=0.0625, embedding_scale=12.0, residual_scale=0.22,
                                                logit_scale=8.0, rope_finetuned=False), 1242),
    "tiny-olmo2": (build_olmo2, dict(n_vocab=512, n_embd=64, n_layer=2, n_head=4, n_head_kv=2, n_ff=128,
                                     n_ctx=256, std=0.1, std_embd=1.0, std_out=0.3, rope_base=500000.0), 1282),
    # Ministral 3 3B in kind (factor 16, beta 32/1, mscale_all_dim 1, temperature beta 0.1, base 1e9), with an
    # original context of 16 so the golden's positions 16..53 cross the temperature's first two steps.
    "tiny-mistral3": (build_mistral3, dict(n_vocab=512, n_embd=64, n_layer=2, n_head=4, n_head_kv=2, head_dim=32,
                                           n_ff=128, n_ctx=256, std=0.15, std_embd=0.3, tied=True,
                                           rope_base=1e9, attn_temp_beta=0.1,
                                           yarn=dict(factor=16.0, orig_ctx=16, beta_fast=32.0, beta_slow=1.0,
                                                     mscale_all_dim=1.0)), 1263),
    # Qwen3.5-35B-A3B in kind: hybrid 3:1 DeltaNet:attention, 8 experts top-2 of width 32, a shared expert of 64,
    # partial rope (8 of 32 dims), base 1e7; the tiny-qwen35 shape of the shared set otherwise.
    "tiny-qwen35moe": (build_qwen35moe, dict(n_vocab=512, n_embd=64, n_layer=4, n_head=4, n_head_kv=2, head_dim=32,
                                             n_rot=8, rope_sections=[2, 1, 1, 0], n_ctx=256, n_expert=8,
                                             n_expert_used=2, n_ff_exp=32, n_ff_shexp=64, ssm_n_k_heads=2,
                                             ssm_n_v_heads=2, ssm_head_dim=32, ssm_conv=4, std=0.2, std_embd=0.3,
                                             std_router=0.3, rope_base=1e7), 1135),
    # Gemma 4 E2B in kind (issue 32): 9 layers of 2 sliding + 1 full (E2B: 4 + 1), the last 3 sharing the K/V of
    # layers 4 (sliding) and 5 (full) (E2B: 20 of 35 sharing those of 13 and 14) with a double-wide MLP; per-layer
    # embeddings of 32 per layer (E2B: 256); one K/V head count, attn_v everywhere; the shared tiny-gemma4's sizes
    # otherwise (head 16 sliding / 32 full, window 8), with q/k norm weights of mean 0.5: scale-1 attention on unit
    # q/k with norms of 1 made llama.cpp's batch and one-token logits differ by 0.05 and its fp16 GELU table flip
    # greedy tokens against exact GELU (seed 1138: the first seed of 1136-1141 whose exact-GELU greedy run is the golden).
    "tiny-gemma4e": (build_gemma4e, dict(n_vocab=512, n_embd=64, n_layer=9, n_head=4, n_head_kv=2, head_dim_full=32,
                                         head_dim_swa=16, swa_pattern=[True, True, False] * 3, shared_kv=3, n_ple=32,
                                         n_ff=96, n_ctx=512, swa=8, std=0.1, std_embd=0.1, std_ple=0.15,
                                         out_norm_mean=3.0, qk_norm_mean=0.5), 1138),
    # Embedding models (README "Embedding goldens"): golden-dump's `embed` mode.
    "tiny-nomic-bert": (build_nomic_bert, dict(n_vocab=512, n_embd=64, n_layer=2, n_head=4, n_ff=128, n_ctx=128,
                                               std=0.2, std_embd=1.0, rope_base=1000.0), 1301),
    "tiny-bert-rerank": (build_bert_rerank, dict(n_vocab=512, n_embd=64, n_layer=2, n_head=4, n_ff=128, n_ctx=128,
                                                 std=0.2, std_embd=1.0, std_pos=0.5, std_out=0.5), 1302),
    "tiny-qwen3-embed": (build_qwen3_embed, dict(n_vocab=512, n_embd=64, n_layer=3, n_head=4, n_head_kv=2,
                                                 head_dim=32, n_ff=160, n_ctx=256, std=0.2, std_embd=1.0,
                                                 tied=True), 1303),
    # swa 8: sliding layers see 4 positions each side, so the 22-token prompt crosses the window.
    "tiny-gemma-embedding": (build_gemma_embedding, dict(n_vocab=512, n_embd=64, n_layer=6, n_head=4, n_head_kv=1,
                                                         head_dim=32, n_ff=128, n_ctx=512, swa=8, dense=96,
                                                         std=0.1, std_embd=0.1, std_dense=0.15,
                                                         qk_norm_mean=3.0), 1304),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(HERE, "models"))
    ap.add_argument("--only", default="")
    ap.add_argument("--variants", default="f32,f16,q8_0,q4_0")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    only = set(filter(None, args.only.split(",")))
    manifest = {}
    for name, (builder, h, seed) in TINY.items():
        if only and name not in only:
            continue
        for variant in args.variants.split(","):
            path = mm.make_model(name, builder, h, seed, variant, args.out)
            manifest[os.path.basename(path)] = {"bytes": os.path.getsize(path), "sha256": mm.sha256(path)}
            print("wrote %-40s %9d bytes" % (path, os.path.getsize(path)))
    mpath = os.path.join(args.out, "MANIFEST.json")
    if os.path.exists(mpath):
        old = json.load(open(mpath))
        old.update(manifest)
        manifest = old
    with open(mpath, "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
