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
    // The residual window of quantized K/V (ABI 1.4: 8 inputs) has no shader yet (6 inputs: T5's position bias).
    if (c.n_in != 5 && c.n_in != 6) {
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

void record_attention(NodeCtx& c) {
    const TensorView& q = c.in[0];
    const TensorView& k = c.in[1];
    const TensorView& v = c.in[2];
    const int64_t hd_k = q.ne[0];
    const int64_t n_head = q.ne[1];
    const int64_t tokens = q.ne[2];
    const int64_t n_kv = k.ne[0] / hd_k;
    const int64_t hd_v = v.ne[0] / n_kv;
    const bool flat = c.out.ne[0] == hd_v * n_head;
    const Placed qp = c.be->place(q);
    const Placed kp = c.be->place(k);
    const Placed vp = c.be->place(v);
    const Placed lp = c.be->place(c.in[3]);
    const Placed tp = c.be->place(c.in[4]);
    const Placed op = c.be->place(c.out);
    std::vector<uint32_t> pc = {u32(hd_k),
                                u32(hd_v),
                                u32(n_head),
                                u32(n_head / n_kv),
                                u32(c.in[3].ne[0] / 2),
                                u32(k.type),
                                u32(v.type),
                                qp.delta,
                                u32(q.nb[1]),
                                u32(q.nb[2]),
                                kp.delta,
                                u32(k.nb[1]),
                                vp.delta,
                                u32(v.nb[1]),
                                lp.delta,
                                tp.delta,
                                op.delta,
                                flat ? u32(hd_v * 4) : u32(c.out.nb[1]),
                                flat ? u32(c.out.nb[1]) : u32(c.out.nb[2]),
                                u32(c.ip(0)),
                                u32(c.ip(1)),
                                fbits(c.fp(0)),
                                fbits(c.fp(1)),
                                u32(k.nrows()),
                                u32(c.in[3].nrows()),
                                u32(hd_k / k.block * k.block_bytes),
                                u32(hd_v / v.block * v.block_bytes)};
    // Since 1.4 two features take push constants from P(27) on (the block holds 32 words), never both in one node
    // (a streaming cache needs rotary positions, which encoder-decoder models do not have):
    // sink keys at cache positions (ip[2]): the rope parameters, as rope.comp takes them (the "_cp" variants);
    // encoder-decoder attention: not causal (ip[5] bit 0), relative position bias by distance (input 5).
    const bool cache_positions = c.ip(2) == 1;
    const bool biased = c.n_in == 6;
    const Placed bp = biased ? c.be->place(c.in[5]) : Placed{};
    if (cache_positions) {
        if (biased || (c.ip(5) & 1) != 0) {
            c.fail(BASALT_ERR_UNSUPPORTED,
                   "sink keys at cache positions (ip[2]) with a position bias or without causal masking");
        }
        const auto step = static_cast<float>(-2.0 * std::log2(static_cast<double>(c.fp(2))) / c.ip(4));
        pc.insert(pc.end(), {u32(1 | (c.ip(3) == 1 ? 2 : 0)), u32(c.ip(4)), fbits(step), fbits(c.fp(3))});
    } else {
        pc.insert(pc.end(), {u32((c.ip(5) & 1) | (biased ? 2 : 0)), biased ? u32((c.in[5].ne[1] - 1) / 2) : 0u,
                             biased ? bp.delta : 0u});
    }
    // Lanes over keys (attention_keys.comp) where the head dims allow; else lanes over dims (attention.comp).
    const int64_t hd = std::max(hd_k, hd_v);
    const bool keys = hd_k % 4 == 0 && hd_v % 4 == 0 && hd <= 256 && c.be->attention_keys();
    const std::string shader = keys ? "attention_keys_d" + std::to_string(hd <= 64    ? 64
                                                                          : hd <= 128 ? 128
                                                                                      : 256)
                                    : std::string("attention");
    const std::string variant = cache_positions ? shader + "_cp" : shader;
    run(c, reduce_variant(c, variant.c_str()).c_str(), c.be->row_wg(), {qp, kp, vp, lp, tp, op, bp}, pc, u32(n_head),
        u32(tokens), 1);
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
    std::vector<uint32_t> pc = {u32(x.ne[0]), u32(x.nrows()), u32(x.type), u32(cache.type)};
    push_tensor(pc, xp, x);
    push_tensor(pc, cp, cache);
    pc.insert(pc.end(), {sp.delta, u32(cache.nrows())});
    uint32_t gx = 0;
    uint32_t gz = 0;
    Backend::split_groups(static_cast<uint64_t>(x.nrows()), gx, gz);  // one workgroup per row
    run(c, reduce_variant(c, "kv_write").c_str(), c.be->row_wg(), {xp, cp, sp}, pc, gx, 1, gz);
}

}  // namespace basalt::vk::ops
