// What a session keeps between steps besides its resources: each sequence's length and encoded source, the
// steering table, the observed layers, MoE routing and its statistics. Step inputs read it; read-backs write the
// outputs into it. Not thread-safe: one session's thread.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "exec/steering-table.hpp"
#include "graph/moe-router.hpp"

namespace basalt {

struct SessionState {
    // Sized for res.n_seq_max sequences. `res` must outlive the state.
    SessionState(const SessionResources& res, MoeRouter router)
        : seq_len(res.n_seq_max, 0), steering(res), moe_router(router) {}

    std::vector<uint32_t> seq_len;
    // Encoder-decoder: each sequence's cross rows (in source order; shared by forks), and the rows not in use.
    std::vector<std::shared_ptr<const std::vector<int32_t>>> seq_source;
    std::vector<int32_t> cross_free;
    SteeringTable steering;
    MoeRouter moe_router;
    std::vector<uint8_t> observe_layers;       // per layer (empty: nothing observed)
    std::vector<std::vector<float>> observed;  // per layer: rows of the last decode
    bool moe_stats_on = false;
    std::vector<MoeLayerStats> moe_stats;  // per layer while on
    uint64_t io_logits_bytes = 0;          // largest logits region a step has used in the IO buffer
    // Hybrid models with state checkpoints on: per sequence the tokens it holds, its prefix-cache salt, and the
    // lengths of the checkpoints its decoding and its prompt pieces last kept off the every-512 grid (0: none; each
    // replaced by the next of its kind).
    std::vector<std::vector<int32_t>> seq_tokens;
    std::vector<uint64_t> seq_salt;
    std::vector<uint32_t> decode_checkpoint;
    std::vector<uint32_t> piece_checkpoint;
    std::vector<uint32_t> batch_rows;  // during a decode: rows of each sequence in the whole batch
};

}  // namespace basalt
