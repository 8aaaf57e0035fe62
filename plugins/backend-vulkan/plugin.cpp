// The plugin's ABI glue: the basalt_backend_iface entry points (arguments checked, exceptions turned into a
// status by sdk::guard), the component and plugin descriptors, and basalt_plugin_init. Loading the plugin is
// cheap: the Vulkan loader, the driver (lavapipe brings LLVM, ~50 MiB resident) and the device list come in on
// the first entry point that needs a device (device_count, device_info, create), not in basalt_plugin_init.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "backend.hpp"
#include "common.hpp"

namespace basalt::vk {

namespace {

extern basalt_component_desc g_component;

// The Vulkan state, made once on first use (thread-safe); the component's description then names the devices
// (the host reads it again after device_count). The instance is destroyed by a handler registered after the
// driver came in, so it runs before the driver's own exit-time teardown when the process exits with the plugin
// still loaded (a static plugin host's destructor would reach a torn-down driver), and at unload otherwise
// (glibc runs a library's atexit handlers when it is unloaded); shutdown_global is idempotent.
const Global& ready() {
    static std::once_flag once;
    std::call_once(once, [] {
        init_global();
        g_component.description = global().description.c_str();
        std::atexit(shutdown_global);
    });
    return global();
}

Backend* as_backend(void* p) {
    if (p == nullptr) throw sdk::error(BASALT_ERR_INVALID_ARGUMENT, std::string(kLabel) + ": backend is NULL");
    return static_cast<Backend*>(p);
}

void check_range(Backend* be, basalt_buffer* b, uint64_t offset, uint64_t size, const char* what) {
    if (b == nullptr || !be->owns(b)) {
        throw sdk::error(BASALT_ERR_INVALID_ARGUMENT, std::string(kLabel) + ": " + what + ": unknown buffer");
    }
    if (offset > b->size || size > b->size - offset) {
        throw sdk::error(BASALT_ERR_INVALID_ARGUMENT,
                         std::string(kLabel) + ": " + what + " of " + std::to_string(size) + " bytes at offset " +
                             std::to_string(offset) + " exceeds the buffer's " + std::to_string(b->size) + " bytes");
    }
}

std::string no_device_message() {
    return std::string(kLabel) + ": no usable Vulkan device: " + ready().problem +
           "; install mesa-vulkan-drivers (lavapipe, a CPU implementation) or a GPU driver";
}

basalt_status vk_device_count(const basalt_host* /*host*/, size_t* out_count) {
    return sdk::guard([&] {
        if (out_count == nullptr)
            throw sdk::error(BASALT_ERR_INVALID_ARGUMENT, std::string(kLabel) + ": out_count is NULL");
        *out_count = ready().devices.size();
        // Zero devices is not an error, but the host shows the reason (it names the fix).
        if (*out_count == 0) sdk::report(BASALT_ERR_UNSUPPORTED, no_device_message().c_str());
    });
}

basalt_status vk_device_info(size_t index, basalt_device_info* out) {
    return sdk::guard([&] {
        if (out == nullptr) throw sdk::error(BASALT_ERR_INVALID_ARGUMENT, std::string(kLabel) + ": out is NULL");
        const auto& devs = ready().devices;
        if (index >= devs.size()) {
            throw sdk::error(BASALT_ERR_NOT_FOUND, std::string(kLabel) + ": device " + std::to_string(index) +
                                                       " does not exist (" + std::to_string(devs.size()) + " devices)");
        }
        const DeviceDesc& d = devs[index];
        basalt_device_info info{};
        info.struct_size = out->struct_size;
        switch (d.props.deviceType) {
            case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
                info.type = BASALT_DEVICE_GPU_INTEGRATED;
                break;
            case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
                info.type = BASALT_DEVICE_GPU_DISCRETE;
                break;
            case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
                info.type = BASALT_DEVICE_GPU_VIRTUAL;
                break;
            case VK_PHYSICAL_DEVICE_TYPE_CPU:
                info.type = BASALT_DEVICE_SOFTWARE;
                break;
            default:
                info.type = BASALT_DEVICE_OTHER;
        }
        info.name = d.name.c_str();
        info.memory_total = d.device_local_bytes;
        info.memory_free = 0;
        info.max_allocation = 0;  // buffers are split into chunks: no single-buffer limit for the host
        std::memcpy(out, &info, std::min<size_t>(out->struct_size, sizeof(info)));
    });
}

basalt_status vk_create(const basalt_host* host, size_t device, const basalt_params* params, void** out_backend) {
    return sdk::guard([&] {
        if (out_backend == nullptr) {
            throw sdk::error(BASALT_ERR_INVALID_ARGUMENT, std::string(kLabel) + ": out_backend is NULL");
        }
        sdk::params p(params, kLabel);
        p.expect_only({"device", "threads"});
        long long index = static_cast<long long>(device);
        index = p.get_int("device", index);
        const auto& devs = ready().devices;
        if (devs.empty()) throw sdk::error(BASALT_ERR_UNSUPPORTED, no_device_message());
        if (index < 0 || static_cast<size_t>(index) >= devs.size()) {
            throw sdk::error(BASALT_ERR_NOT_FOUND, std::string(kLabel) + ": device " + std::to_string(index) +
                                                       " does not exist (" + std::to_string(devs.size()) +
                                                       " devices: " + ready().description + ")");
        }
        auto be = std::make_unique<Backend>(host != nullptr ? host : sdk::host(), static_cast<size_t>(index));
        sdk::log(BASALT_LOG_DEBUG, kLabel, "created on " + devs[static_cast<size_t>(index)].summary);
        *out_backend = be.release();
    });
}

void vk_destroy(void* backend) {
    delete static_cast<Backend*>(backend);
}

basalt_status vk_buffer_alloc(void* backend, uint64_t size, uint32_t usage, basalt_buffer** out_buffer) {
    return sdk::guard([&] {
        Backend* be = as_backend(backend);
        if (out_buffer == nullptr)
            throw sdk::error(BASALT_ERR_INVALID_ARGUMENT, std::string(kLabel) + ": out_buffer is NULL");
        *out_buffer = be->alloc(size, (usage & BASALT_BUFFER_WEIGHTS) == 0);
    });
}

void vk_buffer_free(void* backend, basalt_buffer* buffer) {
    if (backend == nullptr || buffer == nullptr) return;
    static_cast<Backend*>(backend)->free(buffer);
}

basalt_status vk_buffer_write(void* backend, basalt_buffer* buffer, uint64_t offset, const void* src, uint64_t size) {
    return sdk::guard([&] {
        Backend* be = as_backend(backend);
        check_range(be, buffer, offset, size, "buffer_write");
        if (size > 0 && src == nullptr)
            throw sdk::error(BASALT_ERR_INVALID_ARGUMENT, std::string(kLabel) + ": src is NULL");
        if (size > 0) be->write(buffer, offset, src, size);
    });
}

basalt_status vk_buffer_read(void* backend, basalt_buffer* buffer, uint64_t offset, void* dst, uint64_t size) {
    return sdk::guard([&] {
        Backend* be = as_backend(backend);
        check_range(be, buffer, offset, size, "buffer_read");
        if (size > 0 && dst == nullptr)
            throw sdk::error(BASALT_ERR_INVALID_ARGUMENT, std::string(kLabel) + ": dst is NULL");
        if (size > 0) be->read(buffer, offset, dst, size);
    });
}

basalt_status vk_supports_node(void* backend, const basalt_graph* graph, size_t node, int32_t* out_supported) {
    return sdk::guard([&] {
        Backend* be = as_backend(backend);
        if (out_supported == nullptr) {
            throw sdk::error(BASALT_ERR_INVALID_ARGUMENT, std::string(kLabel) + ": out_supported is NULL");
        }
        std::string why;
        *out_supported = be->supports(graph, node, &why) ? 1 : 0;
        if (*out_supported == 0) sdk::report(BASALT_ERR_UNSUPPORTED, why.c_str());
    });
}

basalt_status vk_graph_compute(void* backend, const basalt_graph* graph) {
    return sdk::guard([&] { as_backend(backend)->compute(graph); });
}

const basalt_backend_iface kIface = {
    sizeof(basalt_backend_iface),
    0,
    vk_device_count,
    vk_device_info,
    vk_create,
    vk_destroy,
    vk_buffer_alloc,
    vk_buffer_free,
    vk_buffer_write,
    vk_buffer_read,
    vk_supports_node,
    vk_graph_compute,
    nullptr,  // buffer_wrap_host: device memory, weights are uploaded
    nullptr,  // buffer_wrap_file
};

basalt_component_desc g_component = {
    sizeof(basalt_component_desc),
    BASALT_COMPONENT_BACKEND,
    "vulkan",
    "Vulkan compute (the devices are listed once the backend is asked for them)",
    0,
    1,
    0,
    0,
    &kIface,
};

const basalt_component_desc* const kComponents[] = {&g_component};

void plugin_shutdown() {
    shutdown_global();
}

const basalt_plugin_desc kPlugin = {
    sizeof(basalt_plugin_desc),
    BASALT_ABI_VERSION_MAJOR,
    BASALT_ABI_VERSION_MINOR,
    0,
    "backend-vulkan",
    1,
    kComponents,
    plugin_shutdown,
};

}  // namespace
}  // namespace basalt::vk

BASALT_PLUGIN_INIT {
    const basalt_status st =
        basalt::sdk::init_plugin(host_abi_major, host_abi_minor, host, &basalt::vk::kPlugin, out_desc);
    if (st != BASALT_OK) return st;
    return BASALT_OK;
}
