// Element-wise and row ops: binary (ADD, MUL, SWIGLU, GEGLU, SWIGLU_OAI), unary (SCALE, SILU, GELU, GELU_ERF, TANH,
// SIGMOID), row norms (RMS_NORM, LAYER_NORM, SOFTMAX; an RMS_NORM may carry its following MUL), ROPE and STEER.
#include <basalt/sdk/op-contracts.hpp>
#include <basalt/sdk/rope-yarn.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "op-helpers.hpp"
#include "ops.hpp"

namespace basalt::vk::ops {

namespace {

// binary.comp's ops: ADD (0), MUL (1), SWIGLU (2), GEGLU (3), SWIGLU_OAI (4, with alpha and limit).
void binary(NodeCtx& c, uint32_t op, float alpha = 0.0f, float limit = 0.0f) {
    const Placed a = c.be->place(c.in[0]);
    const Placed b = c.be->place(c.in[1]);
    const Placed o = c.be->place(c.out);
    push::BinaryPush pc{};
    pc.op = op;
    pc.n = u32(c.out.ne[0]);
    pc.rows = u32(c.out.nrows());
    pc.broadcast = c.in[1].nrows() == 1 && c.in[0].nrows() != 1 ? 1u : 0u;
    pc.a = tensor_ref(a, c.in[0]);
    pc.b = tensor_ref(b, c.in[1]);
    pc.dst = tensor_ref(o, c.out);
    pc.alpha = alpha;
    pc.limit = limit;
    run(c, "binary", kElemWg, {a, b, o}, pc, elem_groups(static_cast<uint64_t>(c.out.nelements())), 1, 1);
}

// unary.comp's ops: SCALE (0, by `factor`), SILU (1), GELU (2), GELU_ERF (3), TANH (4), SIGMOID (5), SOFTPLUS (6).
void unary(NodeCtx& c, uint32_t op, float factor) {
    const Placed a = c.be->place(c.in[0]);
    const Placed o = c.be->place(c.out);
    push::UnaryPush pc{};
    pc.op = op;
    pc.n = u32(c.out.ne[0]);
    pc.rows = u32(c.out.nrows());
    pc.factor = factor;
    pc.src = tensor_ref(a, c.in[0]);
    pc.dst = tensor_ref(o, c.out);
    run(c, "unary", kElemWg, {a, o}, pc, elem_groups(static_cast<uint64_t>(c.out.nelements())), 1, 1);
}

// norm.comp's ops: RMS_NORM (0), LAYER_NORM (1), SOFTMAX (2); one workgroup per row. An RMS_NORM followed by a MUL
// by a weight row (c.fused_mul) writes the product straight to the MUL's output.
void norm(NodeCtx& c, uint32_t op, float eps, float scale) {
    const Placed a = c.be->place(c.in[0]);
    push::NormPush pc{};
    pc.op = op;
    pc.n = u32(c.out.ne[0]);
    pc.rows = u32(c.out.nrows());
    pc.eps = eps;
    pc.scale = scale;
    pc.src = tensor_ref(a, c.in[0]);
    uint32_t gx = 0;
    uint32_t gz = 0;
    Backend::split_groups(static_cast<uint64_t>(c.out.nrows()), gx, gz);
    if (c.fused_mul != nullptr) {
        const Placed w = c.be->place(c.fused_mul->in[1]);
        const Placed mo = c.be->place(c.fused_mul->out);
        pc.dst = tensor_ref(mo, c.fused_mul->out);
        pc.fused_mul = 1;
        pc.weight_offset = w.delta;
        run(c, reduce_variant(c, "norm").c_str(), c.be->row_wg(), {a, mo, w}, pc, gx, 1, gz);
        return;
    }
    const Placed o = c.be->place(c.out);
    pc.dst = tensor_ref(o, c.out);
    run(c, reduce_variant(c, "norm").c_str(), c.be->row_wg(), {a, o}, pc, gx, 1, gz);
}

}  // namespace

void record_add(NodeCtx& c) {
    binary(c, 0);
}
void record_mul(NodeCtx& c) {
    binary(c, 1);
}
void record_swiglu(NodeCtx& c) {
    binary(c, 2);
}
void record_geglu(NodeCtx& c) {
    binary(c, 3);
}
void record_swiglu_oai(NodeCtx& c) {
    binary(c, 4, c.fp(sdk::op::swiglu_oai::alpha), c.fp(sdk::op::swiglu_oai::limit));
}

void record_scale(NodeCtx& c) {
    unary(c, 0, c.fp(sdk::op::scale::factor));
}
void record_silu(NodeCtx& c) {
    unary(c, 1, 0.0f);
}
void record_gelu(NodeCtx& c) {
    unary(c, 2, 0.0f);
}
void record_gelu_erf(NodeCtx& c) {
    unary(c, 3, 0.0f);
}
void record_tanh(NodeCtx& c) {
    unary(c, 4, 0.0f);
}
void record_sigmoid(NodeCtx& c) {
    unary(c, 5, 0.0f);
}
void record_softplus(NodeCtx& c) {
    unary(c, 6, 0.0f);
}

void record_rms_norm(NodeCtx& c) {
    norm(c, 0, c.fp(sdk::op::rms_norm::eps), 0.0f);
}
void record_layer_norm(NodeCtx& c) {
    norm(c, 1, c.fp(sdk::op::layer_norm::eps), 0.0f);
}
void record_softmax(NodeCtx& c) {
    norm(c, 2, 0.0f, c.fp(sdk::op::softmax::scale));
}

void record_rope(NodeCtx& c) {
    namespace rope = sdk::op::rope;
    const TensorView& x = c.in[0];
    const Placed xp = c.be->place(x);
    const Placed pp = c.be->place(c.in[1]);
    const Placed op = c.be->place(c.out);
    const int n_rot = c.ip(rope::n_rot);
    const int64_t tokens = x.ne[2] * x.ne[3];
    push::RopePush pc{};
    pc.head_dim = u32(x.ne[0]);
    pc.n_head = u32(x.ne[1]);
    pc.tokens = u32(tokens);
    pc.mode = u32(c.ip(rope::mode));
    pc.n_rot = u32(n_rot);
    pc.theta_step = static_cast<float>(-2.0 * std::log2(static_cast<double>(c.fp(rope::freq_base))) / n_rot);
    pc.freq_scale = c.fp(rope::freq_scale);
    pc.x_offset = xp.delta;
    pc.x_nb1 = u32(x.nb[1]);
    pc.x_nb2 = u32(x.nb[2]);
    pc.x_nb3 = u32(x.nb[3]);
    pc.x_ne2 = u32(x.ne[2]);
    pc.dst_offset = op.delta;
    pc.dst_nb1 = u32(c.out.nb[1]);
    pc.dst_nb2 = u32(c.out.nb[2]);
    pc.dst_nb3 = u32(c.out.nb[3]);
    pc.positions_offset = pp.delta;
    const uint64_t per = static_cast<uint64_t>(n_rot / 2 + (x.ne[0] - n_rot));
    const uint32_t groups = elem_groups(per * static_cast<uint64_t>(x.ne[1] * tokens));
    const float ext = c.fp(rope::ext_factor);
    const float attn = c.fp(rope::attn_factor);
    if (c.n_in < 3 && ext == 0.0f && (attn == 0.0f || attn == 1.0f)) {
        run(c, "rope", kElemWg, {xp, pp, op}, pc, groups, 1, 1);
        return;
    }
    // Scaled rope (since 1.4): frequency factors, YaRN's ramp and the magnitude, as the CPU computes them.
    pc.ext_factor = ext;
    if (ext != 0.0f) {
        const sdk::rope_yarn::CorrDims d = sdk::rope_yarn::corr_dims(
            n_rot, c.ip(rope::n_ctx_orig), c.fp(rope::freq_base), c.fp(rope::beta_fast), c.fp(rope::beta_slow));
        pc.corr_low = d.low;
        pc.corr_high = d.high;
    }
    pc.mscale = sdk::rope_yarn::magnitude(attn, ext, c.fp(rope::freq_scale));
    std::vector<Placed> ps{xp, pp, op};
    if (c.n_in == 3) {
        const Placed ff = c.be->place(c.in[2]);
        pc.has_factors = 1;
        pc.factors_offset = ff.delta;
        ps.push_back(ff);
    }
    run(c, "rope_scaled", kElemWg, ps, pc, groups, 1, 1);
}

void check_steer(const NodeCtx& c) {
    sdk::contract::steer(c);
    if (c.in[2].nb[0] != 4) c.fail(BASALT_ERR_UNSUPPORTED, "slots " + c.in[2].shape() + " are not contiguous");
    need_fit_all(c);
}

void record_steer(NodeCtx& c) {
    const TensorView& x = c.in[0];
    const TensorView& table = c.in[1];
    const Placed xp = c.be->place(x);
    const Placed tp = c.be->place(table);
    const Placed sp = c.be->place(c.in[2]);
    const Placed op = c.be->place(c.out);
    push::SteerPush pc{};
    pc.n = u32(x.ne[0]);
    pc.rows = u32(x.nrows());
    pc.n_slots = u32(table.ne[1]);
    pc.x = tensor_ref(xp, x);
    pc.table = tensor_ref(tp, table);
    pc.slots_offset = sp.delta;
    pc.dst = tensor_ref(op, c.out);
    run(c, "steer", kElemWg, {xp, tp, sp, op}, pc, elem_groups(static_cast<uint64_t>(x.nelements())), 1, 1);
}

}  // namespace basalt::vk::ops
