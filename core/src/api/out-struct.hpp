// Filling the C API's output structs: only up to the caller's struct_size (older callers have smaller structs),
// and the memory plan's conversion shared by basalt_model_plan and basalt_session_memory.
#pragma once

#include <basalt/basalt.h>

#include <algorithm>
#include <cstring>

#include "graph/moe-router.hpp"
#include "model/memory-plan.hpp"

namespace basalt::api {

// Copies src into *out up to out->struct_size bytes, keeping the caller's struct_size.
template <typename T>
void write_sized(T* out, const T& src) {
    const uint32_t size = out->struct_size;
    std::memcpy(out, &src, std::min<size_t>(size, sizeof(T)));
    out->struct_size = size;
}

// The C view of one layer's MoE routing statistics; per_expert[0 .. capacity) gets the per-expert assignments.
inline void write_moe_stats(const MoeLayerStats& st, basalt_moe_stats* out, uint64_t* per_expert, size_t capacity) {
    basalt_moe_stats v{};
    v.struct_size = sizeof(v);
    v.n_expert = static_cast<uint32_t>(st.per_expert.size());
    v.passes = st.passes;
    v.tokens = st.tokens;
    v.assignments = st.assignments();
    v.dropped = st.dropped;
    v.rerouted = st.rerouted;
    v.imbalance = st.imbalance();
    if (per_expert != nullptr) std::copy_n(st.per_expert.begin(), std::min(capacity, st.per_expert.size()), per_expert);
    write_sized(out, v);
}

// The C view of a memory plan (what was planned, or what a session allocated).
inline basalt_memory_plan to_c(const MemoryPlan& p) {
    basalt_memory_plan plan{};
    plan.struct_size = sizeof(plan);
    plan.n_ctx = p.n_ctx;
    plan.n_batch = p.n_batch;
    plan.k_type = p.k_type;
    plan.v_type = p.v_type;
    plan.weight_bytes = p.weight_bytes;
    plan.kv_bytes_per_token = p.kv_bytes_per_token;
    plan.kv_bytes = p.kv_bytes;
    plan.scratch_bytes = p.scratch_bytes;
    plan.total_bytes = p.total_bytes;
    plan.n_seq_max = p.n_seq_max;
    plan.kv_cells_full = p.kv_cells_full;
    plan.kv_cells_window = p.kv_cells_window;
    plan.logits_bytes = p.logits_bytes;
    plan.host_bytes = p.host_bytes;
    plan.state_checkpoint_bytes = p.state_checkpoint_bytes;
    return plan;
}

}  // namespace basalt::api
