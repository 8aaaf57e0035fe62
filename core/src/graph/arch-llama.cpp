// llama (also mistral and smollm): RMS norm, GQA attention with rope in pairs, SwiGLU FFN. The family's
// layer loop is shared with qwen2 (biases, neox rope), llama-MoE (routed experts), qwen3 / qwen3moe (q/k norms)
// and smollm3 (layers without rope) through LlamaVariant.
#include "graph/arch.hpp"

namespace basalt {

void build_llama_family(ForwardContext& c, const LlamaVariant& variant) {
    const auto& hp = c.hp;
    const int64_t T = c.n_tokens;
    int32_t x = c.g.op(BASALT_OP_GET_ROWS, "token_embd", BASALT_DTYPE_F32, {hp.n_embd, T},
                       {c.weight("token_embd.weight", {hp.n_embd, hp.n_vocab}), c.tokens});
    AttentionOptions ao;
    ao.rope_mode = variant.rope_mode;
    ao.rope_base = hp.rope_freq_base;
    ao.bias = variant.qkv_bias;
    ao.qk_norm = variant.qk_norm;
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        const int i = static_cast<int>(il);
        ao.rope = variant.no_rope_step == 0 || (il + 1) % variant.no_rope_step != 0;
        const int32_t a = attention_block(c, i, rms_norm(c, x, p + "attn_norm.weight", p + "attn_norm"), ao);
        x = c.g.op(BASALT_OP_ADD, p + "attn_residual", BASALT_DTYPE_F32, {hp.n_embd, T}, {x, a});
        const int32_t h = rms_norm(c, x, p + "ffn_norm.weight", p + "ffn_norm");
        const int32_t f = variant.experts ? ffn_moe(c, i, h) : ffn_gated(c, i, h, BASALT_OP_SWIGLU);
        x = c.g.op(BASALT_OP_ADD, p + "ffn_residual", BASALT_DTYPE_F32, {hp.n_embd, T}, {x, f});
        x = steer_hook(c, i, x);
    }
    if (embedding_out(c, x) || c.n_outputs == 0) return;
    output_head(c, rms_norm(c, select_output_rows(c, x), "output_norm.weight", "output_norm"));
}

void build_llama(ForwardContext& c) {
    build_llama_family(c, LlamaVariant{});
}

}  // namespace basalt
