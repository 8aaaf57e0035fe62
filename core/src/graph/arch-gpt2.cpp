// gpt2: learned absolute positions, LayerNorm with bias, fused QKV (sliced into q/k/v weight views without
// copying), no rope, tanh-GELU MLP with biases.
#include <cmath>

#include "graph/arch.hpp"
#include "support/error.hpp"

namespace basalt {
namespace {

int32_t layer_norm(ForwardContext& c, int32_t x, const std::string& prefix, int64_t rows) {
    const int64_t E = c.hp.n_embd;
    const int32_t n = c.g.op(BASALT_OP_LAYER_NORM, prefix + ".norm", BASALT_DTYPE_F32, {E, rows}, {x},
                             {{op::layer_norm::eps, c.hp.norm_eps}});
    const int32_t w =
        c.g.op(BASALT_OP_MUL, prefix + ".scale", BASALT_DTYPE_F32, {E, rows}, {n, c.weight(prefix + ".weight", {E})});
    return c.g.op(BASALT_OP_ADD, prefix, BASALT_DTYPE_F32, {E, rows}, {w, c.weight(prefix + ".bias", {E})});
}

int32_t linear_bias(ForwardContext& c, int32_t x, const WeightRef& w, const WeightRef& b, int64_t n_out,
                    const std::string& name) {
    const int32_t y = c.g.op(BASALT_OP_MATMUL, name, BASALT_DTYPE_F32, {n_out, c.n_tokens}, {c.weight(w), x});
    return c.g.op(BASALT_OP_ADD, name + ".bias", BASALT_DTYPE_F32, {n_out, c.n_tokens}, {y, c.weight(b)});
}

}  // namespace

void build_gpt2(ForwardContext& c) {
    const auto& hp = c.hp;
    const int64_t T = c.n_tokens, E = hp.n_embd, hd = E / hp.n_head;
    const std::string& src = c.weights.source();
    const int32_t tok = c.g.op(BASALT_OP_GET_ROWS, "token_embd", BASALT_DTYPE_F32, {E, T},
                               {c.weight("token_embd.weight", {hp.n_embd, hp.n_vocab}), c.tokens});
    const int32_t pos = c.g.op(BASALT_OP_GET_ROWS, "position_embd", BASALT_DTYPE_F32, {E, T},
                               {c.weight("position_embd.weight"), c.positions});
    int32_t x = c.g.op(BASALT_OP_ADD, "inp_embd", BASALT_DTYPE_F32, {E, T}, {tok, pos});
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        const auto qkv_w = c.weights.require(p + "attn_qkv.weight", hp.arch);
        const auto qkv_b = c.weights.require(p + "attn_qkv.bias", hp.arch);
        ModelWeights::expect_shape(qkv_w, {E, 3 * E}, src);
        ModelWeights::expect_shape(qkv_b, {3 * E}, src);
        const int32_t h = layer_norm(c, x, p + "attn_norm", T);
        const int32_t q =
            linear_bias(c, h, ModelWeights::rows(qkv_w, 0, E), ModelWeights::rows(qkv_b, 0, E), E, p + "q");
        const int32_t k =
            linear_bias(c, h, ModelWeights::rows(qkv_w, E, E), ModelWeights::rows(qkv_b, E, E), E, p + "k");
        const int32_t v =
            linear_bias(c, h, ModelWeights::rows(qkv_w, 2 * E, E), ModelWeights::rows(qkv_b, 2 * E, E), E, p + "v");
        const int32_t qh = c.g.op(BASALT_OP_COPY, p + "q.heads", BASALT_DTYPE_F32, {hd, hp.n_head, T}, {q});
        const auto il_u = static_cast<size_t>(il);
        write_kv(c, il_u, k, v, c.kv_slots, p);
        const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
        const int32_t att = attend(c, il_u, qh, c.attn_lists, E, 0, scale, 0.f, p);
        const int32_t o = linear_bias(c, att, c.weights.require(p + "attn_output.weight", hp.arch),
                                      c.weights.require(p + "attn_output.bias", hp.arch), E, p + "attn_out");
        x = c.g.op(BASALT_OP_ADD, p + "attn_residual", BASALT_DTYPE_F32, {E, T}, {x, o});
        const int32_t h2 = layer_norm(c, x, p + "ffn_norm", T);
        const int32_t up = linear_bias(c, h2, c.weights.require(p + "ffn_up.weight", hp.arch),
                                       c.weights.require(p + "ffn_up.bias", hp.arch), hp.n_ff, p + "ffn_up");
        const int32_t act = c.g.op(BASALT_OP_GELU, p + "ffn_act", BASALT_DTYPE_F32, {hp.n_ff, T}, {up});
        const int32_t down = linear_bias(c, act, c.weights.require(p + "ffn_down.weight", hp.arch),
                                         c.weights.require(p + "ffn_down.bias", hp.arch), E, p + "ffn_down");
        x = c.g.op(BASALT_OP_ADD, p + "ffn_residual", BASALT_DTYPE_F32, {E, T}, {x, down});
        x = steer_hook(c, static_cast<int>(il), x);
    }
    if (c.n_outputs == 0) return;
    const int32_t rows = select_output_rows(c, x);
    output_head(c, layer_norm(c, rows, "output_norm", c.n_outputs));
}

}  // namespace basalt
