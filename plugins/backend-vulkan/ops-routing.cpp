// Mixture-of-experts routing: TOPK, GATHER and MOE_COMBINE (routing.comp's modes, one invocation per row or
// pair) and MOE_ROUTE (capacity-limited assignment in one workgroup).
#include <basalt/sdk/op-contracts.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "op-helpers.hpp"
#include "ops.hpp"

namespace basalt::vk::ops {

void check_topk(const NodeCtx& c) {
    sdk::contract::topk(c);
    need_fit_all(c);
}

void check_gather(const NodeCtx& c) {
    sdk::contract::gather(c);
    need_fit_all(c);
}

void check_moe_combine(const NodeCtx& c) {
    sdk::contract::moe_combine(c);
    need_fit_all(c);
}

void record_routing(NodeCtx& c) {
    const basalt_op op = c.node->op;
    const TensorView& a = c.in[0];
    const Placed ap = c.be->place(a);
    const Placed op_ = c.be->place(c.out);
    std::vector<uint32_t> pc;
    std::vector<Placed> ps;
    uint64_t threads = 0;
    const char* shader = nullptr;
    if (op == BASALT_OP_TOPK) {
        pc = {u32(a.ne[0]), u32(a.nrows()), u32(c.ip(0))};
        push_tensor(pc, ap, a);
        push_tensor(pc, op_, c.out);
        ps = {ap, Placed{}, op_};
        threads = static_cast<uint64_t>(a.nrows());
        shader = "topk";
    } else {
        const TensorView& b = c.in[1];
        const Placed bp = c.be->place(b);
        if (op == BASALT_OP_GATHER) {
            pc = {u32(a.ne[0]), u32(a.nrows()), u32(b.ne[0])};
            threads = static_cast<uint64_t>(a.nrows());
            shader = "gather";
        } else {
            // x rows are (j, t) pairs: view it as rows of N with ne1 = k, ne2 = T.
            pc = {u32(a.ne[0]), u32(a.ne[2]), u32(a.ne[1])};
            threads = static_cast<uint64_t>(a.ne[0] * a.ne[2]);
            shader = "moe_combine";
        }
        push_tensor(pc, ap, a);
        push_tensor(pc, op_, c.out);
        push_tensor(pc, bp, b);
        pc.push_back(u32(c.ip(0)));
        ps = {ap, bp, op_};
    }
    run(c, shader, 64, ps, pc, static_cast<uint32_t>(std::clamp<uint64_t>((threads + 63) / 64, 1, 65535)), 1, 1);
}

void check_moe_route(const NodeCtx& c) {
    sdk::contract::moe_route(c);
    // The shader packs expert ids in 12 bits and keeps the loads in shared memory.
    if (c.in[0].ne[0] > 1024) {
        c.fail(BASALT_ERR_UNSUPPORTED,
               "routing over " + std::to_string(c.in[0].ne[0]) + " experts (this backend routes at most 1024)");
    }
    need_fit_all(c);
}

void record_moe_route(NodeCtx& c) {
    const TensorView& a = c.in[0];
    const Placed ap = c.be->place(a);
    const Placed op = c.be->place(c.out);
    std::vector<uint32_t> pc = {u32(a.ne[0]), u32(a.nrows()), u32(c.ip(0))};
    push_tensor(pc, ap, a);
    push_tensor(pc, op, c.out);
    pc.insert(pc.end(), {u32(c.ip(1)), u32(c.ip(2)), u32(c.ip(3))});
    // One workgroup: the assignments claim capacity in one order across all tokens.
    run(c, "moe_route", 64, {ap, Placed{}, op}, pc, 1, 1, 1);
}

}  // namespace basalt::vk::ops
