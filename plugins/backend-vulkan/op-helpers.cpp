// The helpers of op-helpers.hpp.
#include "op-helpers.hpp"

#include <basalt/sdk/op-contracts.hpp>

#include <algorithm>

namespace basalt::vk::ops {

void need_fit(const NodeCtx& c, const TensorView& v, const char* role) {
    if (v.extent + 256 > c.be->max_range()) {
        c.fail(BASALT_ERR_UNSUPPORTED, std::string(role) + " " + v.shape() + " spans " + std::to_string(v.extent) +
                                           " bytes, more than the device's maxStorageBufferRange of " +
                                           std::to_string(c.be->max_range()));
    }
}

void check_contract(const NodeCtx& c) {
    sdk::contract::check(c);
    need_fit_all(c);
}

void need_fit_all(const NodeCtx& c) {
    static const char* const kRoles[] = {"input 0", "input 1", "input 2", "input 3",
                                         "input 4", "input 5", "input 6", "input 7"};
    for (int i = 0; i < c.n_in; ++i) need_fit(c, c.in[i], kRoles[i]);
    need_fit(c, c.out, "output");
}

push::TensorRef tensor_ref(const Placed& p, const TensorView& v) {
    return {p.delta, u32(v.ne[1]), u32(v.ne[2]), u32(v.nb[1]), u32(v.nb[2]), u32(v.nb[3])};
}

uint32_t elem_groups(uint64_t total) {
    return static_cast<uint32_t>(std::clamp<uint64_t>((total + kElemWg - 1) / kElemWg, 1, 65535));
}

void run_bytes(NodeCtx& c, const char* shader, uint32_t wg, const std::vector<Placed>& ps, const void* pc, size_t bytes,
               uint32_t gx, uint32_t gy, uint32_t gz) {
    std::vector<Binding> b;
    for (const auto& p : ps) b.push_back(p.bind);
    c.be->dispatch(c, shader, wg, b, pc, bytes, gx, gy, gz);
}

std::string reduce_variant(const NodeCtx& c, const char* base) {
    return c.be->one_subgroup() ? std::string(base) + "_sg" : std::string(base);
}

}  // namespace basalt::vk::ops
