// Element-wise and row ops: binary (ADD, MUL, SWIGLU, GEGLU), unary (SCALE, SILU, GELU, GELU_ERF), row norms
// (RMS_NORM, LAYER_NORM, SOFTMAX; an RMS_NORM may carry its following MUL), ROPE and STEER.
#include <basalt/sdk/op-contracts.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "op-helpers.hpp"
#include "ops.hpp"

namespace basalt::vk::ops {

void check_binary(const NodeCtx& c) {
    sdk::contract::binary(c);
    need_fit_all(c);
}

void record_binary(NodeCtx& c) {
    uint32_t op = 0;
    switch (c.node->op) {
        case BASALT_OP_ADD:
            op = 0;
            break;
        case BASALT_OP_MUL:
            op = 1;
            break;
        case BASALT_OP_SWIGLU:
            op = 2;
            break;
        default:
            op = 3;
    }
    const Placed a = c.be->place(c.in[0]);
    const Placed b = c.be->place(c.in[1]);
    const Placed o = c.be->place(c.out);
    const bool bcast = c.in[1].nrows() == 1 && c.in[0].nrows() != 1;
    std::vector<uint32_t> pc = {op, u32(c.out.ne[0]), u32(c.out.nrows()), bcast ? 1u : 0u};
    push_tensor(pc, a, c.in[0]);
    push_tensor(pc, b, c.in[1]);
    push_tensor(pc, o, c.out);
    run(c, "binary", kElemWg, {a, b, o}, pc, elem_groups(static_cast<uint64_t>(c.out.nelements())), 1, 1);
}

void check_unary(const NodeCtx& c) {
    sdk::contract::unary(c);
    need_fit_all(c);
}

void record_unary(NodeCtx& c) {
    const Placed a = c.be->place(c.in[0]);
    const Placed o = c.be->place(c.out);
    const basalt_op op = c.node->op;
    const bool norm = op == BASALT_OP_RMS_NORM || op == BASALT_OP_LAYER_NORM || op == BASALT_OP_SOFTMAX;
    uint32_t code = 0;
    switch (op) {
        case BASALT_OP_SCALE:
        case BASALT_OP_RMS_NORM:
            code = 0;
            break;
        case BASALT_OP_SILU:
        case BASALT_OP_LAYER_NORM:
            code = 1;
            break;
        case BASALT_OP_GELU:
        case BASALT_OP_SOFTMAX:
            code = 2;
            break;
        default:
            code = 3;
    }
    std::vector<uint32_t> pc = {code, u32(c.out.ne[0]), u32(c.out.nrows()), fbits(c.fp(0))};
    push_tensor(pc, a, c.in[0]);
    push_tensor(pc, o, c.out);
    if (norm) {
        uint32_t gx = 0;
        uint32_t gz = 0;
        Backend::split_groups(static_cast<uint64_t>(c.out.nrows()), gx, gz);
        if (c.fused_mul != nullptr) {
            // RMS_NORM -> MUL by a weight row: written straight to the MUL's output.
            const Placed w = c.be->place(c.fused_mul->in[1]);
            const Placed mo = c.be->place(c.fused_mul->out);
            pc.resize(10);
            push_tensor(pc, mo, c.fused_mul->out);
            pc.insert(pc.end(), {1u, w.delta});
            run(c, reduce_variant(c, "norm").c_str(), c.be->row_wg(), {a, mo, w}, pc, gx, 1, gz);
            return;
        }
        run(c, reduce_variant(c, "norm").c_str(), c.be->row_wg(), {a, o}, pc, gx, 1, gz);
    } else {
        run(c, "unary", kElemWg, {a, o}, pc, elem_groups(static_cast<uint64_t>(c.out.nelements())), 1, 1);
    }
}

void check_rope(const NodeCtx& c) {
    sdk::contract::rope(c);
    need_fit_all(c);
}

void record_rope(NodeCtx& c) {
    const TensorView& x = c.in[0];
    const Placed xp = c.be->place(x);
    const Placed pp = c.be->place(c.in[1]);
    const Placed op = c.be->place(c.out);
    const int64_t tokens = x.ne[2] * x.ne[3];
    const auto step = static_cast<float>(-2.0 * std::log2(static_cast<double>(c.fp(0))) / c.ip(1));
    std::vector<uint32_t> pc = {u32(x.ne[0]),     u32(x.ne[1]),   u32(tokens), u32(c.ip(0)),     u32(c.ip(1)),
                                fbits(step),      fbits(c.fp(1)), xp.delta,    u32(x.nb[1]),     u32(x.nb[2]),
                                u32(x.nb[3]),     u32(x.ne[2]),   op.delta,    u32(c.out.nb[1]), u32(c.out.nb[2]),
                                u32(c.out.nb[3]), pp.delta};
    const uint64_t per = static_cast<uint64_t>(c.ip(1) / 2 + (x.ne[0] - c.ip(1)));
    run(c, "rope", kElemWg, {xp, pp, op}, pc, elem_groups(per * static_cast<uint64_t>(x.ne[1] * tokens)), 1, 1);
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
    std::vector<uint32_t> pc = {u32(x.ne[0]), u32(x.nrows()), u32(table.ne[1])};
    push_tensor(pc, xp, x);
    push_tensor(pc, tp, table);
    pc.push_back(sp.delta);
    push_tensor(pc, op, c.out);
    run(c, "steer", kElemWg, {xp, tp, sp, op}, pc, elem_groups(static_cast<uint64_t>(x.nelements())), 1, 1);
}

}  // namespace basalt::vk::ops
