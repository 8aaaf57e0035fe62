// gpt-oss (OpenAI's open-weight mixture of experts; llama.cpp's openai-moe): pre-norm blocks (attn_norm before the
// attention, post_attention_norm before the experts). Attention: q/k/v/o biases, head size from key_length (n_head x
// head_dim may differ from n_embd), scale 1/sqrt(head_dim), one learned sink logit per head (attn_sinks.weight:
// each head's softmax runs over its scores and the sink, which has no value), the sliding window on even layers
// (the table's pattern 2), neox rope with the file's YaRN on every layer. Every layer routes through experts: router
// with bias, top-k, softmax over the k selected logits; gate/up/down biases per expert; clamped SwiGLU (alpha 1.702,
// limit 7, llama.cpp's constants).
#include "graph/arch.hpp"

namespace basalt {

void build_gpt_oss(ForwardContext& c) {
    const auto& hp = c.hp;
    const int64_t T = c.n_tokens;
    int32_t x = c.g.op(BASALT_OP_GET_ROWS, "token_embd", BASALT_DTYPE_F32, {hp.n_embd, T},
                       {c.weight("token_embd.weight", {hp.n_embd, hp.n_vocab}), c.tokens});
    AttentionOptions ao;
    ao.rope_mode = 1;
    ao.rope_base = hp.rope_freq_base;
    ao.bias = true;
    ao.out_bias = true;
    ao.sink_logits = true;
    MoeOptions mo;
    mo.biases = true;
    mo.clamped_swiglu = true;
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        const int i = static_cast<int>(il);
        ao.window = hp.layer_sliding[il] ? static_cast<int32_t>(hp.sliding_window) : 0;
        const int32_t a = attention_block(c, i, rms_norm(c, x, p + "attn_norm.weight", p + "attn_norm"), ao);
        x = c.g.op(BASALT_OP_ADD, p + "attn_residual", BASALT_DTYPE_F32, {hp.n_embd, T}, {x, a});
        const int32_t h = rms_norm(c, x, p + "post_attention_norm.weight", p + "post_attention_norm");
        const int32_t f = ffn_moe(c, i, h, mo);
        x = c.g.op(BASALT_OP_ADD, p + "ffn_residual", BASALT_DTYPE_F32, {hp.n_embd, T}, {x, f});
        x = steer_hook(c, i, x);
    }
    if (c.n_outputs == 0) return;
    output_head(c, rms_norm(c, select_output_rows(c, x), "output_norm.weight", "output_norm"));
}

}  // namespace basalt
