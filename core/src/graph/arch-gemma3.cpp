// The gemma family: embeddings scaled by sqrt(n_embd), rope on halves, sliding-window and global layers,
// post-attention and post-FFN norms, GeGLU; attention soft-cap and final-logit soft-cap where the file has them
// (gemma2). gemma3: q/k RMS norm per head, rope.freq_base_swa (default 10000) unscaled on sliding-window layers, the
// model's base and rope scaling on global ones. gemma-embedding: gemma3's block as a bidirectional embedding pass
// (a symmetric window on sliding layers), its rows through output_norm and the dense layers (embedding_out).
#include <cmath>

#include "graph/arch.hpp"

namespace basalt {

void build_gemma_family(ForwardContext& c, const GemmaVariant& variant) {
    const auto& hp = c.hp;
    const int64_t T = c.n_tokens;
    int32_t x = c.g.op(BASALT_OP_GET_ROWS, "token_embd", BASALT_DTYPE_F32, {hp.n_embd, T},
                       {c.weight("token_embd.weight", {hp.n_embd, hp.n_vocab}), c.tokens});
    // The scale is rounded to f32 first, as the reference does.
    const float embd_scale = static_cast<float>(std::sqrt(static_cast<double>(hp.n_embd)));
    x = c.g.op(BASALT_OP_SCALE, "token_embd.scaled", BASALT_DTYPE_F32, {hp.n_embd, T}, {x},
               {{op::scale::factor, embd_scale}});
    const float local_rope_base = variant.local_rope_base > 0.f ? variant.local_rope_base : hp.rope_freq_base;
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        const int i = static_cast<int>(il);
        AttentionOptions ao;
        ao.rope_mode = 1;
        ao.qk_norm = variant.qk_norm;
        ao.scale = variant.attn_scale;
        ao.soft_cap = hp.attn_soft_cap;
        const bool local = hp.layer_sliding[il];
        ao.rope_base = local ? local_rope_base : hp.rope_freq_base;
        ao.rope_scaled = !(local && variant.local_unscaled);
        // The symmetric window as ATTENTION's non-causal window: |key - query| < n_swa / 2 + 1 (llama.cpp's
        // LLAMA_SWA_TYPE_SYMMETRIC masks past n_swa / 2 either side).
        const auto swa = static_cast<int32_t>(variant.symmetric_window ? hp.sliding_window / 2 + 1 : hp.sliding_window);
        ao.window = local && hp.sliding_window > 0 ? swa : 0;
        int32_t a = attention_block(c, i, rms_norm(c, x, p + "attn_norm.weight", p + "attn_norm"), ao);
        a = rms_norm(c, a, p + "post_attention_norm.weight", p + "post_attention_norm");
        x = c.g.op(BASALT_OP_ADD, p + "attn_residual", BASALT_DTYPE_F32, {hp.n_embd, T}, {x, a});
        int32_t f = ffn_gated(c, i, rms_norm(c, x, p + "ffn_norm.weight", p + "ffn_norm"), BASALT_OP_GEGLU);
        f = rms_norm(c, f, p + "post_ffw_norm.weight", p + "post_ffw_norm");
        x = c.g.op(BASALT_OP_ADD, p + "ffn_residual", BASALT_DTYPE_F32, {hp.n_embd, T}, {x, f});
        x = steer_hook(c, i, x);
    }
    if (embedding_out(c, x) || c.n_outputs == 0) return;
    output_head(c, rms_norm(c, select_output_rows(c, x), "output_norm.weight", "output_norm"));
}

void build_gemma3(ForwardContext& c) {
    GemmaVariant v;
    v.qk_norm = true;
    // Sliding-window layers: their own base (rope.freq_base_swa), never the rope scaling (global layers only).
    v.local_rope_base = c.hp.rope_scaling.freq_base_swa;
    v.local_unscaled = true;
    // Gemma 3 27B (62 layers) scales queries by 1/sqrt(n_embd / n_head) (query_pre_attn_scalar), not
    // 1/sqrt(head_dim); llama.cpp tells it by its layer count.
    constexpr uint32_t kLayers27B = 62;
    if (c.hp.n_layer == kLayers27B) v.attn_scale = 1.0f / std::sqrt(static_cast<float>(c.hp.n_embd / c.hp.n_head));
    build_gemma_family(c, v);
}

void build_gemma_embedding(ForwardContext& c) {
    GemmaVariant v;
    v.qk_norm = true;
    v.local_rope_base = c.hp.rope_scaling.freq_base_swa;
    v.local_unscaled = true;
    v.symmetric_window = true;
    build_gemma_family(c, v);
}

}  // namespace basalt
