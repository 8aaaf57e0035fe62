// backend-vulkan: device, buffers (chunked, staged), pipelines, and graph recording/submission; the ops'
// checks and dispatches live in ops.cpp. One command buffer per graph: every node's dispatches are recorded
// with a compute->compute barrier between them, submitted once, and waited for.
#include "backend.hpp"

#include <basalt/blocks/dtype.hpp>
#include <basalt/sdk/arena-plan.hpp>
#include <basalt/sdk/op-contracts.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

namespace basalt::vk {

struct ShaderBlob {
    const char* name;
    const uint32_t* words;
    size_t size;
};
extern const ShaderBlob kShaders[];
extern const size_t kShaderCount;

namespace {

constexpr const char* kLabel = "backend 'vulkan'";
constexpr uint32_t kBindings = 8;
constexpr uint64_t kStagingBytes = 16u << 20;
constexpr uint64_t kArenaAlign = 256;
constexpr size_t kMaxRecordings = 8;  // command buffers kept per backend instance (least recently used evicted)

[[noreturn]] void vk_fail(const std::string& what, VkResult r) {
    const basalt_status st = r == VK_ERROR_OUT_OF_HOST_MEMORY || r == VK_ERROR_OUT_OF_DEVICE_MEMORY
                                 ? BASALT_ERR_OUT_OF_MEMORY
                                 : BASALT_ERR_INTERNAL;
    throw sdk::error(
        st, std::string(kLabel) + ": " + what + " failed (VkResult " + std::to_string(static_cast<int>(r)) + ")");
}

void vk_check(VkResult r, const char* what) {
    if (r != VK_SUCCESS) vk_fail(what, r);
}

uint64_t env_u64(const char* name, uint64_t fallback) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') return fallback;
    char* end = nullptr;
    const unsigned long long x = std::strtoull(v, &end, 10);
    return end != nullptr && *end == '\0' && x > 0 ? x : fallback;
}

// A boolean switch from the environment: unset or empty gives `fallback`, "0" false, anything else true.
bool env_flag(const char* name, bool fallback) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') return fallback;
    return std::strcmp(v, "0") != 0;
}

std::string node_name(const basalt_graph_node* n, size_t index) {
    if (n != nullptr && n->name != nullptr) return n->name;
    return "#" + std::to_string(index);
}

[[noreturn]] void fail_node(const basalt_graph_node* n, size_t index, basalt_status st, const std::string& what) {
    const std::string op = n != nullptr ? op_name(n->op) : "?";
    throw sdk::error(st, std::string(kLabel) + ": node '" + node_name(n, index) + "' (" + op + "): " + what);
}

}  // namespace

std::string type_name(basalt_dtype t) {
    return sdk::type_label(t);
}

bool type_readable(basalt_dtype t) noexcept {
    switch (t) {
        case BASALT_DTYPE_F32:
        case BASALT_DTYPE_F16:
        case BASALT_DTYPE_BF16:
        case BASALT_DTYPE_Q8_0:
        case BASALT_DTYPE_Q4_0:
        case BASALT_DTYPE_Q4_1:
        case BASALT_DTYPE_Q5_0:
        case BASALT_DTYPE_Q5_1:
        case BASALT_DTYPE_Q2_K:
        case BASALT_DTYPE_Q3_K:
        case BASALT_DTYPE_Q4_K:
        case BASALT_DTYPE_Q5_K:
        case BASALT_DTYPE_Q6_K:
            return true;
        default:
            return false;
    }
}

// ---------------------------------------------------------------------------------------------------------
// Device

Backend::Backend(const basalt_host* host, size_t device)
    : host_(host), a_(global().api), desc_(global().devices.at(device)) {
    const float prio = 1.0f;
    VkDeviceQueueCreateInfo qi{};
    qi.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
    qi.queueFamilyIndex = desc_.queue_family;
    qi.queueCount = 1;
    qi.pQueuePriorities = &prio;
    VkDeviceCreateInfo di{};
    di.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
    di.queueCreateInfoCount = 1;
    di.pQueueCreateInfos = &qi;
    vk_check(a_.vkCreateDevice(desc_.phys, &di, nullptr, &dev_), "vkCreateDevice");
    try {
        a_.vkGetDeviceQueue(dev_, desc_.queue_family, 0, &queue_);
        a_.vkGetPhysicalDeviceMemoryProperties(desc_.phys, &mem_);
        // Fills one extension properties struct chained to VkPhysicalDeviceProperties2.
        const auto query_props = [&](void* ext) {
            VkPhysicalDeviceProperties2 p2{};
            p2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
            p2.pNext = ext;
            a_.vkGetPhysicalDeviceProperties2(desc_.phys, &p2);
        };
        VkPhysicalDeviceMaintenance3Properties m3{};
        m3.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES;
        query_props(&m3);
        const VkPhysicalDeviceLimits& lim = desc_.props.limits;
        max_alloc_ = m3.maxMemoryAllocationSize;
        max_range_ = lim.maxStorageBufferRange;
        offset_align_ = std::max<uint64_t>(16, lim.minStorageBufferOffsetAlignment);
        // BASALT_VK_MAX_CHUNK (bytes) forces small chunks, to test the splitting on any device.
        chunk_cap_ = std::min<uint64_t>(max_alloc_, uint64_t{1} << 30);
        chunk_cap_ = std::min(chunk_cap_, env_u64("BASALT_VK_MAX_CHUNK", chunk_cap_));
        chunk_cap_ = std::max<uint64_t>(chunk_cap_ / 256 * 256, 4096);
        max_range_ = std::min(max_range_, env_u64("BASALT_VK_MAX_RANGE", max_range_)) / 16 * 16;
        subgroup_ = std::clamp<uint32_t>(desc_.subgroup_size, 4, 128);
        row_wg_ = std::clamp<uint32_t>(subgroup_, 8, std::min<uint32_t>(64, lim.maxComputeWorkGroupSize[0]));

        // A fixed subgroup size (VK_EXT_subgroup_size_control: min == max) equal to the row workgroup: one subgroup
        // per workgroup. BASALT_VK_ONE_SUBGROUP=0 forces the barrier reductions (tests cover both).
        uint32_t n_ext = 0;
        a_.vkEnumerateDeviceExtensionProperties(desc_.phys, nullptr, &n_ext, nullptr);
        std::vector<VkExtensionProperties> exts(n_ext);
        if (n_ext > 0) a_.vkEnumerateDeviceExtensionProperties(desc_.phys, nullptr, &n_ext, exts.data());
        for (uint32_t i = 0; i < n_ext; ++i) {
            if (std::strcmp(exts[i].extensionName, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME) != 0) continue;
            VkPhysicalDeviceSubgroupSizeControlPropertiesEXT sc{};
            sc.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES_EXT;
            query_props(&sc);
            one_subgroup_ = sc.minSubgroupSize == sc.maxSubgroupSize && sc.maxSubgroupSize == row_wg_;
        }
        if (!env_flag("BASALT_VK_ONE_SUBGROUP", true)) one_subgroup_ = false;
        fusion_ = env_flag("BASALT_VK_FUSE", true);  // BASALT_VK_FUSE=0: one dispatch per node (debugging)

        VkDescriptorSetLayoutBinding b[kBindings]{};
        for (uint32_t i = 0; i < kBindings; ++i) {
            b[i].binding = i;
            b[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
            b[i].descriptorCount = 1;
            b[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
        }
        VkDescriptorSetLayoutCreateInfo li{};
        li.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
        li.bindingCount = kBindings;
        li.pBindings = b;
        vk_check(a_.vkCreateDescriptorSetLayout(dev_, &li, nullptr, &set_layout_), "vkCreateDescriptorSetLayout");
        VkPushConstantRange pr{VK_SHADER_STAGE_COMPUTE_BIT, 0, 128};
        VkPipelineLayoutCreateInfo pi{};
        pi.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
        pi.setLayoutCount = 1;
        pi.pSetLayouts = &set_layout_;
        pi.pushConstantRangeCount = 1;
        pi.pPushConstantRanges = &pr;
        vk_check(a_.vkCreatePipelineLayout(dev_, &pi, nullptr, &layout_), "vkCreatePipelineLayout");
        load_pipeline_cache();
        VkCommandPoolCreateInfo cp{};
        cp.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
        cp.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
        cp.queueFamilyIndex = desc_.queue_family;
        vk_check(a_.vkCreateCommandPool(dev_, &cp, nullptr, &pool_), "vkCreateCommandPool");
        VkCommandBufferAllocateInfo ca{};
        ca.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
        ca.commandPool = pool_;
        ca.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
        ca.commandBufferCount = 1;
        vk_check(a_.vkAllocateCommandBuffers(dev_, &ca, &cmd_), "vkAllocateCommandBuffers");
        VkFenceCreateInfo fi{};
        fi.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
        vk_check(a_.vkCreateFence(dev_, &fi, nullptr, &fence_), "vkCreateFence");
        make_chunk(dummy_, 256, false);
        profile_ = env_flag("BASALT_VK_PROFILE", false);
        reuse_ = env_flag("BASALT_VK_REUSE", true);
        attention_keys_ = env_flag("BASALT_VK_ATTENTION_KEYS", true);
        stats_ = env_flag("BASALT_VK_STATS", false);
    } catch (...) {
        this->~Backend();
        throw;
    }
}

Backend::~Backend() {
    if (dev_ == VK_NULL_HANDLE) return;
    for (basalt_buffer* b : buffers_) {
        for (auto& c : b->chunks) destroy_chunk(c);
        delete b;
    }
    buffers_.clear();
    forget_recordings();
    destroy_recording(scratch_);
    destroy_chunk(arena_);
    destroy_chunk(staging_);
    destroy_chunk(dummy_);
    save_pipeline_cache();
    for (auto& [k, p] : pipelines_) a_.vkDestroyPipeline(dev_, p, nullptr);
    pipelines_.clear();
    if (queries_ != VK_NULL_HANDLE) a_.vkDestroyQueryPool(dev_, queries_, nullptr);
    if (fence_ != VK_NULL_HANDLE) a_.vkDestroyFence(dev_, fence_, nullptr);
    if (pool_ != VK_NULL_HANDLE) a_.vkDestroyCommandPool(dev_, pool_, nullptr);
    if (cache_ != VK_NULL_HANDLE) a_.vkDestroyPipelineCache(dev_, cache_, nullptr);
    if (layout_ != VK_NULL_HANDLE) a_.vkDestroyPipelineLayout(dev_, layout_, nullptr);
    if (set_layout_ != VK_NULL_HANDLE) a_.vkDestroyDescriptorSetLayout(dev_, set_layout_, nullptr);
    a_.vkDestroyDevice(dev_, nullptr);
    dev_ = VK_NULL_HANDLE;
    if (stats_ || profile_) {
        std::fprintf(stderr, "[vulkan] %llu graphs: %llu command buffers recorded, %llu graphs replayed from one\n",
                     static_cast<unsigned long long>(n_graphs_), static_cast<unsigned long long>(n_recorded_),
                     static_cast<unsigned long long>(n_replayed_));
    }
    if (profile_ && !profile_totals_.empty()) {
        std::vector<std::pair<std::string, std::pair<double, int>>> rows(profile_totals_.begin(),
                                                                         profile_totals_.end());
        std::sort(rows.begin(), rows.end(),
                  [](const auto& x, const auto& y) { return x.second.first > y.second.first; });
        double total = 0;
        for (const auto& r : rows) total += r.second.first;
        std::fprintf(stderr, "[vulkan profile] %llu graphs, %.3f ms GPU time in nodes\n",
                     static_cast<unsigned long long>(profile_graphs_), total * 1e-6);
        for (const auto& r : rows) {
            std::fprintf(stderr, "[vulkan profile] %-12s %8d nodes %10.3f ms %6.1f %%  %8.1f us/node\n",
                         r.first.c_str(), r.second.second, r.second.first * 1e-6,
                         total > 0 ? 100.0 * r.second.first / total : 0.0,
                         r.second.second > 0 ? r.second.first * 1e-3 / r.second.second : 0.0);
        }
    }
}

uint32_t Backend::memory_type(uint32_t bits, VkMemoryPropertyFlags want) const {
    for (uint32_t i = 0; i < mem_.memoryTypeCount; ++i) {
        if ((bits & (1u << i)) != 0 && (mem_.memoryTypes[i].propertyFlags & want) == want) return i;
    }
    return UINT32_MAX;
}

void Backend::make_chunk(basalt_buffer::Chunk& c, uint64_t size, bool prefer_host) {
    size = std::max<uint64_t>(16, (size + 15) / 16 * 16);
    VkBufferCreateInfo bi{};
    bi.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
    bi.size = size;
    bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    vk_check(a_.vkCreateBuffer(dev_, &bi, nullptr, &c.buf), "vkCreateBuffer");
    VkMemoryRequirements req{};
    a_.vkGetBufferMemoryRequirements(dev_, c.buf, &req);
    const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    const VkMemoryPropertyFlags local = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    std::vector<VkMemoryPropertyFlags> order = prefer_host
                                                   ? std::vector<VkMemoryPropertyFlags>{host}
                                                   : std::vector<VkMemoryPropertyFlags>{local | host, local, host};
    VkResult last = VK_ERROR_OUT_OF_DEVICE_MEMORY;
    for (VkMemoryPropertyFlags want : order) {
        const uint32_t type = memory_type(req.memoryTypeBits, want);
        if (type == UINT32_MAX) continue;
        VkMemoryAllocateInfo ai{};
        ai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
        ai.allocationSize = req.size;
        ai.memoryTypeIndex = type;
        last = a_.vkAllocateMemory(dev_, &ai, nullptr, &c.mem);
        if (last != VK_SUCCESS) {
            c.mem = VK_NULL_HANDLE;
            continue;
        }
        vk_check(a_.vkBindBufferMemory(dev_, c.buf, c.mem, 0), "vkBindBufferMemory");
        if ((mem_.memoryTypes[type].propertyFlags & host) == host) {
            void* p = nullptr;
            vk_check(a_.vkMapMemory(dev_, c.mem, 0, VK_WHOLE_SIZE, 0, &p), "vkMapMemory");
            c.mapped = static_cast<uint8_t*>(p);
        }
        c.size = size;
        return;
    }
    a_.vkDestroyBuffer(dev_, c.buf, nullptr);
    c.buf = VK_NULL_HANDLE;
    vk_fail("allocating " + std::to_string(size) + " bytes of device memory", last);
}

void Backend::destroy_chunk(basalt_buffer::Chunk& c) {
    if (c.buf != VK_NULL_HANDLE) a_.vkDestroyBuffer(dev_, c.buf, nullptr);
    if (c.mem != VK_NULL_HANDLE) a_.vkFreeMemory(dev_, c.mem, nullptr);
    c = basalt_buffer::Chunk{};
}

basalt_buffer* Backend::alloc(uint64_t size, bool single_chunk) {
    auto b = std::make_unique<basalt_buffer>();
    b->size = size;
    if (size <= chunk_cap_) {
        b->chunks.resize(1);
    } else {
        if (single_chunk) {
            throw sdk::error(BASALT_ERR_OUT_OF_MEMORY, std::string(kLabel) + ": a buffer of " + std::to_string(size) +
                                                           " bytes exceeds the device's largest allocation of " +
                                                           std::to_string(chunk_cap_) + " bytes");
        }
        // Chunks of chunk_cap_ bytes starting every 3/4 chunk: a tensor up to a quarter chunk never straddles.
        const uint64_t step = chunk_cap_ / 4 * 3 / 256 * 256;
        for (uint64_t begin = 0;; begin += step) {
            basalt_buffer::Chunk c;
            c.begin = begin;
            b->chunks.push_back(c);
            if (begin + chunk_cap_ >= size) break;
        }
    }
    try {
        for (auto& c : b->chunks) {
            const uint64_t begin = c.begin;
            make_chunk(c, std::min(chunk_cap_, size - begin), false);
            c.begin = begin;
        }
    } catch (...) {
        for (auto& c : b->chunks) destroy_chunk(c);
        throw;
    }
    buffers_.insert(b.get());
    return b.release();
}

void Backend::free(basalt_buffer* b) {
    if (buffers_.erase(b) == 0) return;
    forget_recordings();  // they may bind it (and a new buffer may come at the same address)
    for (auto& c : b->chunks) destroy_chunk(c);
    delete b;
}

void Backend::begin_commands(VkCommandBuffer cmd, bool one_time) {
    vk_check(a_.vkResetCommandBuffer(cmd, 0), "vkResetCommandBuffer");
    VkCommandBufferBeginInfo bi{};
    bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
    bi.flags = one_time ? VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT : 0;
    vk_check(a_.vkBeginCommandBuffer(cmd, &bi), "vkBeginCommandBuffer");
}

// Submits a recorded (ended) command buffer and waits for it.
void Backend::submit_and_wait(VkCommandBuffer cmd) {
    VkSubmitInfo si{};
    si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cmd;
    vk_check(a_.vkResetFences(dev_, 1, &fence_), "vkResetFences");
    vk_check(a_.vkQueueSubmit(queue_, 1, &si, fence_), "vkQueueSubmit");
    vk_check(a_.vkWaitForFences(dev_, 1, &fence_, VK_TRUE, UINT64_MAX), "vkWaitForFences");
}

void Backend::staging_copy(const basalt_buffer::Chunk& c, uint64_t off, uint8_t* host, uint64_t size, bool upload) {
    if (staging_.buf == VK_NULL_HANDLE) make_chunk(staging_, kStagingBytes, true);
    for (uint64_t done = 0; done < size;) {
        const uint64_t n = std::min(kStagingBytes, size - done);
        if (upload) std::memcpy(staging_.mapped, host + done, n);
        begin_commands(cmd_, true);
        VkBufferCopy region{};
        region.srcOffset = upload ? 0 : off + done;
        region.dstOffset = upload ? off + done : 0;
        region.size = n;
        a_.vkCmdCopyBuffer(cmd_, upload ? staging_.buf : c.buf, upload ? c.buf : staging_.buf, 1, &region);
        vk_check(a_.vkEndCommandBuffer(cmd_), "vkEndCommandBuffer");
        submit_and_wait(cmd_);
        if (!upload) std::memcpy(host + done, staging_.mapped, n);
        done += n;
    }
}

void Backend::write(basalt_buffer* b, uint64_t offset, const void* src, uint64_t size) {
    auto* s = static_cast<uint8_t*>(const_cast<void*>(src));  // staging_copy only reads it when uploading
    for (auto& c : b->chunks) {
        const uint64_t lo = std::max(offset, c.begin);
        const uint64_t hi = std::min(offset + size, c.begin + std::min(c.size, b->size - c.begin));
        if (lo >= hi) continue;
        if (c.mapped != nullptr) {
            std::memcpy(c.mapped + (lo - c.begin), s + (lo - offset), hi - lo);
        } else {
            staging_copy(c, lo - c.begin, s + (lo - offset), hi - lo, true);
        }
    }
    check_validation("buffer_write");
}

void Backend::read(basalt_buffer* b, uint64_t offset, void* dst, uint64_t size) {
    auto* d = static_cast<uint8_t*>(dst);
    uint64_t pos = offset;
    const uint64_t end = offset + size;
    for (auto& c : b->chunks) {
        const uint64_t cend = c.begin + std::min(c.size, b->size - c.begin);
        if (pos >= end) break;
        if (pos < c.begin || pos >= cend) continue;
        const uint64_t hi = std::min(end, cend);
        if (c.mapped != nullptr) {
            std::memcpy(d + (pos - offset), c.mapped + (pos - c.begin), hi - pos);
        } else {
            staging_copy(c, pos - c.begin, d + (pos - offset), hi - pos, false);
        }
        pos = hi;
    }
    check_validation("buffer_read");
}

// ---------------------------------------------------------------------------------------------------------
// Pipelines and dispatches

// The VkPipelineCache lives in $XDG_CACHE_HOME/basalt (else ~/.cache/basalt), one file per device model;
// BASALT_VK_PIPELINE_CACHE=0 turns it off. A missing, foreign or unreadable file means an empty cache, and
// failing to write it is ignored: the cache only saves pipeline compile time.
void Backend::load_pipeline_cache() {
    std::string dir;
    if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != '\0') {
        dir = std::string(x) + "/basalt";
    } else if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0') {
        dir = std::string(h) + "/.cache/basalt";
    }
    if (!env_flag("BASALT_VK_PIPELINE_CACHE", true)) dir.clear();
    std::vector<char> data;
    const VkPhysicalDeviceProperties& pr = desc_.props;
    if (!dir.empty()) {
        char name[64];
        std::snprintf(name, sizeof(name), "vulkan-pipelines-%08x-%08x.bin", pr.vendorID, pr.deviceID);
        cache_path_ = dir + "/" + name;
        std::ifstream f(cache_path_, std::ios::binary);
        if (f) data.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
        // VkPipelineCacheHeaderVersionOne: header size, version 1, vendor, device, pipelineCacheUUID.
        uint32_t head[4] = {};
        if (data.size() >= 32) std::memcpy(head, data.data(), sizeof(head));
        if (data.size() < 32 || head[0] < 32 || head[1] != VK_PIPELINE_CACHE_HEADER_VERSION_ONE ||
            head[2] != pr.vendorID || head[3] != pr.deviceID ||
            std::memcmp(data.data() + 16, pr.pipelineCacheUUID, VK_UUID_SIZE) != 0) {
            data.clear();
        }
    }
    VkPipelineCacheCreateInfo ci{};
    ci.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO;
    ci.initialDataSize = data.size();
    ci.pInitialData = data.empty() ? nullptr : data.data();
    if (a_.vkCreatePipelineCache(dev_, &ci, nullptr, &cache_) != VK_SUCCESS) {
        ci.initialDataSize = 0;
        ci.pInitialData = nullptr;
        vk_check(a_.vkCreatePipelineCache(dev_, &ci, nullptr, &cache_), "vkCreatePipelineCache");
    }
}

void Backend::save_pipeline_cache() noexcept {
    if (cache_ == VK_NULL_HANDLE || cache_path_.empty() || pipelines_.size() == cache_loaded_) return;
    try {
        size_t size = 0;
        if (a_.vkGetPipelineCacheData(dev_, cache_, &size, nullptr) != VK_SUCCESS || size == 0) return;
        std::vector<char> data(size);
        if (a_.vkGetPipelineCacheData(dev_, cache_, &size, data.data()) != VK_SUCCESS) return;
        namespace fs = std::filesystem;
        std::error_code ec;
        fs::create_directories(fs::path(cache_path_).parent_path(), ec);
        // Written aside and renamed: a concurrent reader sees the old file or the new one, never a torn one.
        const std::string tmp = cache_path_ + ".tmp" + std::to_string(reinterpret_cast<uintptr_t>(this));
        {
            std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
            if (!f) return;
            f.write(data.data(), static_cast<std::streamsize>(size));
            if (!f) {
                f.close();
                fs::remove(tmp, ec);
                return;
            }
        }
        fs::rename(tmp, cache_path_, ec);
        if (ec) fs::remove(tmp, ec);
        cache_loaded_ = pipelines_.size();
    } catch (...) {
        // Best effort only.
    }
}

VkPipeline Backend::pipeline(const char* shader, uint32_t wg) {
    const auto key = std::make_pair(std::string(shader), wg);
    if (auto it = pipelines_.find(key); it != pipelines_.end()) return it->second;
    const ShaderBlob* blob = nullptr;
    for (size_t i = 0; i < kShaderCount; ++i) {
        if (std::strcmp(kShaders[i].name, shader) == 0) blob = &kShaders[i];
    }
    if (blob == nullptr) {
        throw sdk::error(BASALT_ERR_INTERNAL, std::string(kLabel) + ": no embedded shader '" + shader + "'");
    }
    VkShaderModuleCreateInfo mi{};
    mi.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
    mi.codeSize = blob->size;
    mi.pCode = blob->words;
    VkShaderModule mod = VK_NULL_HANDLE;
    vk_check(a_.vkCreateShaderModule(dev_, &mi, nullptr, &mod), "vkCreateShaderModule");
    VkSpecializationMapEntry entry{0, 0, sizeof(uint32_t)};
    VkSpecializationInfo spec{1, &entry, sizeof(uint32_t), &wg};
    VkComputePipelineCreateInfo ci{};
    ci.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
    ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    ci.stage.module = mod;
    ci.stage.pName = "main";
    ci.stage.pSpecializationInfo = &spec;
    ci.layout = layout_;
    VkPipeline p = VK_NULL_HANDLE;
    const VkResult r = a_.vkCreateComputePipelines(dev_, cache_, 1, &ci, nullptr, &p);
    a_.vkDestroyShaderModule(dev_, mod, nullptr);
    vk_check(r, "vkCreateComputePipelines");
    pipelines_.emplace(key, p);
    return p;
}

void Backend::make_recording(Recording& r, uint32_t sets) {
    const uint32_t cap = std::max<uint32_t>(sets, 256);
    VkDescriptorPoolSize ps{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, cap * kBindings};
    VkDescriptorPoolCreateInfo pi{};
    pi.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
    pi.maxSets = cap;
    pi.poolSizeCount = 1;
    pi.pPoolSizes = &ps;
    vk_check(a_.vkCreateDescriptorPool(dev_, &pi, nullptr, &r.pool), "vkCreateDescriptorPool");
    r.cap = cap;
    r.used = 0;
    VkCommandBufferAllocateInfo ca{};
    ca.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
    ca.commandPool = pool_;
    ca.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ca.commandBufferCount = 1;
    const VkResult res = a_.vkAllocateCommandBuffers(dev_, &ca, &r.cmd);
    if (res != VK_SUCCESS) {
        destroy_recording(r);
        vk_check(res, "vkAllocateCommandBuffers");
    }
}

void Backend::destroy_recording(Recording& r) noexcept {
    if (r.cmd != VK_NULL_HANDLE) a_.vkFreeCommandBuffers(dev_, pool_, 1, &r.cmd);
    if (r.pool != VK_NULL_HANDLE) a_.vkDestroyDescriptorPool(dev_, r.pool, nullptr);
    r = Recording{};
}

void Backend::forget_recordings() noexcept {
    for (auto& r : recorded_) destroy_recording(*r);
    recorded_.clear();
}

void Backend::split_groups(uint64_t count, uint32_t& gx, uint32_t& gz) {
    count = std::max<uint64_t>(count, 1);
    if (count <= 65535) {
        gx = static_cast<uint32_t>(count);
        gz = 1;
        return;
    }
    gz = static_cast<uint32_t>((count + 65534) / 65535);
    gx = static_cast<uint32_t>((count + gz - 1) / gz);
}

void Backend::dispatch(const NodeCtx& c, const char* shader, uint32_t wg, const std::vector<Binding>& binds,
                       const uint32_t* pc, size_t n_pc, uint32_t gx, uint32_t gy, uint32_t gz) {
    if (rec_ == nullptr || rec_->used >= rec_->cap) {
        c.fail(BASALT_ERR_INTERNAL,
               "descriptor pool exhausted (" + std::to_string(rec_ != nullptr ? rec_->cap : 0) + " sets)");
    }
    VkCommandBuffer cmd = rec_->cmd;
    VkPipeline p = pipeline(shader, wg);
    VkDescriptorSetAllocateInfo ai{};
    ai.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
    ai.descriptorPool = rec_->pool;
    ai.descriptorSetCount = 1;
    ai.pSetLayouts = &set_layout_;
    VkDescriptorSet set = VK_NULL_HANDLE;
    vk_check(a_.vkAllocateDescriptorSets(dev_, &ai, &set), "vkAllocateDescriptorSets");
    ++rec_->used;
    VkDescriptorBufferInfo info[kBindings];
    VkWriteDescriptorSet w[kBindings];
    for (uint32_t i = 0; i < kBindings; ++i) {
        const bool used = i < binds.size() && binds[i].buf != VK_NULL_HANDLE;
        info[i].buffer = used ? binds[i].buf : dummy_.buf;
        info[i].offset = used ? binds[i].offset : 0;
        info[i].range = used ? binds[i].range : dummy_.size;
        w[i] = VkWriteDescriptorSet{};
        w[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
        w[i].dstSet = set;
        w[i].dstBinding = i;
        w[i].descriptorCount = 1;
        w[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        w[i].pBufferInfo = &info[i];
    }
    a_.vkUpdateDescriptorSets(dev_, kBindings, w, 0, nullptr);
    uint32_t push[32] = {};
    std::memcpy(push, pc, std::min<size_t>(n_pc, 32) * sizeof(uint32_t));
    a_.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p);
    a_.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout_, 0, 1, &set, 0, nullptr);
    a_.vkCmdPushConstants(cmd, layout_, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(push), push);
    a_.vkCmdDispatch(cmd, gx, gy, gz);
    VkMemoryBarrier mb{};
    mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
    mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
    a_.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb,
                            0, nullptr, 0, nullptr);
}

// ---------------------------------------------------------------------------------------------------------
// Graphs

TensorView Backend::make_view(const basalt_graph* g, const basalt_graph_node* n, size_t ni, int32_t index,
                              const char* role) const {
    if (index < 0 || static_cast<size_t>(index) >= g->n_tensors) {
        fail_node(n, ni, BASALT_ERR_INVALID_ARGUMENT,
                  std::string(role) + " tensor index " + std::to_string(index) + " is outside the graph's " +
                      std::to_string(g->n_tensors) + " tensors");
    }
    const basalt_tensor* t = g->tensors[index];
    std::string who = role;
    who.append(" ");
    if (t != nullptr && t->name != nullptr) {
        who.append("'").append(t->name).append("'");
    } else {
        who.append("#").append(std::to_string(index));
    }
    if (t == nullptr || t->struct_size < sizeof(basalt_tensor)) {
        fail_node(n, ni, BASALT_ERR_INVALID_ARGUMENT, who + " is NULL or has a too small struct_size");
    }
    TensorView v;
    v.t = t;
    v.index = index;
    v.type = t->dtype;
    const blocks::DtypeTraits* tr = blocks::dtype_traits(t->dtype);
    if (tr == nullptr || !(type_readable(t->dtype) || t->dtype == BASALT_DTYPE_I32)) {
        fail_node(n, ni, BASALT_ERR_UNSUPPORTED, who + " has unsupported type " + type_name(t->dtype));
    }
    v.block = tr->block_size;
    v.block_bytes = static_cast<int64_t>(tr->type_size);
    if (t->n_dims < 1 || t->n_dims > 4) {
        fail_node(n, ni, BASALT_ERR_INVALID_ARGUMENT, who + " has n_dims " + std::to_string(t->n_dims) + " (1..4)");
    }
    const int64_t align = v.block > 1 ? 2 : v.block_bytes;
    for (int i = 0; i < t->n_dims; ++i) {
        if (t->ne[i] < 1 || t->ne[i] > (int64_t{1} << 32)) {
            fail_node(n, ni, BASALT_ERR_INVALID_ARGUMENT,
                      who + " has ne[" + std::to_string(i) + "] = " + std::to_string(t->ne[i]));
        }
        if (t->nb[i] < 0 || t->nb[i] % align != 0) {
            fail_node(n, ni, BASALT_ERR_INVALID_ARGUMENT,
                      who + " has nb[" + std::to_string(i) + "] = " + std::to_string(t->nb[i]) +
                          " (must be >= 0 and a multiple of " + std::to_string(align) + ")");
        }
        v.ne[i] = t->ne[i];
        v.nb[i] = t->nb[i];
    }
    for (int i = t->n_dims; i < 4; ++i) v.nb[i] = v.nb[i - 1] * v.ne[i - 1];
    if (v.ne[0] % v.block != 0) {
        fail_node(n, ni, BASALT_ERR_INVALID_ARGUMENT,
                  who + " has ne[0] = " + std::to_string(v.ne[0]) + ", not a multiple of " + type_name(v.type) +
                      "'s block of " + std::to_string(v.block));
    }
    if (v.nb[0] != v.block_bytes) {
        fail_node(n, ni, BASALT_ERR_UNSUPPORTED,
                  who + " has nb[0] = " + std::to_string(v.nb[0]) + "; rows must be contiguous");
    }
    __extension__ typedef __int128 i128;
    i128 ext = v.row_bytes();
    for (int i = 1; i < 4; ++i) ext += static_cast<i128>(v.ne[i] - 1) * v.nb[i];
    if (ext >= (static_cast<i128>(1) << 32) * 4 || static_cast<i128>(v.nelements()) >= (static_cast<i128>(1) << 32)) {
        fail_node(n, ni, BASALT_ERR_UNSUPPORTED, who + " " + v.shape() + " is too large for 32-bit shader indexing");
    }
    v.extent = static_cast<uint64_t>(ext);
    if (t->buffer != nullptr) {
        if (!owns(t->buffer)) {
            fail_node(n, ni, BASALT_ERR_INVALID_ARGUMENT, who + " refers to a buffer this backend does not own");
        }
        if (t->offset % static_cast<uint64_t>(align) != 0) {
            fail_node(
                n, ni, BASALT_ERR_INVALID_ARGUMENT,
                who + " has offset " + std::to_string(t->offset) + ", not a multiple of " + std::to_string(align));
        }
        if (t->offset > t->buffer->size || v.extent > t->buffer->size - t->offset) {
            fail_node(n, ni, BASALT_ERR_INVALID_ARGUMENT,
                      who + " (offset " + std::to_string(t->offset) + ", " + std::to_string(v.extent) +
                          " bytes) exceeds its buffer of " + std::to_string(t->buffer->size) + " bytes");
        }
    }
    return v;
}

bool Backend::placeable(const TensorView& v, std::string* why) const {
    if (v.t->buffer == nullptr) return true;
    const basalt_buffer* b = v.t->buffer;
    for (const auto& c : b->chunks) {
        if (v.t->offset >= c.begin && v.t->offset + v.extent <= c.begin + c.size) return true;
    }
    if (why != nullptr) {
        *why = "tensor '" + std::string(v.t->name != nullptr ? v.t->name : "?") + "' (" + std::to_string(v.extent) +
               " bytes at offset " + std::to_string(v.t->offset) + ") straddles two device memory chunks";
    }
    return false;
}

Placed Backend::place(const TensorView& v, uint64_t begin, uint64_t bytes) const {
    if (bytes == UINT64_MAX) bytes = v.extent - begin;
    Placed p;
    if (v.t->buffer == nullptr) {
        const uint64_t start = inter_offset_[static_cast<size_t>(v.index)] + begin;
        const uint64_t aligned = start / offset_align_ * offset_align_;
        // Ranges end on 16 bytes (chunks do too), so shaders may read whole 16-byte vectors.
        p.bind =
            Binding{arena_.buf, aligned, std::min(arena_.size - aligned, (start - aligned + bytes + 15) / 16 * 16)};
        p.delta = static_cast<uint32_t>(start - aligned);
        return p;
    }
    const basalt_buffer* b = v.t->buffer;
    const uint64_t start = v.t->offset + begin;
    for (const auto& c : b->chunks) {
        if (start >= c.begin && start + bytes <= c.begin + c.size) {
            const uint64_t local = start - c.begin;
            const uint64_t aligned = local / offset_align_ * offset_align_;
            p.bind = Binding{c.buf, aligned, std::min(c.size - aligned, (local - aligned + bytes + 15) / 16 * 16)};
            p.delta = static_cast<uint32_t>(local - aligned);
            return p;
        }
    }
    throw sdk::error(BASALT_ERR_UNSUPPORTED, std::string(kLabel) + ": a tensor straddles two memory chunks");
}

void Backend::ensure_arena(uint64_t bytes) {
    if (bytes <= arena_.size) return;
    forget_recordings();  // they bind the old arena
    destroy_chunk(arena_);
    if (bytes > chunk_cap_) {
        throw sdk::error(BASALT_ERR_OUT_OF_MEMORY, std::string(kLabel) + ": intermediates need " +
                                                       std::to_string(bytes) + " bytes, more than one allocation of " +
                                                       std::to_string(chunk_cap_));
    }
    make_chunk(arena_, std::max<uint64_t>(bytes, arena_.size * 3 / 2), false);
}

NodeCtx Backend::check_node(const basalt_graph* g, size_t ni) {
    const basalt_graph_node* n = g->nodes[ni];
    if (n == nullptr || n->struct_size < sizeof(basalt_graph_node)) {
        fail_node(n, ni, BASALT_ERR_INVALID_ARGUMENT, "node is NULL or has a too small struct_size");
    }
    const OpImpl* impl = op_impl(n->op);
    if (impl == nullptr) {
        fail_node(n, ni, BASALT_ERR_UNSUPPORTED, "op " + std::to_string(n->op) + " is not implemented");
    }
    if (n->n_inputs < impl->min_inputs || n->n_inputs > impl->max_inputs) {
        fail_node(n, ni, BASALT_ERR_INVALID_ARGUMENT,
                  "has " + std::to_string(n->n_inputs) + " inputs, expected " + std::to_string(impl->min_inputs));
    }
    NodeCtx c;
    c.backend = kLabel;
    c.be = this;
    c.graph = g;
    c.node = n;
    c.index = ni;
    c.n_in = n->n_inputs;
    static const char* const kRoles[] = {"input 0", "input 1", "input 2", "input 3",
                                         "input 4", "input 5", "input 6", "input 7"};
    for (int i = 0; i < n->n_inputs; ++i) c.in[i] = make_view(g, n, ni, n->inputs[i], kRoles[i]);
    c.out = make_view(g, n, ni, n->output, "output");
    const TensorView& o = c.out;
    if ((o.ne[1] > 1 && o.nb[1] < o.row_bytes()) || (o.ne[2] > 1 && o.nb[2] < o.nb[1] * o.ne[1]) ||
        (o.ne[3] > 1 && o.nb[3] < o.nb[2] * o.ne[2])) {
        c.fail(BASALT_ERR_INVALID_ARGUMENT, "output " + o.shape() + " has overlapping rows");
    }
    if (o.t->buffer != nullptr && o.t->buffer->chunks.size() > 1) {
        c.fail(BASALT_ERR_UNSUPPORTED, "output is in a buffer split into " +
                                           std::to_string(o.t->buffer->chunks.size()) +
                                           " chunks (only weights may be that large)");
    }
    impl->check(c);
    std::string why;
    for (int i = 0; i < n->n_inputs; ++i) {
        if (!placeable(c.in[i], &why)) c.fail(BASALT_ERR_UNSUPPORTED, why);
    }
    if (!placeable(c.out, &why)) c.fail(BASALT_ERR_UNSUPPORTED, why);
    return c;
}

bool Backend::supports(const basalt_graph* g, size_t node, std::string* why) {
    if (g == nullptr || g->struct_size < sizeof(basalt_graph) || node >= g->n_nodes || g->nodes == nullptr ||
        g->tensors == nullptr) {
        throw sdk::error(BASALT_ERR_INVALID_ARGUMENT, std::string(kLabel) + ": supports_node: bad graph or node index");
    }
    try {
        check_node(g, node);
    } catch (const sdk::error& e) {
        if (e.status() != BASALT_ERR_UNSUPPORTED) throw;
        if (why != nullptr) *why = e.what();
        return false;
    }
    return true;
}

// Records every node of a checked, planned graph into r's command buffer (ended, not submitted).
void Backend::record_graph(const basalt_graph* g, std::vector<NodeCtx>& ctx, const std::vector<bool>& fused,
                           Recording& r) {
    const size_t nn = g->n_nodes;
    if (profile_ && query_cap_ < 2 * nn) {
        if (queries_ != VK_NULL_HANDLE) a_.vkDestroyQueryPool(dev_, queries_, nullptr);
        queries_ = VK_NULL_HANDLE;
        query_cap_ = 0;
        VkQueryPoolCreateInfo qi{};
        qi.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO;
        qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
        qi.queryCount = static_cast<uint32_t>(2 * nn);
        vk_check(a_.vkCreateQueryPool(dev_, &qi, nullptr, &queries_), "vkCreateQueryPool");
        query_cap_ = qi.queryCount;
    }
    begin_commands(r.cmd, &r == &scratch_);
    rec_ = &r;
    struct Unset {
        Recording*& p;
        ~Unset() { p = nullptr; }
    } unset{rec_};
    if (profile_) a_.vkCmdResetQueryPool(r.cmd, queries_, 0, static_cast<uint32_t>(2 * nn));
    for (size_t i = 0; i < nn; ++i) {
        if (profile_) {
            a_.vkCmdWriteTimestamp(r.cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, queries_, static_cast<uint32_t>(2 * i));
        }
        if (!fused[i]) op_impl(g->nodes[i]->op)->record(ctx[i]);
        if (profile_) {
            a_.vkCmdWriteTimestamp(r.cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_,
                                   static_cast<uint32_t>(2 * i + 1));
        }
    }
    vk_check(a_.vkEndCommandBuffer(r.cmd), "vkEndCommandBuffer");
    ++n_recorded_;
}

void Backend::compute(const basalt_graph* g) {
    if (g == nullptr || g->struct_size < sizeof(basalt_graph)) {
        throw sdk::error(BASALT_ERR_INVALID_ARGUMENT,
                         std::string(kLabel) + ": graph is NULL or has a too small struct_size");
    }
    if ((g->n_tensors > 0 && g->tensors == nullptr) || (g->n_nodes > 0 && g->nodes == nullptr)) {
        throw sdk::error(BASALT_ERR_INVALID_ARGUMENT, std::string(kLabel) + ": graph has NULL tensor or node arrays");
    }
    check_validation("graph_compute");
    ++n_graphs_;
    // A graph with the key of a kept recording runs from its command buffer: no checks, planning or recording
    // (the key covers everything they depend on; recordings go when a buffer they might bind is freed).
    sdk::GraphKey key;
    if (reuse_ && !profile_) key = sdk::graph_key(g);
    if (!key.words.empty()) {
        for (auto& r : recorded_) {
            if (!(r->key == key)) continue;
            r->last_use = ++use_clock_;
            submit_and_wait(r->cmd);
            ++n_replayed_;
            check_validation("graph_compute");
            return;
        }
    }
    const size_t nn = g->n_nodes;
    std::vector<NodeCtx> ctx;
    ctx.reserve(nn);
    for (size_t i = 0; i < nn; ++i) ctx.push_back(check_node(g, i));

    // RMS_NORM whose intermediate output only feeds the next node, a MUL by a weight row: one dispatch. The
    // planner keeps the norm's input alive through the MUL (the fused dispatch reads it while writing the MUL's
    // output, which must not land on it).
    std::vector<bool> fused(nn, false);     // recorded by another node's dispatch, or not at all
    std::vector<bool> reshaped(nn, false);  // COPY nodes elided (their output aliases their input)
    {
        std::vector<int> readers(g->n_tensors, 0);
        for (size_t i = 0; i < nn; ++i) {
            for (int k = 0; k < g->nodes[i]->n_inputs; ++k) ++readers[static_cast<size_t>(g->nodes[i]->inputs[k])];
        }
        for (size_t i = 0; i + 1 < nn; ++i) {
            const basalt_graph_node* a = g->nodes[i];
            const basalt_graph_node* b = g->nodes[i + 1];
            const auto t = static_cast<size_t>(a->output);
            if (a->op != BASALT_OP_RMS_NORM || b->op != BASALT_OP_MUL || b->inputs[0] != a->output ||
                b->inputs[1] == a->output || g->tensors[t]->buffer != nullptr || readers[t] != 1 || fused[i]) {
                continue;
            }
            const TensorView& w = ctx[i + 1].in[1];
            if (w.ne[0] != ctx[i].out.ne[0] || w.nrows() != 1 || w.nb[0] != 4 || !fusion_) continue;
            ctx[i].fused_mul = &ctx[i + 1];
            fused[i + 1] = true;
        }
    }

    // COPY nodes that only reshape an intermediate run as nothing: the output takes the input's memory.
    for (size_t i = 0; i < nn; ++i) {
        if (fusion_ && sdk::contract::is_reshape(ctx[i]) && ctx[i].in[0].extent == ctx[i].out.extent) {
            fused[i] = true;
            reshaped[i] = true;
        }
    }
    // Intermediates: written before read, placed in the arena, released after their last reader.
    const auto plan = sdk::plan_intermediates(
        g, kArenaAlign, [&](size_t i) { return ctx[i].out.extent; },
        [&](size_t i) { return ctx[i].fused_mul != nullptr; },
        [&](size_t i) { return reshaped[i] ? int64_t{g->nodes[i]->inputs[0]} : int64_t{-1}; });
    if (plan.bad_node >= 0) {
        const basalt_graph_node* n = g->nodes[plan.bad_node];
        const basalt_tensor* t = g->tensors[n->inputs[plan.bad_input]];
        fail_node(
            n, static_cast<size_t>(plan.bad_node), BASALT_ERR_INVALID_ARGUMENT,
            "reads intermediate '" + std::string(t->name ? t->name : "?") + "' (no buffer) before any node writes it");
    }
    inter_offset_ = plan.offset;
    if (plan.peak > 0) ensure_arena(plan.peak);
    if (nn == 0) return;

    const auto sets = static_cast<uint32_t>(std::min<size_t>(nn * 4 + 64, 1u << 20));
    if (key.words.empty()) {
        // Not kept: the scratch recording, grown when needed.
        if (scratch_.cap < sets) {
            destroy_recording(scratch_);
            make_recording(scratch_, sets);
        } else {
            vk_check(a_.vkResetDescriptorPool(dev_, scratch_.pool, 0), "vkResetDescriptorPool");
            scratch_.used = 0;
        }
        record_graph(g, ctx, fused, scratch_);
        submit_and_wait(scratch_.cmd);
    } else {
        auto r = std::make_unique<Recording>();
        make_recording(*r, sets);
        try {
            record_graph(g, ctx, fused, *r);
        } catch (...) {
            destroy_recording(*r);
            throw;
        }
        r->key = std::move(key);
        r->last_use = ++use_clock_;
        if (recorded_.size() >= kMaxRecordings) {
            auto lru = std::min_element(recorded_.begin(), recorded_.end(),
                                        [](const auto& x, const auto& y) { return x->last_use < y->last_use; });
            destroy_recording(**lru);
            recorded_.erase(lru);
        }
        recorded_.push_back(std::move(r));
        submit_and_wait(recorded_.back()->cmd);
    }
    if (profile_) {
        std::vector<uint64_t> ts(2 * nn);
        vk_check(a_.vkGetQueryPoolResults(dev_, queries_, 0, static_cast<uint32_t>(2 * nn), ts.size() * 8, ts.data(), 8,
                                          VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
                 "vkGetQueryPoolResults");
        const double period = desc_.props.limits.timestampPeriod;
        for (size_t i = 0; i < nn; ++i) {
            auto& e = profile_totals_[op_name(g->nodes[i]->op)];
            e.first += static_cast<double>(ts[2 * i + 1] - ts[2 * i]) * period;
            e.second += 1;
        }
        ++profile_graphs_;
    }
    check_validation("graph_compute");
}

// ---------------------------------------------------------------------------------------------------------
// The plugin table

namespace {

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
    return std::string(kLabel) + ": no usable Vulkan device: " + global().problem +
           "; install mesa-vulkan-drivers (lavapipe, a CPU implementation) or a GPU driver";
}

basalt_status vk_device_count(const basalt_host* /*host*/, size_t* out_count) {
    return sdk::guard([&] {
        if (out_count == nullptr)
            throw sdk::error(BASALT_ERR_INVALID_ARGUMENT, std::string(kLabel) + ": out_count is NULL");
        *out_count = global().devices.size();
        // Zero devices is not an error, but the host shows the reason (it names the fix).
        if (*out_count == 0) sdk::report(BASALT_ERR_UNSUPPORTED, no_device_message().c_str());
    });
}

basalt_status vk_device_info(size_t index, basalt_device_info* out) {
    return sdk::guard([&] {
        if (out == nullptr) throw sdk::error(BASALT_ERR_INVALID_ARGUMENT, std::string(kLabel) + ": out is NULL");
        const auto& devs = global().devices;
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
        if (const char* env = std::getenv("BASALT_VK_DEVICE"); env != nullptr && *env != '\0') {
            char* end = nullptr;
            index = std::strtoll(env, &end, 10);
            if (end == nullptr || *end != '\0' || index < 0) {
                throw sdk::error(BASALT_ERR_INVALID_ARGUMENT,
                                 std::string(kLabel) + ": BASALT_VK_DEVICE = '" + env + "' is not a device index");
            }
        }
        index = p.get_int("device", index);
        const auto& devs = global().devices;
        if (devs.empty()) throw sdk::error(BASALT_ERR_UNSUPPORTED, no_device_message());
        if (index < 0 || static_cast<size_t>(index) >= devs.size()) {
            throw sdk::error(BASALT_ERR_NOT_FOUND, std::string(kLabel) + ": device " + std::to_string(index) +
                                                       " does not exist (" + std::to_string(devs.size()) +
                                                       " devices: " + global().description + ")");
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
    sizeof(basalt_component_desc), BASALT_COMPONENT_BACKEND, "vulkan", "Vulkan compute", 0, 1, 0, 0, &kIface,
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
    try {
        basalt::vk::init_global();
        basalt::vk::g_component.description = basalt::vk::global().description.c_str();
    } catch (...) {
        // init_global records its failures itself; the description stays generic.
    }
    return BASALT_OK;
}
