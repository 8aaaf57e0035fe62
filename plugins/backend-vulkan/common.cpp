// The shared helpers of common.hpp, and the type predicates of backend.hpp.
#include "common.hpp"

#include <basalt/sdk/plugin.hpp>

#include <cstdlib>
#include <cstring>

#include "backend.hpp"

namespace basalt::vk {

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

bool env_flag(const char* name, bool fallback) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') return fallback;
    return std::strcmp(v, "0") != 0;
}

namespace {

std::string node_name(const basalt_graph_node* n, size_t index) {
    if (n != nullptr && n->name != nullptr) return n->name;
    return "#" + std::to_string(index);
}

}  // namespace

[[noreturn]] void fail_node(const basalt_graph_node* n, size_t index, basalt_status st, const std::string& what) {
    const std::string op = n != nullptr ? op_name(n->op) : "?";
    throw sdk::error(st, std::string(kLabel) + ": node '" + node_name(n, index) + "' (" + op + "): " + what);
}

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
        case BASALT_DTYPE_MXFP4:
            return true;
        default:
            return false;
    }
}

}  // namespace basalt::vk
