// Small helpers every file of the Vulkan backend shares: the label in messages, VkResult checks, environment
// switches, and the failure that names a graph node. Internal to the plugin.
#pragma once

#include <basalt/plugin_backend.h>

#include <cstdint>
#include <string>

#include "vk-api.hpp"

namespace basalt::vk {

constexpr const char* kLabel = "backend 'vulkan'";
constexpr uint32_t kBindings = 8;  // storage-buffer bindings of every shader's descriptor set

// Throws sdk::error naming `what` and the VkResult (out-of-memory results map to BASALT_ERR_OUT_OF_MEMORY).
[[noreturn]] void vk_fail(const std::string& what, VkResult r);
// vk_fail unless r is VK_SUCCESS.
void vk_check(VkResult r, const char* what);
// A positive integer from the environment; unset, empty or malformed gives `fallback`.
uint64_t env_u64(const char* name, uint64_t fallback);
// A boolean switch from the environment: unset or empty gives `fallback`, "0" false, anything else true.
bool env_flag(const char* name, bool fallback);
// Throws sdk::error(st) naming node `index` (its name, else "#index") and its op.
[[noreturn]] void fail_node(const basalt_graph_node* n, size_t index, basalt_status st, const std::string& what);

}  // namespace basalt::vk
