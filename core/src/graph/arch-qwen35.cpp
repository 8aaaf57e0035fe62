// qwen35 (Qwen3.5 dense, hybrid): pre-norm blocks whose mixer is, on every full_attention_interval-th layer, gated
// full attention (a joint [q | gate] projection per head, q/k RMS norms, neox rope on the first n_rot dims, the
// output times sigmoid(gate)) and on every other layer a Gated DeltaNet: one projection to [q | k | v] through a
// short causal convolution with a per-sequence rolling state (SSM_CONV) and SiLU, q and k L2-normalised per head,
// then the gated delta rule over a per-sequence matrix state (GATED_DELTA; decay exp(softplus(alpha + dt_bias) *
// ssm_a), beta sigmoid), an RMS norm per head gated by silu(z), and the output projection. The states live in the
// session (docs/kv-cache.md); c.state_rows says which one each token continues. qwen35moe (Qwen3.5 MoE) has the same
// blocks with a routed mixture of experts (softmax, top-k, renormalised) plus a shared expert (a SwiGLU FFN of
// width n_ff_shexp) scaled per token by sigmoid(ffn_gate_inp_shexp . h).
#include <cmath>

#include "graph/arch.hpp"
#include "support/error.hpp"

namespace basalt {
namespace {

int32_t linear(ForwardContext& c, int32_t x, const std::string& w, int64_t n_out, const std::string& name) {
    return c.g.op(BASALT_OP_MATMUL, name, BASALT_DTYPE_F32, {n_out, c.n_tokens},
                  {c.weight(w, {c.g.ne(x, 0), n_out}), x});
}

int32_t reshape(ForwardContext& c, int32_t x, std::initializer_list<int64_t> ne, const std::string& name) {
    return c.g.op(BASALT_OP_COPY, name, BASALT_DTYPE_F32, ne, {x});
}

// Elements [offset, offset + n) of dim 0 of x [*, T] -> [n, T].
int32_t slice(ForwardContext& c, int32_t x, int64_t offset, int64_t n, const std::string& name) {
    return c.g.op(BASALT_OP_SLICE, name, BASALT_DTYPE_F32, {n, c.n_tokens}, {x}, {{op::slice::offset, offset}});
}

int32_t gated_attention(ForwardContext& c, uint32_t il, int32_t h, const std::string& p) {
    const auto& hp = c.hp;
    const int64_t T = c.n_tokens, hd = hp.head_dim_k, H = hp.n_head, Hkv = hp.n_head_kv;
    if (c.stream_window != 0) {
        fail(BASALT_ERR_UNSUPPORTED,
             "{}: a streaming KV cache (attention sinks) does not compose with the recurrent "
             "layers of a hybrid model",
             hp.arch);
    }
    // Per head [q | gate] (hd each).
    const int32_t qg =
        reshape(c, linear(c, h, p + "attn_q.weight", 2 * hd * H, p + "qg"), {2 * hd, H, T}, p + "qg.heads");
    int32_t q = c.g.op(BASALT_OP_SLICE, p + "q", BASALT_DTYPE_F32, {hd, H, T}, {qg}, {{op::slice::offset, 0}});
    const int32_t gate =
        c.g.op(BASALT_OP_SLICE, p + "gate", BASALT_DTYPE_F32, {hd, H, T}, {qg}, {{op::slice::offset, hd}});
    int32_t k = reshape(c, linear(c, h, p + "attn_k.weight", hd * Hkv, p + "k"), {hd, Hkv, T}, p + "k.heads");
    const int32_t v = linear(c, h, p + "attn_v.weight", hp.n_embd_v_gqa(), p + "v");
    q = rms_norm(c, q, p + "attn_q_norm.weight", p + "q.normed");
    k = rms_norm(c, k, p + "attn_k_norm.weight", p + "k.normed");
    // Text positions: the model's multi-section rope is neox on the first n_rot dims.
    auto rope = [&](int32_t t, const std::string& name) {
        return c.g.op(BASALT_OP_ROPE, name, BASALT_DTYPE_F32, {hd, c.g.ne(t, 1), T}, {t, c.positions},
                      {{op::rope::mode, 1},
                       {op::rope::n_rot, hp.n_rot},
                       {op::rope::freq_base, hp.rope_freq_base},
                       {op::rope::freq_scale, hp.rope_freq_scale}});
    };
    q = rope(q, p + "q.rope");
    k = rope(k, p + "k.rope");
    write_kv(c, il, reshape(c, k, {hd * Hkv, T}, p + "k.rows"), v, c.kv_slots, p);
    const int64_t n_out = H * hp.head_dim_v;
    const int32_t att = attend(c, il, q, c.attn_lists, n_out, 0, 1.0f / std::sqrt(static_cast<float>(hd)), 0.f, p);
    const int32_t g = c.g.op(BASALT_OP_SIGMOID, p + "gate.sigmoid", BASALT_DTYPE_F32, {n_out, T},
                             {reshape(c, gate, {n_out, T}, p + "gate.rows")});
    const int32_t gated = c.g.op(BASALT_OP_MUL, p + "attention.gated", BASALT_DTYPE_F32, {n_out, T}, {att, g});
    return linear(c, gated, p + "attn_output.weight", hp.n_embd, p + "attn_out");
}

int32_t delta_net(ForwardContext& c, uint32_t il, int32_t h, const std::string& p) {
    const auto& hp = c.hp;
    const int64_t T = c.n_tokens, dk = hp.ssm_d_state, nk = hp.ssm_n_group, nv = hp.ssm_dt_rank;
    const int64_t inner = hp.ssm_d_inner, dv = inner / nv, C = hp.ssm_conv_channels(), K = hp.ssm_conv_kernel;
    const int32_t mixed = linear(c, h, p + "attn_qkv.weight", C, p + "qkv");
    const int32_t z = linear(c, h, p + "attn_gate.weight", inner, p + "z");
    const int32_t beta = c.g.op(BASALT_OP_SIGMOID, p + "beta", BASALT_DTYPE_F32, {nv, T},
                                {linear(c, h, p + "ssm_beta.weight", nv, p + "beta.in")});
    // log-decay = softplus(alpha + dt_bias) * ssm_a (ssm_a = -exp(A_log) < 0).
    int32_t g = linear(c, h, p + "ssm_alpha.weight", nv, p + "alpha");
    g = c.g.op(BASALT_OP_ADD, p + "alpha.biased", BASALT_DTYPE_F32, {nv, T}, {g, c.weight(p + "ssm_dt.bias", {nv})});
    g = c.g.op(BASALT_OP_SOFTPLUS, p + "alpha.softplus", BASALT_DTYPE_F32, {nv, T}, {g});
    g = c.g.op(BASALT_OP_MUL, p + "log_decay", BASALT_DTYPE_F32, {nv, T}, {g, c.weight(p + "ssm_a", {nv})});

    int32_t conv = c.g.op(BASALT_OP_SSM_CONV, p + "conv", BASALT_DTYPE_F32, {C, T},
                          {mixed, c.weight(p + "ssm_conv1d.weight", {K, C}), c.conv_state[il], c.state_rows});
    conv = c.g.op(BASALT_OP_SILU, p + "conv.silu", BASALT_DTYPE_F32, {C, T}, {conv});
    // q, k L2-normalised per head (x / sqrt(sum x^2 + eps) = rms_norm(x; eps / dk) / sqrt(dk)), q also / sqrt(dk).
    auto l2 = [&](int64_t offset, const char* what, float extra) {
        const std::string n = p + what;
        const int32_t heads = reshape(c, slice(c, conv, offset, nk * dk, n), {dk, nk, T}, n + ".heads");
        const int32_t normed = c.g.op(BASALT_OP_RMS_NORM, n + ".l2", BASALT_DTYPE_F32, {dk, nk, T}, {heads},
                                      {{op::rms_norm::eps, hp.norm_eps / static_cast<float>(dk)}});
        return c.g.op(BASALT_OP_SCALE, n + ".scaled", BASALT_DTYPE_F32, {dk, nk, T}, {normed},
                      {{op::scale::factor, extra / std::sqrt(static_cast<float>(dk))}});
    };
    const int32_t q = l2(0, "dn_q", 1.0f / std::sqrt(static_cast<float>(dk)));
    const int32_t k = l2(nk * dk, "dn_k", 1.0f);
    const int32_t v = reshape(c, slice(c, conv, 2 * nk * dk, inner, p + "dn_v"), {dv, nv, T}, p + "dn_v.heads");
    int32_t o = c.g.op(BASALT_OP_GATED_DELTA, p + "delta", BASALT_DTYPE_F32, {dv, nv, T},
                       {q, k, v, g, beta, c.delta_state[il], c.state_rows});
    o = rms_norm(c, o, p + "ssm_norm.weight", p + "delta.normed");
    o = c.g.op(BASALT_OP_SWIGLU, p + "delta.gated", BASALT_DTYPE_F32, {dv, nv, T},
               {reshape(c, z, {dv, nv, T}, p + "z.heads"), o});
    return linear(c, reshape(c, o, {inner, T}, p + "delta.rows"), p + "ssm_out.weight", hp.n_embd, p + "ssm_out");
}

// The shared expert of qwen35moe: SwiGLU FFN out [n_embd, T] times sigmoid(ffn_gate_inp_shexp . h) per token
// (MOE_COMBINE with one "expert" of weight the gate).
int32_t shared_expert(ForwardContext& c, int32_t h, const std::string& p) {
    const auto& hp = c.hp;
    const int64_t T = c.n_tokens, D = hp.n_embd, F = hp.n_ff_shexp;
    const int32_t gate = linear(c, h, p + "ffn_gate_shexp.weight", F, p + "shexp_gate");
    const int32_t up = linear(c, h, p + "ffn_up_shexp.weight", F, p + "shexp_up");
    const int32_t a = c.g.op(BASALT_OP_SWIGLU, p + "shexp_act", BASALT_DTYPE_F32, {F, T}, {gate, up});
    const int32_t down = linear(c, a, p + "ffn_down_shexp.weight", D, p + "shexp_down");
    const int32_t g = c.g.op(BASALT_OP_SIGMOID, p + "shexp_weight", BASALT_DTYPE_F32, {1, T},
                             {c.g.op(BASALT_OP_MATMUL, p + "shexp_logit", BASALT_DTYPE_F32, {1, T},
                                     {c.weight(p + "ffn_gate_inp_shexp.weight", {D}), h})});
    return c.g.op(BASALT_OP_MOE_COMBINE, p + "shexp_out", BASALT_DTYPE_F32, {D, T},
                  {reshape(c, down, {D, 1, T}, p + "shexp_down.one"), g});
}

int32_t ffn(ForwardContext& c, uint32_t il, int32_t h, const std::string& p) {
    const int i = static_cast<int>(il);
    if (c.hp.n_expert == 0) return ffn_gated(c, i, h, BASALT_OP_SWIGLU);
    const int32_t routed = ffn_moe(c, i, h);
    if (c.hp.n_ff_shexp == 0 || !c.has_weight(p + "ffn_up_shexp.weight")) return routed;
    return c.g.op(BASALT_OP_ADD, p + "ffn_out", BASALT_DTYPE_F32, {c.hp.n_embd, c.n_tokens},
                  {routed, shared_expert(c, h, p)});
}

}  // namespace

void build_qwen35(ForwardContext& c) {
    const auto& hp = c.hp;
    const int64_t T = c.n_tokens;
    int32_t x = c.g.op(BASALT_OP_GET_ROWS, "token_embd", BASALT_DTYPE_F32, {hp.n_embd, T},
                       {c.weight("token_embd.weight", {hp.n_embd, hp.n_vocab}), c.tokens});
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        const int32_t h = rms_norm(c, x, p + "attn_norm.weight", p + "attn_norm");
        const int32_t a = hp.layer_recurrent[il] ? delta_net(c, il, h, p) : gated_attention(c, il, h, p);
        x = c.g.op(BASALT_OP_ADD, p + "attn_residual", BASALT_DTYPE_F32, {hp.n_embd, T}, {x, a});
        const int32_t f = ffn(c, il, rms_norm(c, x, p + "post_attention_norm.weight", p + "ffn_norm"), p);
        x = c.g.op(BASALT_OP_ADD, p + "ffn_residual", BASALT_DTYPE_F32, {hp.n_embd, T}, {x, f});
        x = steer_hook(c, static_cast<int>(il), x);
    }
    if (c.n_outputs == 0) return;
    output_head(c, rms_norm(c, select_output_rows(c, x), "output_norm.weight", "output_norm"));
}

}  // namespace basalt
