// RAII handles for what a session makes through plugin tables: a backend instance, a buffer of it, a KV-cache
// manager instance. Each frees what it holds in its destructor (a buffer before its instance: declare it after).
// Not thread-safe: one session's thread uses them.
#pragma once

#include <basalt/plugin_backend.h>
#include <basalt/plugin_kv_cache.h>

#include <string>
#include <utility>
#include <vector>

#include "host/plugin-host.hpp"
#include "model/model-hparams.hpp"

namespace basalt {

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

}  // namespace basalt
