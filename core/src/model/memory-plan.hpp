// The memory plan: weights + KV cache + activation scratch for a context and batch size, computed from the
// file alone before anything is allocated (what `basalt inspect` prints and sessions check).
#pragma once

#include <basalt/plugin_backend.h>

#include <cstdint>
#include <map>

#include "model/gguf.hpp"
#include "model/model-hparams.hpp"

namespace basalt {

struct PlanRequest {
    uint32_t n_ctx = 0;      // 0: the model's training context (capped at kDefaultMaxCtx)
    uint32_t n_batch = 512;  // tokens per forward pass (capped at n_ctx)
    uint32_t n_seq_max = 1;  // sequences of the session (sliding-window storage is per sequence)
    basalt_dtype k_type = BASALT_DTYPE_F16;
    basalt_dtype v_type = BASALT_DTYPE_F16;
    uint32_t kv_residual = 0;  // residual window R of quantized K/V: n_seq_max x R F32 rows of K and V per layer
    uint64_t host_bytes = 0;   // the model's host tables (parsed metadata, tokenizer), measured by the caller
    uint64_t state_checkpoint_bytes = 0;  // hybrid models: host budget of the prefix cache's state checkpoints
    static constexpr uint32_t kDefaultMaxCtx = 4096;
};

struct TypeUsage {
    uint64_t tensors = 0;
    uint64_t elements = 0;
    uint64_t bytes = 0;
};

struct MemoryPlan {
    uint32_t n_ctx = 0;
    uint32_t n_batch = 0;
    uint32_t n_seq_max = 1;
    basalt_dtype k_type = BASALT_DTYPE_F16;
    basalt_dtype v_type = BASALT_DTYPE_F16;
    uint32_t kv_residual = 0;
    uint64_t n_params = 0;
    std::map<basalt_dtype, TypeUsage> types;  // tensor-type histogram
    uint64_t weight_bytes = 0;
    uint64_t kv_bytes_per_token = 0;     // K+V of one token over every attention layer (uncapped)
    uint64_t kv_cells_full = 0;          // cells held by each full-attention layer
    uint64_t kv_cells_window = 0;        // cells held by each sliding-window layer (0 when none)
    uint64_t kv_bytes = 0;               // the whole cache for n_ctx (window layers capped, see window_cells)
    uint64_t kv_residual_bytes = 0;      // of kv_bytes: the F32 residual windows (n_layer x n_seq_max x R x (K + V))
    uint64_t state_bytes = 0;            // of kv_bytes: recurrent layers' per-sequence state (hybrid models)
    uint64_t scratch_bytes = 0;          // activations of one layer for n_batch tokens + inputs + a generation's logits
    uint64_t logits_bytes = 0;           // of scratch_bytes: one row per sequence (host copy + IO buffer); an
                                         // encoder-only model: the hidden state of every batch row
    uint64_t logits_all_rows_bytes = 0;  // logits of every batch row, twice (a step that asks for all: perplexity)
    uint64_t scratch_all_rows_bytes = 0;  // scratch_bytes with logits_all_rows_bytes in place of logits_bytes
    uint64_t io_bytes = 0;                // the largest IO buffer a step needs: its inputs and the logits of all rows
    uint64_t host_bytes = 0;              // the model's host tables (PlanRequest::host_bytes)
    uint64_t state_checkpoint_bytes = 0;  // hybrid models: the prefix cache's recurrent-state checkpoints in host
                                          // memory (PlanRequest's budget when it holds one sequence's state, else 0)
    uint64_t total_bytes = 0;  // weight + kv + scratch + host + state checkpoints: what a generation holds (KV all
                               // written)
};

// Computes the plan; throws Error(INVALID_ARGUMENT) for an unusable request (e.g. a quantized KV type whose
// block does not divide the K/V row) naming the value.
MemoryPlan plan_memory(const gguf::File& file, const ModelHparams& hp, const PlanRequest& request);

// Cells of each sliding-window layer: a ring of (window + n_batch) per sequence when that is smaller in all than
// n_ctx, else n_ctx (the layers then share the full layers' slots). The rule of kv-paged's window storage.
uint64_t window_cells(uint64_t n_ctx, uint64_t window, uint64_t n_batch, uint64_t n_seq_max);

// Rows the K and the V cache hold for `cells` slots: whole groups of 32 when either type is a per-channel KIVI
// type (attention reads K and V caches of the same number of rows).
uint64_t kv_storage_rows(basalt_dtype k_type, basalt_dtype v_type, uint64_t cells);

}  // namespace basalt
