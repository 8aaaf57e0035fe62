#include "exec/plugin-handles.hpp"

#include <algorithm>

#include "host/host-services.hpp"
#include "support/error.hpp"
#include "support/params.hpp"

namespace basalt {

BackendInstance::BackendInstance(const Component& component, const std::string& name,
                                 const std::vector<std::pair<std::string, std::string>>& params)
    : component_(component), name_(name), iface_(read_table<basalt_backend_iface>(component)) {
    size_t n_devices = 0;
    check(iface_.device_count(host_services(), &n_devices), "device_count");
    if (n_devices == 0) {
        fail(BASALT_ERR_UNSUPPORTED, "backend '{}' has no usable device{}", name_,
             plugin_error_message().empty() ? "" : ": " + plugin_error_message());
    }
    ParamsView bp(params);
    check(iface_.create(host_services(), 0, &bp.params, &instance_), "create");
}

BackendInstance::~BackendInstance() {
    if (instance_ != nullptr) iface_.destroy(instance_);
}

void BackendInstance::check(basalt_status st, const std::string& what) const {
    if (st == BASALT_OK) return;
    std::string msg = plugin_error_message();
    if (msg.empty()) msg = std::string(status_name(st));
    fail(st, "backend '{}': {}: {}", name_, what, msg);
}

DeviceBuffer::DeviceBuffer(const BackendInstance& backend, uint64_t bytes, uint32_t usage, const char* what)
    : backend_(&backend) {
    backend.check(backend.iface().buffer_alloc(backend.get(), bytes, usage, &buffer_), what);
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
        reset();
        backend_ = o.backend_;
        buffer_ = std::exchange(o.buffer_, nullptr);
    }
    return *this;
}

void DeviceBuffer::reset() {
    if (buffer_ != nullptr) backend_->iface().buffer_free(backend_->get(), buffer_);
    buffer_ = nullptr;
}

KvManager::KvManager(const Component& component, const std::string& name, const ModelHparams& hp, uint32_t n_layers,
                     uint32_t n_slots, uint32_t n_seq_max, uint32_t n_batch,
                     const std::vector<std::pair<std::string, std::string>>& params)
    : name_(name), iface_(read_table<basalt_kv_cache_iface>(component)) {
    std::vector<int32_t> windows(n_layers, 0);
    for (uint32_t il = 0; il < n_layers && il < hp.layer_sliding.size(); ++il) {
        if (hp.layer_sliding[il]) windows[il] = static_cast<int32_t>(hp.sliding_window);
    }
    basalt_kv_cache_config kc{};
    kc.struct_size = sizeof(kc);
    kc.n_layers = n_layers;
    kc.n_kv_heads = hp.n_head_kv;
    // Models with per-layer head sizes (gemma4): the smallest, so that the manager's type checks hold for every layer.
    kc.head_dim_k = hp.head_dim_k;
    kc.head_dim_v = hp.head_dim_v;
    for (uint32_t il = 0; il < n_layers; ++il) {
        kc.head_dim_k = std::min(kc.head_dim_k, hp.head_dim_k_at(il));
        kc.head_dim_v = std::min(kc.head_dim_v, hp.head_dim_v_at(il));
    }
    kc.n_slots = n_slots;
    kc.n_seq_max = n_seq_max;
    kc.layer_window = windows.data();
    kc.n_batch = n_batch;
    ParamsView kp(params);
    clear_plugin_error();
    const basalt_status st = iface_.create(host_services(), &kc, &kp.params, &instance_);
    if (st != BASALT_OK) {
        fail(st, "KV cache manager '{}': {}", name_,
             plugin_error_message().empty() ? status_name(st) : plugin_error_message());
    }
}

basalt_kv_cache_layout KvManager::read_layout() const {
    basalt_kv_cache_layout layout{};
    layout.struct_size = sizeof(layout);
    clear_plugin_error();
    if (iface_.layout(instance_, &layout) != BASALT_OK) {
        fail(BASALT_ERR_PLUGIN, "KV cache manager '{}': layout failed: {}", name_, plugin_error_message());
    }
    return layout;
}

KvManager::~KvManager() {
    if (instance_ != nullptr) iface_.destroy(instance_);
}

}  // namespace basalt
