// What a running request keeps so that it can be preempted (its KV dropped) and continue later exactly where it
// was: the tokens each of its sequences holds, kept in step with every feed, prefix attach, fork, drop and truncate;
// while it is recomputed, the decoder's own plan waits here. Loop thread only. docs/engine.md "Preemption".
#pragma once

#include <basalt/plugin_decoder.h>

#include <cstdint>
#include <vector>

namespace basalt::engine {

struct KvHistory {
    // Per model, per request-local sequence: the tokens its session sequence holds, in position order.
    std::vector<std::vector<int32_t>> held[2];
    // While recomputing: the tokens being fed again (the restore plan's feeds point into them).
    std::vector<std::vector<int32_t>> restore[2];
    // The decoder's plan that waits while the restore plan runs (its feeds, progress and copied rows).
    std::vector<basalt_decoder_feed> saved_feeds;
    std::vector<size_t> saved_fed, saved_cached;
    std::vector<std::vector<float>> saved_logits;
    bool forked = false;     // a fork shared a partial block: a write into it may take a block (copy on write)
    bool preempted = false;  // its KV was dropped and it waits in the queue: its next admission recomputes `held`
    bool restoring = false;  // the current plan recomputes the held tokens (the decoder's plan is saved_*)
    uint32_t count = 0;      // times this request was preempted

    // The tokens sequence `seq` of `model` holds (the table grows to it on first use).
    std::vector<int32_t>& tokens(int32_t model, int32_t seq) {
        auto& per_seq = held[model];
        if (per_seq.size() <= static_cast<size_t>(seq)) per_seq.resize(static_cast<size_t>(seq) + 1);
        return per_seq[static_cast<size_t>(seq)];
    }
};

}  // namespace basalt::engine
