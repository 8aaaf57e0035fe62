// olmo2 (OLMo 2): no pre-norms; each block adds post_attention_norm(attention(x)) and post_ffw_norm(ffn(x)) to the
// residual. q and k are RMS-normalised over the whole projection (all heads at once, weights [n_head * head_dim]
// and [n_head_kv * head_dim]) before rope on halves (neox). OLMo 3's sliding-window layers (a file with
// olmo2.attention.sliding_window) are refused by name.
#include "graph/arch.hpp"
#include "support/error.hpp"

namespace basalt {

void build_olmo2(ForwardContext& c) {
    const auto& hp = c.hp;
    const int64_t T = c.n_tokens;
    if (hp.sliding_window != 0) {
        fail(BASALT_ERR_UNSUPPORTED,
             "{}: '{}.attention.sliding_window' = {} (OLMo 3 sliding-window layers) is not implemented",
             c.weights.source(), hp.arch, hp.sliding_window);
    }
    int32_t x = c.g.op(BASALT_OP_GET_ROWS, "token_embd", BASALT_DTYPE_F32, {hp.n_embd, T},
                       {c.weight("token_embd.weight", {hp.n_embd, hp.n_vocab}), c.tokens});
    AttentionOptions ao;
    ao.rope_mode = 1;
    ao.rope_base = hp.rope_freq_base;
    ao.qk_norm_full = true;
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        const int i = static_cast<int>(il);
        int32_t a = attention_block(c, i, x, ao);
        a = rms_norm(c, a, p + "post_attention_norm.weight", p + "post_attention_norm");
        x = c.g.op(BASALT_OP_ADD, p + "attn_residual", BASALT_DTYPE_F32, {hp.n_embd, T}, {x, a});
        int32_t f = ffn_gated(c, i, x, BASALT_OP_SWIGLU);
        f = rms_norm(c, f, p + "post_ffw_norm.weight", p + "post_ffw_norm");
        x = c.g.op(BASALT_OP_ADD, p + "ffn_residual", BASALT_DTYPE_F32, {hp.n_embd, T}, {x, f});
        x = steer_hook(c, i, x);
    }
    if (c.n_outputs == 0) return;
    // The output matrix is required (llama.cpp's loader has no tied fallback for olmo2).
    const int32_t h = rms_norm(c, select_output_rows(c, x), "output_norm.weight", "output_norm");
    c.g.node(BASALT_OP_MATMUL, "output", c.logits, {c.weight("output.weight", {hp.n_embd, hp.n_vocab}), h});
}

}  // namespace basalt
