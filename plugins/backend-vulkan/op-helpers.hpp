// What the ops' check and record functions (ops-*.cpp) share: push-constant words, binding-range checks,
// dispatch sizes and the dispatch itself. Internal to the plugin.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "backend.hpp"

namespace basalt::vk::ops {

constexpr uint32_t kElemWg = 128;  // element-wise shaders (Vulkan guarantees 128 invocations per workgroup)

// A shape, stride or index as a push-constant word (the shaders index in 32 bits; make_view checks the range).
inline uint32_t u32(int64_t v) {
    return static_cast<uint32_t>(v);
}

// A float's bits as a push-constant word.
inline uint32_t fbits(float f) {
    uint32_t u = 0;
    std::memcpy(&u, &f, 4);
    return u;
}

// A tensor that the shader reads or writes in one binding must fit maxStorageBufferRange.
void need_fit(const NodeCtx& c, const TensorView& v, const char* role);
// need_fit for every input and the output.
void need_fit_all(const NodeCtx& c);
// Appends (offset, ne1, ne2, nb1, nb2, nb3) of a placed tensor.
void push_tensor(std::vector<uint32_t>& pc, const Placed& p, const TensorView& v);
// Workgroups of kElemWg invocations for `total` elements, clamped to 1..65535.
uint32_t elem_groups(uint64_t total);
// Records one dispatch of `shader` binding the placed tensors in order.
void run(NodeCtx& c, const char* shader, uint32_t wg, const std::vector<Placed>& ps, const std::vector<uint32_t>& pc,
         uint32_t gx, uint32_t gy, uint32_t gz);
// The registry name of a reducing shader's variant: "_sg" when a workgroup is one subgroup (no barrier).
std::string reduce_variant(const NodeCtx& c, const char* base);

}  // namespace basalt::vk::ops
