// Applies a token mask (a bitset, one bit per vocabulary id) to a candidate array: every candidate whose bit is
// clear gets logit -inf and p 0. Shared by the sampler and the benchmark, so both time the same loop. Pure;
// thread-safe.
#pragma once

#include <basalt/plugin_sampler.h>

#include <cmath>
#include <cstdint>
#include <vector>

namespace basalt::grammar {

// Masks c in place; returns whether a logit changed (the caller then marks the array unsorted, probs invalid).
// Ids outside [0, n_vocab) are masked.
inline bool apply_mask(const std::vector<uint64_t>& words, size_t n_vocab, basalt_candidates& c) {
    bool changed = false;
    const uint64_t* w = words.data();
    for (size_t i = 0; i < c.size; ++i) {
        basalt_token_data& d = c.data[i];
        const auto id = static_cast<uint32_t>(d.id);
        const bool ok = d.id >= 0 && id < n_vocab && ((w[id >> 6] >> (id & 63)) & 1u) != 0;
        if (ok || (std::isinf(d.logit) && d.logit < 0)) continue;
        d.logit = -INFINITY;
        d.p = 0.f;
        changed = true;
    }
    return changed;
}

}  // namespace basalt::grammar
