// What a session allocates, owned by RAII handles: the backend instance, the KV-cache manager, the weights, the K/V
// storage (with its residual window and encoder-decoder cross rows) and the IO buffer. Built in one constructor that
// refuses, before any allocation it can foresee, a configuration the model or the machine cannot hold; a failure
// part way frees what was made (members are destroyed in reverse order: buffers, then the manager, then the
// backend). Not thread-safe: one session's thread uses it.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "exec/plugin-handles.hpp"
#include "graph/moe-router.hpp"
#include "host/plugin-host.hpp"
#include "model/memory-plan.hpp"
#include "model/model-weights.hpp"

struct basalt_model;

namespace basalt {

struct ForwardContext;
struct SessionConfig;

// Context, batch and MoE routing of a session, checked against the model before anything is created.
struct SessionShape {
    uint32_t n_ctx = 0;
    uint32_t n_batch = 0;
    MoeRouter moe_router;
};
// Checks the model can run, the configuration's sizes and MoE router (warns about a context past the trained one).
SessionShape session_shape(const basalt_model& model, const SessionConfig& config);

// The model's weights as the backend sees them: the file mapped (zero-copy) or uploaded.
struct LoadedWeights {
    DeviceBuffer buffer;
    uint64_t bytes = 0;
    std::unique_ptr<ModelWeights> view;
};

struct SessionResources {
    // Creates everything in order (plan check, backend, weights, manager, exact plan check, K/V storage); throws
    // Error with what was made freed.
    SessionResources(const PluginHost& plugins, const basalt_model& model, const SessionConfig& config,
                     SessionShape shape);

    // Grows the IO buffer to at least `bytes` (doubling, never past the plan's worst case).
    void ensure_io(uint64_t bytes);
    // Declares the K/V storage of a pass in `c`: the caches and residual window (decoder steps) and the
    // cross-attention rows (encoder-decoder models).
    void bind_storage(ForwardContext& c, bool encoder_pass) const;
    // Copies the residual-window rows of sequence src to dst (a fork of an open unit).
    void copy_residual_rows(int32_t src, int32_t dst) const;
    // Copies sequence src's recurrent state (every recurrent layer's conv and delta-rule rows) to dst (a fork).
    void copy_state_rows(int32_t src, int32_t dst) const;
    // Bytes of one sequence's recurrent state (every recurrent layer's conv and delta-rule rows; 0: no such layer).
    uint64_t state_row_bytes() const;
    // Sequence seq's recurrent state, layer by layer (conv rows, then delta-rule rows), in host memory.
    std::vector<uint8_t> read_state(int32_t seq) const;
    // The same into `out` (resized to state_row_bytes: a buffer of that size is reused as it is).
    void read_state(int32_t seq, std::vector<uint8_t>& out) const;
    // Sets sequence seq's recurrent state from what read_state gave (state_row_bytes bytes, else INVALID_ARGUMENT).
    void write_state(int32_t seq, const std::vector<uint8_t>& state) const;
    // What was allocated, in the plan's terms (the host logits of `logits_floats` floats, the largest logits region
    // a step used in the IO buffer).
    MemoryPlan allocated(uint64_t logits_floats, uint64_t io_logits_bytes) const;
    uint32_t cache_layers() const;
    // Refuses (BASALT_ERR_OUT_OF_MEMORY) a plan larger than the machine's available memory plus free swap.
    static void check_fits(const MemoryPlan& plan);

    const basalt_model& model;
    const ModelHparams& hp;
    uint32_t n_ctx = 0;
    uint32_t n_batch = 0;
    uint32_t n_seq_max = 0;
    MemoryPlan plan;
    const Component& backend_component;
    const Component& kv_component;
    BackendInstance backend;
    LoadedWeights weights;
    KvManager kv;
    basalt_kv_cache_layout layout{};
    std::vector<uint64_t> k_row_bytes, v_row_bytes;  // per cache layer: bytes of one K / V row
    // Residual window of quantized K/V (layout.residual, 0: none): per layer F32 [n_embd_{k,v}_gqa, n_seq_max * R].
    uint32_t residual = 0;
    // Rows of the sliding-window layers' own K/V storage (the layout's n_window_slots); 0: they use the n_ctx rows.
    uint32_t n_window_slots = 0;
    std::vector<uint8_t> sliding;                     // per cache layer: a sliding-window layer
    std::vector<uint8_t> window_storage;              // per cache layer: its K/V live in the window storage
    uint64_t k_storage_rows = 0, v_storage_rows = 0;  // rows of each full-attention layer's K / V storage
    uint64_t kv_bytes = 0;
    std::vector<DeviceBuffer> k, v, k_residual, v_residual;
    // Encoder-decoder: per decoder layer the cross-attention K/V of encoded sources (n_ctx rows each).
    std::vector<DeviceBuffer> cross_k, cross_v;
    // Hybrid recurrent models: per layer (empty buffer: an attention layer) each sequence's conv state and delta-rule
    // state, F32 [hp.conv_state_floats() / delta_state_floats(), n_seq_max]: row s is sequence s's (docs/kv-cache.md).
    std::vector<DeviceBuffer> conv_state, delta_state;
    uint64_t state_bytes = 0;
    DeviceBuffer io;
    uint64_t io_bytes = 0;

  private:
    // Each recurrent layer's conv-state and delta-state buffers in layer order, with one sequence's row bytes.
    std::vector<std::pair<basalt_buffer*, uint64_t>> state_buffers() const;
    void check_layout(const SessionConfig& config, SessionShape shape);
    void check_streaming(const SessionConfig& config);
    void allocate_caches();
};

}  // namespace basalt
