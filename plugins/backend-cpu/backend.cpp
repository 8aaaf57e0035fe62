// backend-cpu: the plugin's table. Device enumeration, instance create/destroy (threads, ISA), buffers, and the
// graph entry points; the work itself lives in graph.cpp and ops-*.cpp.
#include <basalt/plugin_backend.h>
#include <basalt/sdk/plugin.hpp>

#include <sys/sysinfo.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "graph.hpp"

namespace basalt::cpu {
namespace {

constexpr const char* kLabel = "backend 'cpu'";

const std::string& cpu_model_name() {
    static const std::string name = [] {
        std::ifstream f("/proc/cpuinfo");
        std::string line;
        while (std::getline(f, line)) {
            if (line.rfind("model name", 0) == 0) {
                const auto colon = line.find(':');
                if (colon != std::string::npos) {
                    std::string v = line.substr(colon + 1);
                    const auto b = v.find_first_not_of(" \t");
                    if (b != std::string::npos) return v.substr(b);
                }
            }
        }
        return std::string("cpu");
    }();
    return name;
}

// MemAvailable from /proc/meminfo (free + reclaimable), or sysinfo's free + buffers where it is missing.
uint64_t available_memory() {
    std::ifstream f("/proc/meminfo");
    std::string key;
    uint64_t kib = 0;
    std::string unit;
    while (f >> key >> kib >> unit) {
        if (key == "MemAvailable:") return kib << 10;
    }
    struct sysinfo si {};
    if (sysinfo(&si) != 0) return 0;
    return static_cast<uint64_t>(si.freeram + si.bufferram) * si.mem_unit;
}

Backend* as_backend(void* p) {
    if (p == nullptr) throw sdk::error(BASALT_ERR_INVALID_ARGUMENT, std::string(kLabel) + ": backend is NULL");
    return static_cast<Backend*>(p);
}

void check_buffer(Backend* be, basalt_buffer* b, uint64_t offset, uint64_t size, const char* what) {
    if (b == nullptr || be->buffers.count(b) == 0) {
        throw sdk::error(BASALT_ERR_INVALID_ARGUMENT, std::string(kLabel) + ": " + what + ": unknown buffer");
    }
    if (offset > b->size || size > b->size - offset) {
        throw sdk::error(BASALT_ERR_INVALID_ARGUMENT,
                         std::string(kLabel) + ": " + what + " of " + std::to_string(size) + " bytes at offset " +
                             std::to_string(offset) + " exceeds the buffer's " + std::to_string(b->size) + " bytes");
    }
}

basalt_status cpu_device_count(const basalt_host* /*host*/, size_t* out_count) {
    return sdk::guard([&] {
        if (out_count == nullptr) throw sdk::error(BASALT_ERR_INVALID_ARGUMENT, "backend 'cpu': out_count is NULL");
        *out_count = 1;
    });
}

basalt_status cpu_device_info(size_t index, basalt_device_info* out) {
    return sdk::guard([&] {
        if (out == nullptr) throw sdk::error(BASALT_ERR_INVALID_ARGUMENT, "backend 'cpu': out is NULL");
        if (index != 0) {
            throw sdk::error(BASALT_ERR_NOT_FOUND,
                             "backend 'cpu': device " + std::to_string(index) + " does not exist (1 device)");
        }
        struct sysinfo si {};
        uint64_t total = 0;
        uint64_t avail = 0;
        if (sysinfo(&si) == 0) {
            total = static_cast<uint64_t>(si.totalram) * si.mem_unit;
            avail = static_cast<uint64_t>(si.freeram + si.bufferram) * si.mem_unit;
        }
        basalt_device_info info{};
        info.struct_size = out->struct_size;
        info.type = BASALT_DEVICE_CPU;
        info.name = cpu_model_name().c_str();
        info.memory_total = total;
        info.memory_free = avail;
        info.max_allocation = 0;
        const size_t n = std::min<size_t>(out->struct_size, sizeof(info));
        std::memcpy(out, &info, n);
    });
}

basalt_status cpu_create(const basalt_host* host, size_t device, const basalt_params* params, void** out_backend) {
    return sdk::guard([&] {
        if (out_backend == nullptr) throw sdk::error(BASALT_ERR_INVALID_ARGUMENT, "backend 'cpu': out_backend is NULL");
        if (device != 0) {
            throw sdk::error(BASALT_ERR_NOT_FOUND,
                             "backend 'cpu': device " + std::to_string(device) + " does not exist (1 device)");
        }
        sdk::params p(params, kLabel);
        p.expect_only({"threads", "isa", "device", "repack", "repack_limit", "profile", "attn_blocks"});
        if (const long long d = p.get_int("device", 0); d != 0) {
            throw sdk::error(BASALT_ERR_NOT_FOUND,
                             "backend 'cpu': device " + std::to_string(d) + " does not exist (1 device)");
        }
        const long long hw = std::max(1u, std::thread::hardware_concurrency());
        const long long threads = p.get_int("threads", hw);
        if (threads < 1 || threads > 1024) {
            p.bad("threads", *p.find("threads"), "a thread count in 1..1024");
        }
        if (threads > hw) {
            sdk::log(BASALT_LOG_WARN, kLabel,
                     "threads " + std::to_string(threads) + " is above the " + std::to_string(hw) +
                         " cores of this machine: expect it slower than " + std::to_string(hw) +
                         " threads (the pool yields instead of spinning)");
        }
        std::string isa = "auto";
        if (const char* env = std::getenv("BASALT_CPU_ISA"); env != nullptr && *env != '\0') isa = env;
        if (auto v = p.find("isa")) isa = std::string(*v);
        auto be = std::make_unique<Backend>();
        be->host = host != nullptr ? host : sdk::host();
        be->kernels = select_kernels(isa);
        be->arena = std::make_unique<Arena>(be->host);
        be->pool = std::make_unique<ThreadPool>(static_cast<int>(threads));
        // Packed copies may use up to repack_limit MiB; by default half the memory available now.
        uint64_t limit = available_memory() / 2;
        if (p.find("repack_limit")) {
            const long long mib = p.get_int("repack_limit", 0);
            if (mib < 0) p.bad("repack_limit", *p.find("repack_limit"), "a size in MiB (0 or more)");
            limit = static_cast<uint64_t>(mib) << 20;
        }
        be->packs = std::make_unique<PackCache>(limit);
        if (!p.get_bool("attn_blocks", true)) {  // the per-row attention helpers only (same floats; for tests)
            be->kernels.attn_scores_f32 = nullptr;
            be->kernels.attn_scores_f16 = nullptr;
            be->kernels.attn_accum_f32 = nullptr;
            be->kernels.attn_accum_f16 = nullptr;
        }
        be->repack = p.get_bool("repack", true) && be->kernels.packed_q8_0 != nullptr;
        const char* prof_env = std::getenv("BASALT_CPU_PROFILE");
        be->profile = p.get_bool("profile", prof_env != nullptr && std::string(prof_env) == "1");
        sdk::log(BASALT_LOG_DEBUG, kLabel,
                 "created: " + std::to_string(threads) + " threads, kernels " + be->kernels.isa +
                     (be->repack ? std::string(", Q8_0") + (be->kernels.packed_q4_0_cols != nullptr ? ", Q4_0" : "") +
                                       (be->kernels.packed_mxfp4_cols != nullptr ? ", MXFP4" : "") +
                                       " weights repacked (MATMUL and MOE_MATMUL)"
                                 : std::string()));
        *out_backend = be.release();
    });
}

void cpu_destroy(void* backend) {
    if (backend == nullptr) return;
    auto* be = static_cast<Backend*>(backend);
    if (be->profile) be->prof.print("cpu");
    be->packs.reset();
    for (basalt_buffer* b : be->buffers) {
        if (b->owned) aligned_free_bytes(be->host, b->data);
        delete b;
    }
    delete be;
}

basalt_status cpu_buffer_alloc(void* backend, uint64_t size, uint32_t usage, basalt_buffer** out_buffer) {
    return sdk::guard([&] {
        Backend* be = as_backend(backend);
        if (out_buffer == nullptr) throw sdk::error(BASALT_ERR_INVALID_ARGUMENT, "backend 'cpu': out_buffer is NULL");
        auto b = std::make_unique<basalt_buffer>();
        b->data = static_cast<uint8_t*>(aligned_alloc_bytes(be->host, size));
        b->size = size;
        b->owned = true;
        b->usage = usage;
        be->buffers.insert(b.get());
        ++be->buffers_epoch;
        *out_buffer = b.release();
    });
}

void cpu_buffer_free(void* backend, basalt_buffer* buffer) {
    if (backend == nullptr || buffer == nullptr) return;
    auto* be = static_cast<Backend*>(backend);
    if (be->buffers.erase(buffer) == 0) return;
    ++be->buffers_epoch;
    be->packs->drop(buffer);
    if (buffer->owned) aligned_free_bytes(be->host, buffer->data);
    delete buffer;
}

basalt_status cpu_buffer_write(void* backend, basalt_buffer* buffer, uint64_t offset, const void* src, uint64_t size) {
    return sdk::guard([&] {
        Backend* be = as_backend(backend);
        check_buffer(be, buffer, offset, size, "buffer_write");
        if (buffer->read_only) {
            throw sdk::error(BASALT_ERR_INVALID_ARGUMENT, "backend 'cpu': buffer_write into a wrapped host buffer");
        }
        if (size > 0 && src == nullptr) throw sdk::error(BASALT_ERR_INVALID_ARGUMENT, "backend 'cpu': src is NULL");
        be->packs->drop(buffer);
        if (size > 0) std::memcpy(buffer->data + offset, src, static_cast<size_t>(size));
    });
}

basalt_status cpu_buffer_read(void* backend, basalt_buffer* buffer, uint64_t offset, void* dst, uint64_t size) {
    return sdk::guard([&] {
        Backend* be = as_backend(backend);
        check_buffer(be, buffer, offset, size, "buffer_read");
        if (size > 0 && dst == nullptr) throw sdk::error(BASALT_ERR_INVALID_ARGUMENT, "backend 'cpu': dst is NULL");
        if (size > 0) std::memcpy(dst, buffer->data + offset, static_cast<size_t>(size));
    });
}

basalt_status wrap(void* backend, const void* ptr, uint64_t size, basalt_buffer** out_buffer, bool file) {
    return sdk::guard([&] {
        Backend* be = as_backend(backend);
        if (out_buffer == nullptr || (ptr == nullptr && size > 0)) {
            throw sdk::error(BASALT_ERR_INVALID_ARGUMENT, std::string("backend 'cpu': ") +
                                                              (file ? "buffer_wrap_file" : "buffer_wrap_host") +
                                                              " needs ptr and out_buffer");
        }
        auto b = std::make_unique<basalt_buffer>();
        // Read-only by contract: graph outputs and buffer_write refuse it, so the cast never leads to a write.
        b->data = static_cast<uint8_t*>(const_cast<void*>(ptr));
        b->size = size;
        b->owned = false;
        b->read_only = true;
        b->file_pages = file;
        be->buffers.insert(b.get());
        ++be->buffers_epoch;
        *out_buffer = b.release();
    });
}

basalt_status cpu_buffer_wrap_host(void* backend, const void* ptr, uint64_t size, basalt_buffer** out_buffer) {
    return wrap(backend, ptr, size, out_buffer, false);
}

basalt_status cpu_buffer_wrap_file(void* backend, const void* ptr, uint64_t size, basalt_buffer** out_buffer) {
    return wrap(backend, ptr, size, out_buffer, true);
}

basalt_status cpu_supports_node(void* backend, const basalt_graph* graph, size_t node, int32_t* out_supported) {
    return sdk::guard([&] {
        Backend* be = as_backend(backend);
        if (out_supported == nullptr) {
            throw sdk::error(BASALT_ERR_INVALID_ARGUMENT, "backend 'cpu': out_supported is NULL");
        }
        *out_supported = graph_supports_node(*be, graph, node, nullptr) ? 1 : 0;
    });
}

basalt_status cpu_graph_compute(void* backend, const basalt_graph* graph) {
    return sdk::guard([&] { graph_compute(*as_backend(backend), graph); });
}

const basalt_backend_iface kIface = {
    sizeof(basalt_backend_iface),
    0,
    cpu_device_count,
    cpu_device_info,
    cpu_create,
    cpu_destroy,
    cpu_buffer_alloc,
    cpu_buffer_free,
    cpu_buffer_write,
    cpu_buffer_read,
    cpu_supports_node,
    cpu_graph_compute,
    cpu_buffer_wrap_host,
    cpu_buffer_wrap_file,
};

const basalt_component_desc kComponent = {
    sizeof(basalt_component_desc),
    BASALT_COMPONENT_BACKEND,
    "cpu",
    "host CPU: F32 reference numerics, quantized matmul on blocks, scalar/AVX2/AVX-512 kernels",
    1,
    0,
    0,
    0,
    &kIface,
};

const basalt_component_desc* const kComponents[] = {&kComponent};

const basalt_plugin_desc kPlugin = {
    sizeof(basalt_plugin_desc),
    BASALT_ABI_VERSION_MAJOR,
    BASALT_ABI_VERSION_MINOR,
    0,
    "backend-cpu",
    1,
    kComponents,
    nullptr,
};

}  // namespace
}  // namespace basalt::cpu

BASALT_PLUGIN_INIT {
    return basalt::sdk::init_plugin(host_abi_major, host_abi_minor, host, &basalt::cpu::kPlugin, out_desc);
}
