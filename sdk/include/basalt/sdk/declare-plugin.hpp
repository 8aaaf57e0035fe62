// Basalt SDK: declares a plugin library from its components. BASALT_DECLARE_PLUGIN("sampler-x", sampler<X, kX>)
// writes the component list, the plugin descriptor and the single export basalt_plugin_init; every component
// type (basalt::sdk::sampler<...>, basalt::sdk::decoder<...>, basalt::sdk::component<desc>) brings its descriptor.
// Header-only C++17; compiled into the plugin, nothing here crosses the ABI.
#pragma once

#include <basalt/plugin.h>
#include <basalt/sdk/plugin.hpp>

#include <cstdint>
#include <string>

namespace basalt::sdk {

// A component's own version (basalt_component_desc.version_*), independent of the ABI's.
struct component_version {
    uint32_t major = 1;
    uint32_t minor = 0;
    uint32_t patch = 0;
};

// "<kind> '<name>'": how a component names itself at the front of its error messages.
inline std::string component_label(const char* kind, const char* name) {
    return std::string(kind) + " '" + name + "'";
}

// The descriptor of one component: its kind, name, one-line description, version and interface table (all with
// static storage: the host keeps the pointers until the library is unloaded).
constexpr basalt_component_desc make_component_desc(basalt_component_kind kind, const char* name,
                                                    const char* description, component_version version,
                                                    const void* iface) noexcept {
    return basalt_component_desc{
        sizeof(basalt_component_desc), kind, name, description, version.major, version.minor, version.patch, 0, iface,
    };
}

// A component whose descriptor and interface table are written by hand (a kind without a class helper: backend,
// KV cache, steering), listed in BASALT_DECLARE_PLUGIN beside generated ones. Desc has static storage.
template <const basalt_component_desc& Desc>
struct component {
    static constexpr const basalt_component_desc& desc = Desc;
};

// The descriptors of a library's components, in declaration order (each Component has a static `desc`).
template <typename... Components>
inline constexpr const basalt_component_desc* component_list[] = {&Components::desc...};

// The plugin descriptor of a library `name` (a string literal) providing Components; no shutdown hook.
template <typename... Components>
constexpr basalt_plugin_desc make_plugin_desc(const char* name) noexcept {
    static_assert(sizeof...(Components) > 0, "a plugin library declares at least one component");
    return basalt_plugin_desc{
        sizeof(basalt_plugin_desc),
        BASALT_ABI_VERSION_MAJOR,
        BASALT_ABI_VERSION_MINOR,
        0,
        name,
        sizeof...(Components),
        component_list<Components...>,
        nullptr,
    };
}

}  // namespace basalt::sdk

// Declares a whole plugin library (use once, at namespace scope of one source file): its name, then its
// components, e.g. BASALT_DECLARE_PLUGIN("sampler-top-k", basalt::sdk::sampler<TopK, kTopK>). Defines the
// descriptor (constant-initialised, valid for the library's lifetime) and the exported basalt_plugin_init,
// which refuses a host of another ABI major with a message naming both versions.
#define BASALT_DECLARE_PLUGIN(library_name, ...)                                                                      \
    namespace {                                                                                                       \
    constexpr basalt_plugin_desc basalt_sdk_declared_plugin =                                                         \
        basalt::sdk::make_plugin_desc<__VA_ARGS__>(library_name);                                                     \
    }                                                                                                                 \
    BASALT_PLUGIN_INIT {                                                                                              \
        return basalt::sdk::init_plugin(host_abi_major, host_abi_minor, host, &basalt_sdk_declared_plugin, out_desc); \
    }
