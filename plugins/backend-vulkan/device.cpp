// The logical device: created on one physical device of vk-api.cpp's list with one compute queue, its limits
// read once (allocation and binding sizes, subgroup size, row workgroup), and torn down in reverse; and the
// queue's one use, submitting a command buffer and waiting for it.
#include <algorithm>
#include <cstring>
#include <vector>

#include "backend.hpp"
#include "common.hpp"

namespace basalt::vk {

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
        read_limits();
        make_layouts();
        load_pipeline_cache();
        make_commands();
        make_chunk(dummy_, 256, false);
        profile_ = env_flag("BASALT_VK_PROFILE", false);
        reuse_ = env_flag("BASALT_VK_REUSE", true);
        attention_keys_ = env_flag("BASALT_VK_ATTENTION_KEYS", true);
        delta_chunks_ = env_flag("BASALT_VK_DELTA_CHUNKS", true);
        stats_ = env_flag("BASALT_VK_STATS", false);
    } catch (...) {
        this->~Backend();
        throw;
    }
}

// Sizes and switches from the device's properties and the environment.
void Backend::read_limits() {
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
}

// The command pool, the command buffer for uploads and downloads, and the fence every submission waits on.
void Backend::make_commands() {
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
    print_stats();
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

}  // namespace basalt::vk
