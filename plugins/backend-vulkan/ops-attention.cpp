// Attention over the KV cache (ATTENTION: lanes over keys where the head dims allow, else lanes over dims) and
// writes into it (KV_WRITE); K/V types f32, f16, q8_0, q4_0.
#include <basalt/sdk/op-contracts.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "op-helpers.hpp"
#include "ops.hpp"

namespace basalt::vk::ops {
namespace {

bool cache_type_ok(basalt_dtype t) {
    return t == BASALT_DTYPE_F32 || t == BASALT_DTYPE_F16 || t == BASALT_DTYPE_Q8_0 || t == BASALT_DTYPE_Q4_0;
}

}  // namespace

void check_attention(const NodeCtx& c) {
    for (int i = 1; i <= 2; ++i) {
        if (!cache_type_ok(c.in[i].type)) {
            c.fail(BASALT_ERR_UNSUPPORTED, std::string(i == 1 ? "K" : "V") + " cache type " + type_name(c.in[i].type) +
                                               " is not supported (f32, f16, q8_0, q4_0)");
        }
    }
    // The residual window of quantized K/V (ABI 1.4: 8 inputs) has no shader yet (6 inputs: T5's position bias; 6
    // or 7 with the sink logits, ABI 1.6).
    if (c.n_in != 5 && c.n_in != 6 && !(c.n_in == 7 && (c.ip(sdk::op::attention::flags) & 2) != 0)) {
        c.fail(BASALT_ERR_UNSUPPORTED,
               "a KV residual window (" + std::to_string(c.n_in) + " inputs) is not supported (CPU backend only)");
    }
    const sdk::contract::AttentionShape s = sdk::contract::attention(c);
    for (int i = 1; i <= 2; ++i) {
        if (c.in[i].ne[2] != 1 || c.in[i].ne[3] != 1) {
            c.fail(BASALT_ERR_UNSUPPORTED, std::string(i == 1 ? "K" : "V") + " cache must be 2-D");
        }
    }
    const auto limit = 32 * static_cast<int64_t>(c.be->row_wg());
    if (s.hd_k > limit || s.hd_v > limit) {
        c.fail(BASALT_ERR_UNSUPPORTED,
               "head sizes above " + std::to_string(limit) + " are not supported on this device");
    }
    need_fit_all(c);
}

namespace {

// The fields both attention push-constant structs share (BASALT_ATTENTION_FIELDS).
template <class Push>
void attention_fields(const NodeCtx& c, const std::vector<Placed>& ps, Push& pc) {
    namespace attn = sdk::op::attention;
    const TensorView& q = c.in[0];
    const TensorView& k = c.in[1];
    const TensorView& v = c.in[2];
    const int64_t hd_k = q.ne[0];
    const int64_t n_head = q.ne[1];
    const int64_t n_kv = k.ne[0] / hd_k;
    const int64_t hd_v = v.ne[0] / n_kv;
    const bool flat = c.out.ne[0] == hd_v * n_head;  // out [hd_v * n_head, tokens] rather than [hd_v, n_head, ...]
    pc.hd_k = u32(hd_k);
    pc.hd_v = u32(hd_v);
    pc.n_head = u32(n_head);
    pc.group = u32(n_head / n_kv);
    pc.n_visible = u32(c.in[3].ne[0] / 2);
    pc.k_type = u32(k.type);
    pc.v_type = u32(v.type);
    pc.q_offset = ps[0].delta;
    pc.q_nb1 = u32(q.nb[1]);
    pc.q_nb2 = u32(q.nb[2]);
    pc.k_offset = ps[1].delta;
    pc.k_nb1 = u32(k.nb[1]);
    pc.v_offset = ps[2].delta;
    pc.v_nb1 = u32(v.nb[1]);
    pc.lists_offset = ps[3].delta;
    pc.queries_offset = ps[4].delta;
    pc.dst_offset = ps[5].delta;
    pc.dst_head_stride = flat ? u32(hd_v * 4) : u32(c.out.nb[1]);
    pc.dst_token_stride = flat ? u32(c.out.nb[1]) : u32(c.out.nb[2]);
    pc.window = u32(c.ip(attn::window));
    pc.sinks = u32(c.ip(attn::sinks));
    pc.scale = c.fp(attn::scale);
    pc.soft_cap = c.fp(attn::soft_cap);
    pc.k_rows = u32(k.nrows());
    pc.n_lists = u32(c.in[3].nrows());
    pc.k_head_bytes = u32(hd_k / k.block * k.block_bytes);
    pc.v_head_bytes = u32(hd_v / v.block * v.block_bytes);
}

}  // namespace

void record_attention(NodeCtx& c) {
    namespace attn = sdk::op::attention;
    const int64_t hd_k = c.in[0].ne[0];
    const int64_t hd_v = c.in[2].ne[0] / (c.in[1].ne[0] / hd_k);
    // Binding order: q, K, V, slot lists, query table, out, position bias, sink logits (the last input, ABI 1.6).
    const bool sunk = (c.ip(attn::flags) & 2) != 0;
    const bool biased = c.n_in == (sunk ? 7 : 6);
    std::vector<Placed> ps;
    for (int i = 0; i < 5; ++i) ps.push_back(c.be->place(c.in[i]));
    ps.push_back(c.be->place(c.out));
    ps.push_back(biased ? c.be->place(c.in[5]) : Placed{});
    if (sunk) ps.push_back(c.be->place(c.in[c.n_in - 1]));
    // Lanes over keys (attention_keys.comp) where the head dims allow; else lanes over dims (attention.comp).
    const int64_t hd = std::max(hd_k, hd_v);
    const bool keys = hd_k % 4 == 0 && hd_v % 4 == 0 && hd <= 256 && c.be->attention_keys();
    const std::string shader = keys ? "attention_keys_d" + std::to_string(hd <= 64    ? 64
                                                                          : hd <= 128 ? 128
                                                                                      : 256)
                                    : std::string("attention");
    const auto n_head = u32(c.in[0].ne[1]);
    const auto tokens = u32(c.in[0].ne[2]);
    // Since 1.4 either of two features (never both in one node: a streaming cache needs rotary positions, which
    // encoder-decoder models do not have): sink keys at cache positions (the "_cp" variants, with ROPE's
    // parameters as rope.comp takes them), or encoder-decoder attention: not causal, relative position bias by
    // distance (input 5).
    if (c.ip(attn::cache_positions) == 1) {
        if (biased || sunk || (c.ip(attn::flags) & 1) != 0) {
            c.fail(BASALT_ERR_UNSUPPORTED,
                   "sink keys at cache positions (ip[2]) with a position bias, sink logits or without causal masking");
        }
        push::AttentionSinksPush pc{};
        attention_fields(c, ps, pc);
        const int n_rot = c.ip(attn::n_rot);
        pc.rope_mode = u32(c.ip(attn::rope_mode));
        pc.n_rot = u32(n_rot);
        pc.theta_step = static_cast<float>(-2.0 * std::log2(static_cast<double>(c.fp(attn::freq_base))) / n_rot);
        pc.freq_scale = c.fp(attn::freq_scale);
        run(c, reduce_variant(c, (shader + "_cp").c_str()).c_str(), c.be->row_wg(), ps, pc, n_head, tokens, 1);
        return;
    }
    push::AttentionPush pc{};
    attention_fields(c, ps, pc);
    pc.flags = u32((c.ip(attn::flags) & 1) | (biased ? 2 : 0) | (sunk ? 4 : 0));
    pc.bias_radius = biased ? u32((c.in[5].ne[1] - 1) / 2) : 0u;
    pc.bias_offset = biased ? ps[6].delta : 0u;
    pc.sink_offset = sunk ? ps[7].delta : 0u;
    run(c, reduce_variant(c, shader.c_str()).c_str(), c.be->row_wg(), ps, pc, n_head, tokens, 1);
}

void check_kv_write(const NodeCtx& c) {
    if (!cache_type_ok(c.in[1].type)) {
        c.fail(BASALT_ERR_UNSUPPORTED,
               "cache type " + type_name(c.in[1].type) + " is not supported (f32, f16, q8_0, q4_0)");
    }
    if (c.n_in != 3) {
        c.fail(BASALT_ERR_UNSUPPORTED,
               "a KV residual window (" + std::to_string(c.n_in) + " inputs) is not supported (CPU backend only)");
    }
    sdk::contract::kv_write(c);
    need_fit_all(c);
}

void record_kv_write(NodeCtx& c) {
    const TensorView& x = c.in[0];
    const TensorView& cache = c.out;
    const Placed xp = c.be->place(x);
    const Placed cp = c.be->place(cache);
    const Placed sp = c.be->place(c.in[2]);
    push::ConvertPush pc{};
    pc.n = u32(x.ne[0]);
    pc.rows = u32(x.nrows());
    pc.src_type = u32(x.type);
    pc.dst_type = u32(cache.type);
    pc.src = tensor_ref(xp, x);
    pc.dst = tensor_ref(cp, cache);
    pc.slots_offset = sp.delta;
    pc.cache_rows = u32(cache.nrows());
    uint32_t gx = 0;
    uint32_t gz = 0;
    Backend::split_groups(static_cast<uint64_t>(x.nrows()), gx, gz);  // one workgroup per row
    run(c, reduce_variant(c, "kv_write").c_str(), c.be->row_wg(), {xp, cp, sp}, pc, gx, 1, gz);
}

}  // namespace basalt::vk::ops
