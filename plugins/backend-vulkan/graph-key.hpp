// The shape key of a graph: everything a recorded command buffer depends on (ops, parameters, tensor types,
// shapes, strides, buffers and offsets), nothing it does not (names, the data in the buffers).
#pragma once

#include <cstdint>
#include <vector>

#include "basalt/plugin_backend.h"

namespace basalt::vk {

struct GraphKey {
    std::vector<uint64_t> words;  // empty: the graph cannot be keyed (a NULL or short struct): record it afresh
    uint64_t hash = 0;

    bool operator==(const GraphKey& o) const noexcept { return hash == o.hash && words == o.words; }
};

// Builds the key of `g` (its arrays non-NULL, checked by the caller). Pure; thread-safe.
GraphKey graph_key(const basalt_graph* g);

}  // namespace basalt::vk
