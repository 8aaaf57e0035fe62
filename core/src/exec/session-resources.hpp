// What a session allocates, owned by RAII handles: the backend instance, the KV-cache manager, the weights, the K/V
// storage (with its residual window and encoder-decoder cross rows) and the IO buffer. Built in one constructor that
// refuses, before any allocation it can foresee, a configuration the model or the machine cannot hold; a failure
// part way frees what was made (members are destroyed in reverse order: buffers, then the manager, then the
// backend). Not thread-safe: one session's thread uses it.
#pragma once

#include <basalt/plugin_backend.h>
#include <basalt/plugin_kv_cache.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/moe-router.hpp"
#include "host/plugin-host.hpp"
#include "model/memory-plan.hpp"
#include "model/model-weights.hpp"

struct basalt_model;

namespace basalt {

struct ForwardContext;
struct SessionConfig;

// One backend instance (created from its component, destroyed with this object).
class BackendInstance {
  public:
    // Creates instance 0 of `component` with these parameters; fails naming the backend.
    BackendInstance(const Component& component, const std::string& name,
                    const std::vector<std::pair<std::string, std::string>>& params);
    ~BackendInstance();
    BackendInstance(const BackendInstance&) = delete;
    BackendInstance& operator=(const BackendInstance&) = delete;

    const basalt_backend_iface& iface() const { return iface_; }
    void* get() const { return instance_; }
    const Component& component() const { return component_; }
    // Fails (Error carrying st) naming the backend, `what` and the plugin's message unless st is BASALT_OK.
    void check(basalt_status st, const std::string& what) const;

  private:
    const Component& component_;
    std::string name_;
    basalt_backend_iface iface_{};
    void* instance_ = nullptr;
};

// A buffer of a backend instance, freed by this handle (the instance must outlive it). Move-only.
class DeviceBuffer {
  public:
    DeviceBuffer() = default;
    // Allocates `bytes` of `usage` on the instance; fails naming `what`.
    DeviceBuffer(const BackendInstance& backend, uint64_t bytes, uint32_t usage, const char* what);
    // Takes ownership of a buffer the instance made.
    DeviceBuffer(const BackendInstance& backend, basalt_buffer* buffer) : backend_(&backend), buffer_(buffer) {}
    ~DeviceBuffer() { reset(); }
    DeviceBuffer(DeviceBuffer&& o) noexcept : backend_(o.backend_), buffer_(std::exchange(o.buffer_, nullptr)) {}
    DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;

    basalt_buffer* get() const { return buffer_; }
    void reset();

  private:
    const BackendInstance* backend_ = nullptr;
    basalt_buffer* buffer_ = nullptr;
};

// One KV-cache manager instance (destroyed with this object).
class KvManager {
  public:
    // Creates the manager `name` of `component` for the cache of `n_layers` layers of hp (n_slots slots); fails
    // naming it.
    KvManager(const Component& component, const std::string& name, const ModelHparams& hp, uint32_t n_layers,
              uint32_t n_slots, uint32_t n_seq_max, uint32_t n_batch,
              const std::vector<std::pair<std::string, std::string>>& params);
    ~KvManager();
    KvManager(const KvManager&) = delete;
    KvManager& operator=(const KvManager&) = delete;

    const basalt_kv_cache_iface& iface() const { return iface_; }
    void* get() const { return instance_; }
    const std::string& name() const { return name_; }
    // The manager's storage layout; fails naming it.
    basalt_kv_cache_layout read_layout() const;

  private:
    std::string name_;
    basalt_kv_cache_iface iface_{};
    void* instance_ = nullptr;
};

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
    uint64_t k_row_bytes = 0, v_row_bytes = 0;
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
    DeviceBuffer io;
    uint64_t io_bytes = 0;

  private:
    void check_layout(const SessionConfig& config, SessionShape shape);
    void check_streaming(const SessionConfig& config);
    void allocate_caches();
};

}  // namespace basalt
