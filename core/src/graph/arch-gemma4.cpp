// gemma4 (dense): the gemma block (embeddings times sqrt(n_embd), post-attention and post-FFN norms, GeGLU) with
// per-layer attention shapes: sliding-window layers have their own head size, rotated dims and rope base, full
// layers rotate with the file's frequency factors ("proportional" rope: a factor of 1e30 leaves a pair unrotated).
// Q and K get RMS norms with weights, V a weightless RMS norm; a layer without attn_v uses its raw K projection as V.
// Scores are not scaled (scale 1). Each layer's output is multiplied by its layer_output_scale.
#include <cmath>

#include "graph/arch.hpp"
#include "support/error.hpp"

namespace basalt {

namespace {

int32_t project(ForwardContext& c, int32_t h, const std::string& w, int64_t n_out, const std::string& name) {
    return c.g.op(BASALT_OP_MATMUL, name, BASALT_DTYPE_F32, {n_out, c.n_tokens},
                  {c.weight(w, {c.hp.n_embd, n_out}), h});
}

// Layer il's self-attention on the normed input h [n_embd, T]: out [n_embd, T].
int32_t gemma4_attention(ForwardContext& c, uint32_t il, int32_t h) {
    const auto& hp = c.hp;
    const std::string p = "blk." + std::to_string(il) + ".";
    const int64_t T = c.n_tokens, hd = hp.head_dim_k_at(il), nh = hp.n_head_at(il), nkv = hp.n_head_kv_at(il);
    if (hp.head_dim_v_at(il) != hd) {
        fail(BASALT_ERR_FORMAT, "{}: gemma4 needs equal key and value head sizes (layer {}: {} and {})",
             c.weights.source(), il, hd, hp.head_dim_v_at(il));
    }
    const bool sliding = hp.layer_sliding[il];
    const float base = sliding ? hp.rope_scaling.freq_base_swa : hp.rope_freq_base;
    const uint32_t n_rot = hp.n_rot_at(il);

    int32_t q = project(c, h, p + "attn_q.weight", nh * hd, p + "q");
    q = c.g.op(BASALT_OP_COPY, p + "q.heads", BASALT_DTYPE_F32, {hd, nh, T}, {q});
    q = rms_norm(c, q, p + "attn_q_norm.weight", p + "q.normed");
    // Full layers: the file's frequency factors (rope_scaled); sliding-window layers: plain rope at their base.
    q = rope(c, q, nh, 1, base, !sliding, p + "q.rope", n_rot);

    const int32_t k_proj = project(c, h, p + "attn_k.weight", nkv * hd, p + "k");
    const int32_t v_proj = c.has_weight(p + "attn_v.weight") ? project(c, h, p + "attn_v.weight", nkv * hd, p + "v")
                                                             : k_proj;  // attention_k_eq_v: V is K's projection
    int32_t k = c.g.op(BASALT_OP_COPY, p + "k.heads", BASALT_DTYPE_F32, {hd, nkv, T}, {k_proj});
    k = rms_norm(c, k, p + "attn_k_norm.weight", p + "k.normed");
    k = rope(c, k, nkv, 1, base, !sliding, p + "k.rope", n_rot);
    int32_t v = c.g.op(BASALT_OP_COPY, p + "v.heads", BASALT_DTYPE_F32, {hd, nkv, T}, {v_proj});
    v = c.g.op(BASALT_OP_RMS_NORM, p + "v.normed", BASALT_DTYPE_F32, {hd, nkv, T}, {v},
               {{op::rms_norm::eps, hp.norm_eps}});

    const int32_t k_rows = c.g.op(BASALT_OP_COPY, p + "k.rows", BASALT_DTYPE_F32, {nkv * hd, T}, {k});
    const int32_t v_rows = c.g.op(BASALT_OP_COPY, p + "v.rows", BASALT_DTYPE_F32, {nkv * hd, T}, {v});
    const bool windowed = il < c.window_storage.size() && c.window_storage[il] != 0;
    write_kv(c, il, k_rows, v_rows, windowed ? c.kv_slots_window : c.kv_slots, p);
    const int32_t window = sliding ? static_cast<int32_t>(hp.sliding_window) : 0;
    const int32_t att = attend(c, il, q, windowed ? c.attn_lists_window : c.attn_lists, nh * hd, window, 1.0f, 0.0f, p);
    return c.g.op(BASALT_OP_MATMUL, p + "attn_out", BASALT_DTYPE_F32, {hp.n_embd, T},
                  {c.weight(p + "attn_output.weight", {nh * hd, hp.n_embd}), att});
}

}  // namespace

void build_gemma4(ForwardContext& c) {
    const auto& hp = c.hp;
    const int64_t T = c.n_tokens;
    if (c.stream_window != 0) {
        fail(BASALT_ERR_UNSUPPORTED,
             "{}: the streaming cache (KV policy 'sinks') re-rotates keys with one head size and rope for every layer; "
             "gemma4's layers differ in both",
             c.weights.source());
    }
    int32_t x = c.g.op(BASALT_OP_GET_ROWS, "token_embd", BASALT_DTYPE_F32, {hp.n_embd, T},
                       {c.weight("token_embd.weight", {hp.n_embd, hp.n_vocab}), c.tokens});
    x = c.g.op(BASALT_OP_SCALE, "token_embd.scaled", BASALT_DTYPE_F32, {hp.n_embd, T}, {x},
               {{op::scale::factor, std::sqrt(static_cast<float>(hp.n_embd))}});
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        const int i = static_cast<int>(il);
        int32_t a = gemma4_attention(c, il, rms_norm(c, x, p + "attn_norm.weight", p + "attn_norm"));
        a = rms_norm(c, a, p + "post_attention_norm.weight", p + "post_attention_norm");
        x = c.g.op(BASALT_OP_ADD, p + "attn_residual", BASALT_DTYPE_F32, {hp.n_embd, T}, {x, a});
        int32_t f = ffn_gated(c, i, rms_norm(c, x, p + "ffn_norm.weight", p + "ffn_norm"), BASALT_OP_GEGLU);
        f = rms_norm(c, f, p + "post_ffw_norm.weight", p + "post_ffw_norm");
        x = c.g.op(BASALT_OP_ADD, p + "ffn_residual", BASALT_DTYPE_F32, {hp.n_embd, T}, {x, f});
        if (il < hp.layer_out_scale.size()) {
            x = c.g.op(BASALT_OP_SCALE, p + "out_scaled", BASALT_DTYPE_F32, {hp.n_embd, T}, {x},
                       {{op::scale::factor, hp.layer_out_scale[il]}});
        }
        x = steer_hook(c, i, x);
    }
    if (c.n_outputs == 0) return;
    output_head(c, rms_norm(c, select_output_rows(c, x), "output_norm.weight", "output_norm"));
}

}  // namespace basalt
