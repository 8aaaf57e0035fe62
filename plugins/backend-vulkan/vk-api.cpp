#include "vk-api.hpp"

#include <dlfcn.h>
#include <link.h>
#include <basalt/sdk/plugin.hpp>

#include <cstdlib>
#include <cstring>
#include <set>
#include <string>

namespace basalt::vk {
namespace {

constexpr const char* kFix = "install mesa-vulkan-drivers (lavapipe, a CPU implementation) or a GPU driver";

std::string mib(uint64_t bytes) {
    return std::to_string(bytes >> 20) + " MiB";
}

const char* type_word(VkPhysicalDeviceType t) {
    switch (t) {
        case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
            return "integrated GPU";
        case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
            return "discrete GPU";
        case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
            return "virtual GPU";
        case VK_PHYSICAL_DEVICE_TYPE_CPU:
            return "CPU (software)";
        default:
            return "other";
    }
}

bool env_on(const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

VKAPI_ATTR VkBool32 VKAPI_CALL on_debug_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                VkDebugUtilsMessageTypeFlagsEXT /*types*/,
                                                const VkDebugUtilsMessengerCallbackDataEXT* data, void* /*user*/) {
    const std::string msg = data != nullptr && data->pMessage != nullptr ? data->pMessage : "(no message)";
    if ((severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) != 0) {
        sdk::log(BASALT_LOG_ERROR, "backend 'vulkan'", "validation: " + msg);
        std::lock_guard<std::mutex> lock(global().validation_mutex);
        global().validation_errors.push_back(msg);
    } else {
        sdk::log(BASALT_LOG_WARN, "backend 'vulkan'", "validation: " + msg);
    }
    return VK_FALSE;
}

// Fills g.devices from the instance; records why a device is skipped.
void enumerate(Global& g) {
    Api& a = g.api;
    uint32_t n = 0;
    VkResult r = a.vkEnumeratePhysicalDevices(g.instance, &n, nullptr);
    if (r != VK_SUCCESS || n == 0) {
        g.problem = std::string("the Vulkan loader found no physical device (vkEnumeratePhysicalDevices: ") +
                    std::to_string(static_cast<int>(r)) + ", " + std::to_string(n) + " devices)";
        return;
    }
    std::vector<VkPhysicalDevice> phys(n);
    a.vkEnumeratePhysicalDevices(g.instance, &n, phys.data());
    std::string skipped;
    for (VkPhysicalDevice p : phys) {
        DeviceDesc d;
        d.phys = p;
        a.vkGetPhysicalDeviceProperties(p, &d.props);
        d.name = d.props.deviceName;
        VkPhysicalDeviceSubgroupProperties sg{};
        sg.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
        VkPhysicalDeviceProperties2 p2{};
        p2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
        p2.pNext = &sg;
        a.vkGetPhysicalDeviceProperties2(p, &p2);
        d.subgroup_size = sg.subgroupSize;
        uint32_t nq = 0;
        a.vkGetPhysicalDeviceQueueFamilyProperties(p, &nq, nullptr);
        std::vector<VkQueueFamilyProperties> qf(nq);
        a.vkGetPhysicalDeviceQueueFamilyProperties(p, &nq, qf.data());
        bool have_queue = false;
        for (uint32_t i = 0; i < nq && !have_queue; ++i) {
            if ((qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) != 0) {
                d.queue_family = i;
                have_queue = true;
            }
        }
        VkPhysicalDeviceMemoryProperties mp{};
        a.vkGetPhysicalDeviceMemoryProperties(p, &mp);
        for (uint32_t i = 0; i < mp.memoryHeapCount; ++i) {
            if ((mp.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) != 0) {
                d.device_local_bytes += mp.memoryHeaps[i].size;
            }
        }
        std::string why;
        if (d.props.apiVersion < VK_API_VERSION_1_2) why = "Vulkan 1.2 is required";
        if (!have_queue) why = "no compute queue";
        const VkSubgroupFeatureFlags need = VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_ARITHMETIC_BIT;
        if ((sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) == 0 || (sg.supportedOperations & need) != need) {
            why = "subgroup arithmetic in compute shaders is required";
        }
        if (!why.empty()) {
            skipped += (skipped.empty() ? "" : "; ") + d.name + ": " + why;
            continue;
        }
        const VkPhysicalDeviceLimits& lim = d.props.limits;
        VkPhysicalDeviceMaintenance3Properties m3{};
        m3.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES;
        p2.pNext = &m3;
        a.vkGetPhysicalDeviceProperties2(p, &p2);
        d.summary = "[" + std::to_string(g.devices.size()) + "] " + d.name + " (" + type_word(d.props.deviceType) +
                    ", Vulkan " + std::to_string(VK_API_VERSION_MAJOR(d.props.apiVersion)) + "." +
                    std::to_string(VK_API_VERSION_MINOR(d.props.apiVersion)) + ", memory " + mib(d.device_local_bytes) +
                    ", max allocation " + mib(m3.maxMemoryAllocationSize) + ", max storage range " +
                    mib(lim.maxStorageBufferRange) + ", subgroup " + std::to_string(d.subgroup_size) + ", shared " +
                    std::to_string(lim.maxComputeSharedMemorySize >> 10) + " KiB)";
        g.devices.push_back(std::move(d));
    }
    if (g.devices.empty()) g.problem = "no usable Vulkan device (" + skipped + ")";
}

// The file names of every shared object loaded now.
std::set<std::string> loaded_objects() {
    std::set<std::string> names;
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* out) {
            if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0') {
                static_cast<std::set<std::string>*>(out)->insert(info->dlpi_name);
            }
            return 0;
        },
        &names);
    return names;
}

// Keeps resident every object the loader brought in (the driver, LLVM for lavapipe): the loader unloads the
// driver when the instance is destroyed, and Mesa's drivers are not unload-safe (a leak checker then finds their
// static allocations orphaned in an unmapped module). Same policy as for the loader itself (shutdown_global).
void pin_new_objects(const std::set<std::string>& before) {
    for (const std::string& name : loaded_objects()) {
        if (before.count(name) == 0) dlopen(name.c_str(), RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
    }
}

}  // namespace

Global& global() {
    static Global g;
    return g;
}

void init_global() {
    Global& g = global();
    if (g.lib != nullptr || !g.problem.empty()) return;
    const std::set<std::string> before = loaded_objects();
    g.lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
    if (g.lib == nullptr) {
        g.problem = std::string("the Vulkan loader libvulkan.so.1 is not installed (") + dlerror() + ")";
    } else {
        Api& a = g.api;
        a.vkGetInstanceProcAddr = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(g.lib, "vkGetInstanceProcAddr"));
        auto create = a.vkGetInstanceProcAddr != nullptr
                          ? reinterpret_cast<PFN_vkCreateInstance>(a.vkGetInstanceProcAddr(nullptr, "vkCreateInstance"))
                          : nullptr;
        if (create == nullptr) {
            g.problem = "libvulkan.so.1 does not export vkGetInstanceProcAddr / vkCreateInstance";
        } else {
            const bool validation = env_on("BASALT_VK_VALIDATION");
            VkApplicationInfo app{};
            app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
            app.pApplicationName = "basalt";
            app.pEngineName = "basalt";
            app.apiVersion = VK_API_VERSION_1_2;
            const char* exts[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
            VkInstanceCreateInfo ci{};
            ci.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
            ci.pApplicationInfo = &app;
            ci.enabledExtensionCount = validation ? 1 : 0;
            ci.ppEnabledExtensionNames = exts;
            VkResult r = create(&ci, nullptr, &g.instance);
            if (r != VK_SUCCESS) {
                g.instance = VK_NULL_HANDLE;
                g.problem = "vkCreateInstance failed (" + std::to_string(static_cast<int>(r)) +
                            (r == VK_ERROR_INCOMPATIBLE_DRIVER ? ": no Vulkan driver (ICD) is installed" : "") + ")";
            } else {
#define BASALT_VK_LOAD(name) a.name = reinterpret_cast<PFN_##name>(a.vkGetInstanceProcAddr(g.instance, #name));
                BASALT_VK_FUNCS(BASALT_VK_LOAD)
#undef BASALT_VK_LOAD
                bool complete = true;
#define BASALT_VK_CHECK(name) complete = complete && a.name != nullptr;
                BASALT_VK_FUNCS(BASALT_VK_CHECK)
#undef BASALT_VK_CHECK
                if (!complete) {
                    g.problem = "the Vulkan loader lacks Vulkan 1.2 entry points";
                } else {
                    if (validation) {
                        auto mk = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
                            a.vkGetInstanceProcAddr(g.instance, "vkCreateDebugUtilsMessengerEXT"));
                        VkDebugUtilsMessengerCreateInfoEXT mi{};
                        mi.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT;
                        mi.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT |
                                             VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT;
                        mi.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                                         VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                                         VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
                        mi.pfnUserCallback = on_debug_message;
                        if (mk == nullptr || mk(g.instance, &mi, nullptr, &g.messenger) != VK_SUCCESS) {
                            g.messenger = VK_NULL_HANDLE;
                            g.validation_errors.push_back(
                                "BASALT_VK_VALIDATION is set but VK_EXT_debug_utils is unavailable");
                        }
                    }
                    enumerate(g);
                    pin_new_objects(before);
                }
            }
        }
    }
    if (g.devices.empty()) {
        g.description = "Vulkan compute: no device: " + g.problem + "; " + kFix;
    } else {
        g.description = "Vulkan compute: " + std::to_string(g.devices.size()) + " device(s): ";
        for (size_t i = 0; i < g.devices.size(); ++i) g.description += (i ? "; " : "") + g.devices[i].summary;
    }
}

void shutdown_global() {
    Global& g = global();
    if (g.instance != VK_NULL_HANDLE) {
        if (g.messenger != VK_NULL_HANDLE) {
            auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
                g.api.vkGetInstanceProcAddr(g.instance, "vkDestroyDebugUtilsMessengerEXT"));
            if (destroy != nullptr) destroy(g.instance, g.messenger, nullptr);
            g.messenger = VK_NULL_HANDLE;
        }
        g.api.vkDestroyInstance(g.instance, nullptr);
        g.instance = VK_NULL_HANDLE;
    }
    g.devices.clear();
    // The library stays loaded: drivers may keep threads or atexit handlers that live in it.
}

void check_validation(const char* where) {
    Global& g = global();
    std::lock_guard<std::mutex> lock(g.validation_mutex);
    if (g.validation_errors.empty()) return;
    std::string msg =
        "backend 'vulkan': " + std::string(where) + ": Vulkan validation error: " + g.validation_errors.front();
    if (g.validation_errors.size() > 1) msg += " (+" + std::to_string(g.validation_errors.size() - 1) + " more)";
    g.validation_errors.clear();
    throw sdk::error(BASALT_ERR_INTERNAL, msg);
}

}  // namespace basalt::vk
