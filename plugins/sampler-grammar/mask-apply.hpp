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
// Ids outside [0, n_vocab) are masked. A run of 64 candidates holding the 64 ids of one mask word in order (a
// fresh candidate array is in id order) is masked with word operations: only the candidates of the word's clear
// bits are touched, with no branch per allowed candidate. Any other candidate is checked by its own id.
inline bool apply_mask(const std::vector<uint64_t>& words, size_t n_vocab, basalt_candidates& c) {
    bool changed = false;
    const uint64_t* w = words.data();
    basalt_token_data* data = c.data;
    auto refuse = [&](basalt_token_data& d) {
        if (std::isinf(d.logit) && d.logit < 0) return;
        d.logit = -INFINITY;
        d.p = 0.f;
        changed = true;
    };
    auto one = [&](basalt_token_data& d) {
        const auto id = static_cast<uint32_t>(d.id);
        if (d.id < 0 || id >= n_vocab || ((w[id >> 6] >> (id & 63)) & 1u) == 0) refuse(d);
    };
    size_t i = 0;
    for (; i + 64 <= c.size; i += 64) {
        basalt_token_data* block = data + i;
        const int32_t base = block[0].id;
        bool in_order = base >= 0 && (base & 63) == 0 && static_cast<size_t>(base) + 64 <= n_vocab;
        if (in_order) {
            uint32_t differ = 0;
            for (uint32_t j = 0; j < 64; ++j)
                differ |= static_cast<uint32_t>(block[j].id ^ (base + static_cast<int32_t>(j)));
            in_order = differ == 0;
        }
        if (!in_order) {
            for (uint32_t j = 0; j < 64; ++j) one(block[j]);
            continue;
        }
        for (uint64_t clear = ~w[static_cast<uint32_t>(base) >> 6]; clear != 0; clear &= clear - 1)
            refuse(block[__builtin_ctzll(clear)]);
    }
    for (; i < c.size; ++i) one(data[i]);
    return changed;
}

}  // namespace basalt::grammar
