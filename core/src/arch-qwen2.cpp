// qwen2: llama's layout with q/k/v biases and rope on halves (neox).
#include "arch.hpp"

namespace basalt {

void build_qwen2(ForwardContext& c) {
    const auto& hp = c.hp;
    const int64_t T = c.n_tokens;
    int32_t x = c.g.op(BASALT_OP_GET_ROWS, "token_embd", BASALT_DTYPE_F32, {hp.n_embd, T},
                       {c.weight("token_embd.weight"), c.tokens});
    AttentionOptions ao;
    ao.rope_mode = 1;
    ao.rope_base = hp.rope_freq_base;
    ao.bias = true;
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        const int i = static_cast<int>(il);
        const int32_t a = attention_block(c, i, rms_norm(c, x, p + "attn_norm.weight", p + "attn_norm"), ao);
        x = c.g.op(BASALT_OP_ADD, p + "attn_residual", BASALT_DTYPE_F32, {hp.n_embd, T}, {x, a});
        const int32_t f = ffn_gated(c, i, rms_norm(c, x, p + "ffn_norm.weight", p + "ffn_norm"), BASALT_OP_SWIGLU);
        x = c.g.op(BASALT_OP_ADD, p + "ffn_residual", BASALT_DTYPE_F32, {hp.n_embd, T}, {x, f});
    }
    if (c.n_outputs == 0) return;
    output_head(c, rms_norm(c, select_output_rows(c, x), "output_norm.weight", "output_norm"));
}

}  // namespace basalt
