// phi3 (Phi-3, Phi-4-mini): llama's block with a fused attn_qkv [q | k | v], a fused ffn_up [gate | up] (SwiGLU of
// its two halves), rope on halves (neox), partial rotary (rope.dimension_count < head_dim, Phi-4-mini) and
// longrope's long/short frequency factors where the file has them (chosen by the session's context, as llama.cpp).
#include "graph/arch.hpp"

namespace basalt {

void build_phi3(ForwardContext& c) {
    const auto& hp = c.hp;
    const int64_t T = c.n_tokens, F = hp.n_ff;
    int32_t x = c.g.op(BASALT_OP_GET_ROWS, "token_embd", BASALT_DTYPE_F32, {hp.n_embd, T},
                       {c.weight("token_embd.weight", {hp.n_embd, hp.n_vocab}), c.tokens});
    AttentionOptions ao;
    ao.rope_mode = 1;
    ao.rope_base = hp.rope_freq_base;
    // Fused unless the file has the three projections apart (llama.cpp accepts both).
    ao.fused_qkv = !c.has_weight("blk.0.attn_q.weight");
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        const int i = static_cast<int>(il);
        const int32_t a = attention_block(c, i, rms_norm(c, x, p + "attn_norm.weight", p + "attn_norm"), ao);
        x = c.g.op(BASALT_OP_ADD, p + "attn_residual", BASALT_DTYPE_F32, {hp.n_embd, T}, {x, a});
        const int32_t h = rms_norm(c, x, p + "ffn_norm.weight", p + "ffn_norm");
        // ffn_up holds [gate | up] (2 n_ff rows): SwiGLU of its first and second halves.
        const auto up = c.weights.require(p + "ffn_up.weight", hp.arch);
        ModelWeights::expect_shape(up, {hp.n_embd, 2 * F}, c.weights.source());
        const int32_t gate = c.g.op(BASALT_OP_MATMUL, p + "ffn_gate", BASALT_DTYPE_F32, {F, T},
                                    {c.weight(ModelWeights::rows(up, 0, F)), h});
        const int32_t lin = c.g.op(BASALT_OP_MATMUL, p + "ffn_up", BASALT_DTYPE_F32, {F, T},
                                   {c.weight(ModelWeights::rows(up, F, F)), h});
        const int32_t act = c.g.op(BASALT_OP_SWIGLU, p + "ffn_act", BASALT_DTYPE_F32, {F, T}, {gate, lin});
        const int32_t f = c.g.op(BASALT_OP_MATMUL, p + "ffn_down", BASALT_DTYPE_F32, {hp.n_embd, T},
                                 {c.weight(p + "ffn_down.weight", {F, hp.n_embd}), act});
        x = c.g.op(BASALT_OP_ADD, p + "ffn_residual", BASALT_DTYPE_F32, {hp.n_embd, T}, {x, f});
        x = steer_hook(c, i, x);
    }
    if (c.n_outputs == 0) return;
    output_head(c, rms_norm(c, select_output_rows(c, x), "output_norm.weight", "output_norm"));
}

}  // namespace basalt
