// The Vulkan entry points the backend uses, resolved at run time from libvulkan.so.1 (dlopen): a machine without
// the loader, an ICD or a device still loads the plugin, which then reports zero devices and names the fix.
// One process-wide instance (created at plugin init, destroyed at shutdown) and the list of usable devices.
#pragma once

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace basalt::vk {

#define BASALT_VK_FUNCS(X)                      \
    X(vkDestroyInstance)                        \
    X(vkEnumeratePhysicalDevices)               \
    X(vkGetPhysicalDeviceProperties)            \
    X(vkGetPhysicalDeviceProperties2)           \
    X(vkGetPhysicalDeviceFeatures2)             \
    X(vkGetPhysicalDeviceMemoryProperties)      \
    X(vkGetPhysicalDeviceQueueFamilyProperties) \
    X(vkCreateDevice)                           \
    X(vkDestroyDevice)                          \
    X(vkGetDeviceQueue)                         \
    X(vkCreateBuffer)                           \
    X(vkDestroyBuffer)                          \
    X(vkGetBufferMemoryRequirements)            \
    X(vkAllocateMemory)                         \
    X(vkFreeMemory)                             \
    X(vkBindBufferMemory)                       \
    X(vkMapMemory)                              \
    X(vkUnmapMemory)                            \
    X(vkCreateShaderModule)                     \
    X(vkDestroyShaderModule)                    \
    X(vkCreateDescriptorSetLayout)              \
    X(vkDestroyDescriptorSetLayout)             \
    X(vkCreatePipelineLayout)                   \
    X(vkDestroyPipelineLayout)                  \
    X(vkCreateComputePipelines)                 \
    X(vkDestroyPipeline)                        \
    X(vkCreatePipelineCache)                    \
    X(vkDestroyPipelineCache)                   \
    X(vkGetPipelineCacheData)                   \
    X(vkEnumerateDeviceExtensionProperties)     \
    X(vkCreateDescriptorPool)                   \
    X(vkDestroyDescriptorPool)                  \
    X(vkResetDescriptorPool)                    \
    X(vkAllocateDescriptorSets)                 \
    X(vkUpdateDescriptorSets)                   \
    X(vkCreateCommandPool)                      \
    X(vkDestroyCommandPool)                     \
    X(vkAllocateCommandBuffers)                 \
    X(vkFreeCommandBuffers)                     \
    X(vkResetCommandBuffer)                     \
    X(vkBeginCommandBuffer)                     \
    X(vkEndCommandBuffer)                       \
    X(vkCmdBindPipeline)                        \
    X(vkCmdBindDescriptorSets)                  \
    X(vkCmdPushConstants)                       \
    X(vkCmdDispatch)                            \
    X(vkCmdPipelineBarrier)                     \
    X(vkCmdCopyBuffer)                          \
    X(vkCmdResetQueryPool)                      \
    X(vkCmdWriteTimestamp)                      \
    X(vkCreateQueryPool)                        \
    X(vkDestroyQueryPool)                       \
    X(vkGetQueryPoolResults)                    \
    X(vkQueueSubmit)                            \
    X(vkCreateFence)                            \
    X(vkDestroyFence)                           \
    X(vkResetFences)                            \
    X(vkWaitForFences)

struct Api {
    PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
#define BASALT_VK_DECLARE(name) PFN_##name name = nullptr;
    BASALT_VK_FUNCS(BASALT_VK_DECLARE)
#undef BASALT_VK_DECLARE
};

// A physical device that has what the shaders need (Vulkan 1.2, a compute queue, subgroup arithmetic).
struct DeviceDesc {
    VkPhysicalDevice phys = VK_NULL_HANDLE;
    VkPhysicalDeviceProperties props{};
    uint32_t queue_family = 0;
    uint32_t subgroup_size = 0;
    uint64_t device_local_bytes = 0;
    std::string name;
    std::string summary;  // one line for the plugin description and logs
};

// The process-wide Vulkan state. All fields are written once by init() and read-only afterwards.
struct Global {
    void* lib = nullptr;
    Api api;
    VkInstance instance = VK_NULL_HANDLE;
    VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
    std::vector<DeviceDesc> devices;
    std::string problem;      // why there are no devices (empty when there are)
    std::string description;  // component description (device list)
    // Validation messages of severity error (BASALT_VK_VALIDATION=1); taken by the next backend call.
    std::mutex validation_mutex;
    std::vector<std::string> validation_errors;
};

Global& global();
// Creates the instance and enumerates devices once; never throws (failures end in global().problem).
void init_global();
void shutdown_global();
// Throws sdk::error with the first pending validation error (and clears the list).
void check_validation(const char* where);

}  // namespace basalt::vk
