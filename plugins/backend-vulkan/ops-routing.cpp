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

namespace {

// One invocation per row (or pair) of routing.comp's `shader` mode, 64 per workgroup.
void routing(NodeCtx& c, const char* shader, const std::vector<Placed>& ps, const push::RoutingPush& pc,
             uint64_t threads) {
    run(c, shader, 64, ps, pc, static_cast<uint32_t>(std::clamp<uint64_t>((threads + 63) / 64, 1, 65535)), 1, 1);
}

}  // namespace

void record_topk(NodeCtx& c) {
    const TensorView& a = c.in[0];
    const Placed ap = c.be->place(a);
    const Placed op = c.be->place(c.out);
    push::RoutingPush pc{};
    pc.n = u32(a.ne[0]);
    pc.rows = u32(a.nrows());
    pc.k = u32(c.ip(sdk::op::topk::k));
    pc.a = tensor_ref(ap, a);
    pc.dst = tensor_ref(op, c.out);
    routing(c, "topk", {ap, Placed{}, op}, pc, static_cast<uint64_t>(a.nrows()));
}

void record_gather(NodeCtx& c) {
    const TensorView& a = c.in[0];
    const TensorView& ids = c.in[1];
    const Placed ap = c.be->place(a);
    const Placed bp = c.be->place(ids);
    const Placed op = c.be->place(c.out);
    push::RoutingPush pc{};
    pc.n = u32(a.ne[0]);
    pc.rows = u32(a.nrows());
    pc.k = u32(ids.ne[0]);
    pc.a = tensor_ref(ap, a);
    pc.dst = tensor_ref(op, c.out);
    pc.b = tensor_ref(bp, ids);
    pc.renormalise = u32(c.ip(sdk::op::gather::renormalise));
    routing(c, "gather", {ap, bp, op}, pc, static_cast<uint64_t>(a.nrows()));
}

void record_moe_combine(NodeCtx& c) {
    const TensorView& a = c.in[0];
    const TensorView& weights = c.in[1];
    const Placed ap = c.be->place(a);
    const Placed bp = c.be->place(weights);
    const Placed op = c.be->place(c.out);
    // x rows are (j, t) pairs: view it as rows of N with ne1 = k, ne2 = T.
    push::RoutingPush pc{};
    pc.n = u32(a.ne[0]);
    pc.rows = u32(a.ne[2]);
    pc.k = u32(a.ne[1]);
    pc.a = tensor_ref(ap, a);
    pc.dst = tensor_ref(op, c.out);
    pc.b = tensor_ref(bp, weights);
    routing(c, "moe_combine", {ap, bp, op}, pc, static_cast<uint64_t>(a.ne[0] * a.ne[2]));
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
    namespace route = sdk::op::moe_route;
    push::RoutingPush pc{};
    pc.n = u32(a.ne[0]);
    pc.rows = u32(a.nrows());
    pc.k = u32(c.ip(route::k));
    pc.a = tensor_ref(ap, a);
    pc.dst = tensor_ref(op, c.out);
    pc.capacity = u32(c.ip(route::capacity));
    pc.overflow = u32(c.ip(route::overflow));
    pc.output_kind = u32(c.ip(route::output));
    // One workgroup: the assignments claim capacity in one order across all tokens.
    run(c, "moe_route", 64, {ap, Placed{}, op}, pc, 1, 1, 1);
}

}  // namespace basalt::vk::ops
