// On-demand admission (see scheduler.hpp): what a queued request needs from the KV cache to take its next step.
#include <algorithm>

#include "engine/scheduler.hpp"

namespace basalt::engine {

uint64_t Scheduler::slots_needed_now(const Request& r) const {
    const uint64_t bs = limits_.block_size;
    auto blocks = [bs](uint64_t n) { return (n + bs - 1) / bs; };
    uint64_t need = 0;
    if (r.kv.preempted) {
        // Its sequences' tokens are recomputed before its decoder goes on, then it feeds at least one more.
        for (const auto& per_model : r.kv.held) {
            uint64_t m_need = 0;
            for (const auto& tokens : per_model) {
                if (!tokens.empty()) m_need += blocks(tokens.size() + 1);
            }
            need = std::max(need, m_need);
        }
        need = std::max<uint64_t>(need, 1);
    } else {
        // A fresh request's first plan feeds its prompt (one sequence per model), whole or in pieces.
        const uint64_t prompt = r.spec.prompt.size();
        const uint64_t piece = limits_.prefill_chunk == 0 ? prompt : std::min<uint64_t>(prompt, limits_.prefill_chunk);
        need = blocks(std::max<uint64_t>(piece, 1));
    }
    // Never more than its worst case, which submit checked against the whole cache.
    return std::min(need * bs, worst_case_slots(r));
}

}  // namespace basalt::engine
