// What the ops' check and record functions (ops-*.cpp) share: push-constant values, binding-range checks,
// dispatch sizes and the dispatch itself. Internal to the plugin.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "backend.hpp"
#include "shaders/common/push-constants.h"

namespace basalt::vk::ops {

constexpr uint32_t kElemWg = 128;  // element-wise shaders (Vulkan guarantees 128 invocations per workgroup)

// A shape, stride or index as a push-constant field (the shaders index in 32 bits; make_view checks the range).
inline uint32_t u32(int64_t v) {
    return static_cast<uint32_t>(v);
}

// A tensor that the shader reads or writes in one binding must fit maxStorageBufferRange.
void need_fit(const NodeCtx& c, const TensorView& v, const char* role);
// need_fit for every input and the output.
void need_fit_all(const NodeCtx& c);
// A placed tensor as the shaders index it: (offset, ne1, ne2, nb1, nb2, nb3).
push::TensorRef tensor_ref(const Placed& p, const TensorView& v);
// Workgroups of kElemWg invocations for `total` elements, clamped to 1..65535.
uint32_t elem_groups(uint64_t total);
// Records one dispatch of `shader` binding the placed tensors in order, pushing `bytes` bytes of push constants.
void run_bytes(NodeCtx& c, const char* shader, uint32_t wg, const std::vector<Placed>& ps, const void* pc, size_t bytes,
               uint32_t gx, uint32_t gy, uint32_t gz);
// Records one dispatch of `shader` with its push constants `pc` (a struct of push-constants.h).
template <class Push>
void run(NodeCtx& c, const char* shader, uint32_t wg, const std::vector<Placed>& ps, const Push& pc, uint32_t gx,
         uint32_t gy, uint32_t gz) {
    static_assert(std::is_trivially_copyable_v<Push> && sizeof(Push) <= push::kPushBytes,
                  "push constants are a struct of push-constants.h");
    run_bytes(c, shader, wg, ps, &pc, sizeof(Push), gx, gy, gz);
}
// The registry name of a reducing shader's variant: "_sg" when a workgroup is one subgroup (no barrier).
std::string reduce_variant(const NodeCtx& c, const char* base);

}  // namespace basalt::vk::ops
