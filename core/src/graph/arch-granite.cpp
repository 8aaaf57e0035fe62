// granite (IBM Granite 3.x dense): llama's block (RMS norm, GQA attention with rope in pairs, SwiGLU) with four
// multipliers from the file: embeddings times embedding_scale, each residual branch (attention, FFN) times
// residual_scale before its add, attention scores times attention.scale instead of 1/sqrt(head_dim), and logits
// divided by logit_scale; rope.scaling.finetuned = false turns rope off on every layer. Attention-output and FFN biases
// (optional in llama.cpp's loader) are refused by name.
#include "graph/arch.hpp"
#include "support/error.hpp"

namespace basalt {
namespace {

// x times factor when factor is set (a multiplier the file leaves out is 1, as llama.cpp reads it).
int32_t scaled(ForwardContext& c, int32_t x, float factor, const std::string& name) {
    if (factor == 0.f) return x;
    const basalt_tensor& t = c.g.at(x);
    return c.g.op(BASALT_OP_SCALE, name, BASALT_DTYPE_F32, {t.ne[0], t.ne[1]}, {x}, {{op::scale::factor, factor}});
}

}  // namespace

void build_granite(ForwardContext& c) {
    const auto& hp = c.hp;
    const int64_t T = c.n_tokens;
    for (const char* bias :
         {"blk.0.attn_output.bias", "blk.0.ffn_up.bias", "blk.0.ffn_gate.bias", "blk.0.ffn_down.bias"}) {
        if (c.has_weight(bias)) {
            fail(BASALT_ERR_UNSUPPORTED, "{}: tensor '{}' (granite bias) is not implemented", c.weights.source(), bias);
        }
    }
    int32_t x = c.g.op(BASALT_OP_GET_ROWS, "token_embd", BASALT_DTYPE_F32, {hp.n_embd, T},
                       {c.weight("token_embd.weight", {hp.n_embd, hp.n_vocab}), c.tokens});
    x = scaled(c, x, hp.embedding_scale, "token_embd.scaled");
    AttentionOptions ao;
    ao.rope_base = hp.rope_freq_base;
    ao.scale = hp.attention_scale;
    ao.rope = hp.rope_on;  // rope.scaling.finetuned false: no layer rotates (llama.cpp's granite rope_pattern)
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        const int i = static_cast<int>(il);
        int32_t a = attention_block(c, i, rms_norm(c, x, p + "attn_norm.weight", p + "attn_norm"), ao);
        a = scaled(c, a, hp.residual_scale, p + "attn_scaled");
        x = c.g.op(BASALT_OP_ADD, p + "attn_residual", BASALT_DTYPE_F32, {hp.n_embd, T}, {x, a});
        int32_t f = ffn_gated(c, i, rms_norm(c, x, p + "ffn_norm.weight", p + "ffn_norm"), BASALT_OP_SWIGLU);
        f = scaled(c, f, hp.residual_scale, p + "ffn_scaled");
        x = c.g.op(BASALT_OP_ADD, p + "ffn_residual", BASALT_DTYPE_F32, {hp.n_embd, T}, {x, f});
        x = steer_hook(c, i, x);
    }
    if (c.n_outputs == 0) return;
    const int32_t h = rms_norm(c, select_output_rows(c, x), "output_norm.weight", "output_norm");
    if (hp.logit_scale == 0.f) {
        output_head(c, h);
        return;
    }
    const std::string w = c.has_weight("output.weight") ? "output.weight" : "token_embd.weight";
    const int32_t logits = c.g.op(BASALT_OP_MATMUL, "output.unscaled", BASALT_DTYPE_F32, {hp.n_vocab, c.n_outputs},
                                  {c.weight(w, {hp.n_embd, hp.n_vocab}), h});
    // The reciprocal is taken in f32 first, as the reference does.
    c.g.node(BASALT_OP_SCALE, "output", c.logits, {logits}, {{op::scale::factor, 1.0f / hp.logit_scale}});
}

}  // namespace basalt
