/*
 * Basalt plugin ABI: what a plugin library exports and what the host hands it.
 *
 * A plugin library exports exactly one symbol, `basalt_plugin_init`
 * (BASALT_PLUGIN_INIT_SYMBOL). The host calls it once after loading the
 * library, passing its ABI version and its services table; the plugin returns
 * a descriptor listing its components. Plugins never link against libbasalt:
 * everything they need from the host comes through `basalt_host`.
 */
#ifndef BASALT_PLUGIN_H
#define BASALT_PLUGIN_H

#include "basalt/common.h"

BASALT_BEGIN_DECLS

/*
 * Services the host provides to plugins. Valid from basalt_plugin_init until
 * the plugin's shutdown returns; all functions are thread-safe.
 */
typedef struct basalt_host {
    uint32_t struct_size;
    uint32_t abi_major; /* the host's ABI version */
    uint32_t abi_minor;
    uint32_t reserved0;
    void* ctx; /* opaque, pass back as the first argument of every call below */

    /* Logs a UTF-8 message at `level` on behalf of `component` (may be NULL). Thread-safe. */
    void (*log)(void* ctx, basalt_log_level level, const char* component, const char* message);
    /* Records the calling thread's error message for the status the plugin is about to return. Thread-safe. */
    void (*set_error)(void* ctx, basalt_status status, const char* message);
    /* Allocates `size` bytes aligned to `alignment` (a power of two); NULL on failure. Thread-safe. */
    void* (*alloc)(void* ctx, size_t size, size_t alignment);
    /* Frees memory from alloc; NULL is ignored. Thread-safe. */
    void (*free)(void* ctx, void* ptr);
} basalt_host;

/*
 * One component a library provides. `iface` points to the kind's interface
 * table (basalt_sampler_iface for BASALT_COMPONENT_SAMPLER, ...), which itself
 * starts with struct_size. Strings and tables are owned by the plugin and must
 * stay valid until its shutdown returns.
 */
typedef struct basalt_component_desc {
    uint32_t struct_size;
    basalt_component_kind kind;
    const char* name;        /* unique per kind across all loaded plugins, e.g. "greedy" */
    const char* description; /* one line, may be NULL; a backend's is read again after each device_count call
                                (since 1.7: one that enumerates its devices on first use may name them then) */
    uint32_t version_major;  /* the component's own version, independent of the ABI version */
    uint32_t version_minor;
    uint32_t version_patch;
    uint32_t reserved0;
    const void* iface;
} basalt_component_desc;

/*
 * What basalt_plugin_init returns. Owned by the plugin, valid until shutdown
 * returns. `components` is an array of pointers (not of structs) so that each
 * descriptor can carry its own struct_size. The first three fields
 * (struct_size, abi_major, abi_minor) keep their offsets in every ABI major,
 * so a host can always read which major a plugin was built for.
 */
typedef struct basalt_plugin_desc {
    uint32_t struct_size;
    uint32_t abi_major; /* BASALT_ABI_VERSION_MAJOR the plugin was compiled against */
    uint32_t abi_minor;
    uint32_t reserved0;
    const char* name; /* library name, e.g. "sampler-greedy" */
    size_t n_components;
    const basalt_component_desc* const* components;
    /* Optional (may be NULL): called once before the library is unloaded; no component is in use then. */
    void (*shutdown)(void);
} basalt_plugin_desc;

#define BASALT_PLUGIN_INIT_SYMBOL "basalt_plugin_init"

/*
 * The single export of a plugin library. Called once per load, on one thread.
 * On success sets *out_desc and returns BASALT_OK. On failure returns a status
 * and reports the reason through host->set_error. Must not throw.
 * A plugin may refuse a host whose major differs from its own (BASALT_ERR_ABI_MISMATCH).
 */
typedef basalt_status (*basalt_plugin_init_fn)(uint32_t host_abi_major, uint32_t host_abi_minor,
                                               const basalt_host* host, const basalt_plugin_desc** out_desc);

BASALT_END_DECLS

#endif /* BASALT_PLUGIN_H */
