// MoE routing modes (docs/moe.md): dropless top-k (the default) or top-k under an expert capacity per forward pass,
// with overflowing assignments dropped or rerouted; and the per-layer routing statistics a session collects.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace basalt {

struct MoeRouter {
    bool capacity = false;  // false: dropless
    double factor = 1.0;    // capacity factor C
    bool reroute = false;   // overflow: false drop, true reroute

    // Parses "dropless" or "capacity:factor=C,overflow=drop|reroute" (both keys optional: factor 1, drop); ""
    // means dropless. Throws Error(INVALID_ARGUMENT) naming the spec and what is wrong in it.
    static MoeRouter parse(const std::string& spec);
    // Assignments one expert may take in a pass of `tokens` rows: ceil(factor * tokens * k / n_expert), at least 1.
    int32_t expert_capacity(int64_t tokens, int64_t k, int64_t n_expert) const;
};

// Routing counters of one layer, summed over the forward passes since collection started.
struct MoeLayerStats {
    uint64_t passes = 0;               // forward passes
    uint64_t tokens = 0;               // token rows routed
    uint64_t dropped = 0;              // assignments dropped
    uint64_t rerouted = 0;             // assignments moved to another expert
    std::vector<uint64_t> per_expert;  // assignments each expert computed (kept and rerouted-to)
    uint64_t assignments() const;      // sum of per_expert
    double imbalance() const;          // max / mean of per_expert (0 when nothing was assigned)
};

}  // namespace basalt
