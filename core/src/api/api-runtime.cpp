// C API: version, errors, logging, runtime creation and plugin loading.
#include <basalt/basalt.h>
#include <basalt/plugin_backend.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "host/host-services.hpp"
#include "host/library-path.hpp"
#include "host/runtime.hpp"
#include "support/error.hpp"
#include "support/log.hpp"
#include "support/progress.hpp"

#ifndef BASALT_VERSION_STRING
#error "BASALT_VERSION_STRING must be defined by the build"
#endif

using basalt::fail;
using basalt::guard;

namespace {

// A component's description. A backend is asked for its devices first: one that enumerates them on first use
// (the Vulkan backend loads its driver then, not at plugin load) names them in its descriptor's description,
// which the plugin keeps valid until its shutdown.
const char* description_of(const basalt::Component& c) {
    if (c.kind != BASALT_COMPONENT_BACKEND || c.desc == nullptr) return c.description.c_str();
    const auto be = basalt::read_table<basalt_backend_iface>(c);
    size_t n_devices = 0;
    if (be.device_count != nullptr) (void)be.device_count(basalt::host_services(), &n_devices);
    return c.desc->description != nullptr ? c.desc->description : c.description.c_str();
}

void fill_info(const basalt::Component& c, basalt_component_info* out) {
    // Write only the fields that fit the caller's struct_size.
    basalt_component_info tmp{};
    tmp.struct_size = out->struct_size;
    tmp.kind = c.kind;
    tmp.name = c.name.c_str();
    tmp.description = description_of(c);
    tmp.version_major = c.version[0];
    tmp.version_minor = c.version[1];
    tmp.version_patch = c.version[2];
    tmp.plugin_abi_major = c.plugin_abi_major;
    tmp.plugin_abi_minor = c.plugin_abi_minor;
    tmp.plugin_name = c.plugin_name.c_str();
    tmp.file = c.file.c_str();
    const size_t n = std::min<size_t>(out->struct_size, sizeof(tmp));
    std::memcpy(out, &tmp, n);
}

}  // namespace

extern "C" {

const char* basalt_version_string(void) {
    return BASALT_VERSION_STRING;
}

void basalt_abi_version(uint32_t* major, uint32_t* minor) {
    if (major != nullptr) *major = BASALT_ABI_VERSION_MAJOR;
    if (minor != nullptr) *minor = BASALT_ABI_VERSION_MINOR;
}

const char* basalt_last_error(void) {
    return basalt::last_error();
}

const char* basalt_status_name(basalt_status status) {
    return basalt::status_name(status);
}

const char* basalt_component_kind_name(basalt_component_kind kind) {
    return basalt::kind_name(kind);
}

basalt_component_kind basalt_component_kind_from_name(const char* name) {
    if (name == nullptr) return 0;
    for (basalt_component_kind k = BASALT_COMPONENT_BACKEND; k <= BASALT_COMPONENT_STEERING; ++k) {
        if (std::strcmp(basalt::kind_name(k), name) == 0) return k;
    }
    return 0;
}

void basalt_log_set_level(basalt_log_level level) {
    basalt::log::set_level(level);
}

basalt_log_level basalt_log_get_level(void) {
    return basalt::log::level();
}

basalt_status basalt_log_level_from_name(const char* name, basalt_log_level* out) {
    return guard([&] {
        if (name == nullptr || out == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "log level name and output required");
        basalt_log_level lvl = BASALT_LOG_WARN;
        if (!basalt::log::parse_level(name, &lvl)) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "unknown log level '{}' (expected trace, debug, info, warn, error, off)",
                 name);
        }
        *out = lvl;
    });
}

void basalt_log_set_callback(basalt_log_callback callback, void* user_data) {
    basalt::log::set_callback(callback, user_data);
}

void basalt_progress_set_callback(basalt_progress_callback callback, void* user_data) {
    basalt::progress::set_callback(callback, user_data);
}

const char* basalt_default_plugin_dir(void) {
    static const std::string dir = [] {
        try {
            return basalt::default_plugin_dir().string();
        } catch (...) {
            return std::string();
        }
    }();
    return dir.c_str();
}

basalt_status basalt_runtime_create(const basalt_runtime_params* params, basalt_runtime** out) {
    return guard([&] {
        if (out == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_runtime_create: out is NULL");
        uint32_t flags = 0;
        if (params != nullptr) {
            if (params->struct_size < offsetof(basalt_runtime_params, flags) + sizeof(params->flags)) {
                fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_runtime_params.struct_size {} is too small",
                     params->struct_size);
            }
            flags = params->flags;
        }
        auto rt = std::make_unique<basalt_runtime>();
        if ((flags & BASALT_RUNTIME_NO_DEFAULT_PLUGINS) == 0) {
            const std::string dir = basalt_default_plugin_dir();
            if (dir.empty()) {
                basalt::log::warn("cannot locate libbasalt on disk; default plugin folder not searched");
            } else {
                basalt::log::debug("discovering plugins in '{}'", dir);
                rt->plugins.discover_dir(dir);
            }
        }
        if ((flags & BASALT_RUNTIME_NO_ENV_PLUGINS) == 0) {
            if (const char* env = std::getenv("BASALT_PLUGIN_PATH"); env != nullptr && *env != '\0') {
                basalt::log::debug("discovering plugins in BASALT_PLUGIN_PATH '{}'", env);
                rt->plugins.discover_path_list(env);
            }
        }
        *out = rt.release();
    });
}

void basalt_runtime_destroy(basalt_runtime* runtime) {
    delete runtime;
}

basalt_status basalt_runtime_load_plugin(basalt_runtime* runtime, const char* path) {
    return guard([&] {
        if (runtime == nullptr || path == nullptr) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_runtime_load_plugin: runtime and path are required");
        }
        runtime->plugins.load(path);
    });
}

size_t basalt_runtime_component_count(const basalt_runtime* runtime) {
    return runtime == nullptr ? 0 : runtime->plugins.components().size();
}

basalt_status basalt_runtime_component_info(const basalt_runtime* runtime, size_t index, basalt_component_info* out) {
    return guard([&] {
        if (runtime == nullptr || out == nullptr) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_runtime_component_info: runtime and out are required");
        }
        const auto& comps = runtime->plugins.components();
        if (index >= comps.size()) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "component index {} out of range (count {})", index, comps.size());
        }
        fill_info(comps[index], out);
    });
}

basalt_status basalt_runtime_find_component(const basalt_runtime* runtime, basalt_component_kind kind, const char* name,
                                            size_t* out_index) {
    return guard([&] {
        if (runtime == nullptr || name == nullptr || out_index == nullptr) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_runtime_find_component: runtime, name and out_index required");
        }
        const auto& comps = runtime->plugins.components();
        std::string available;
        for (size_t i = 0; i < comps.size(); ++i) {
            if (comps[i].kind != kind) continue;
            if (comps[i].name == name) {
                *out_index = i;
                return;
            }
            available += available.empty() ? comps[i].name : ", " + comps[i].name;
        }
        fail(BASALT_ERR_NOT_FOUND, "no {} named '{}' is loaded (available: {})", basalt_component_kind_name(kind), name,
             available.empty() ? "none" : available);
    });
}

}  // extern "C"
