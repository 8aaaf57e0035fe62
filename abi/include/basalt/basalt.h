/*
 * Basalt public C API: everything applications and other languages see.
 *
 * Conventions:
 *  - Fallible calls return basalt_status; on failure the calling thread's
 *    message is available from basalt_last_error() and outputs are untouched.
 *  - Opaque handles are created and destroyed in pairs by this library.
 *  - Structs passed in start with struct_size (set it to sizeof); structs
 *    filled by Basalt are written only up to the struct_size you set.
 *  - Strings are UTF-8. "Borrowed" pointers stay valid as stated.
 */
#ifndef BASALT_BASALT_H
#define BASALT_BASALT_H

#include "basalt/common.h"
#include "basalt/plugin_sampler.h"

BASALT_BEGIN_DECLS

/* ---- version and errors ---------------------------------------------------------------------------------------- */

/* Returns the library version as "MAJOR.MINOR.PATCH"; static string. Thread-safe. */
BASALT_API const char* basalt_version_string(void);
/* Writes the ABI version libbasalt implements into *major / *minor (either may be NULL). Thread-safe. */
BASALT_API void basalt_abi_version(uint32_t* major, uint32_t* minor);
/* Returns the calling thread's last error message ("" if none); valid until the thread's next Basalt call. */
BASALT_API const char* basalt_last_error(void);
/* Returns the static name of a status code, e.g. "BASALT_ERR_NOT_FOUND". Thread-safe. */
BASALT_API const char* basalt_status_name(basalt_status status);
/* Returns the static name of a component kind ("backend", "kv_cache", "sampler", "decoder", "steering"). */
BASALT_API const char* basalt_component_kind_name(basalt_component_kind kind);
/* Parses a kind name as returned by basalt_component_kind_name; returns 0 if unknown. Thread-safe. */
BASALT_API basalt_component_kind basalt_component_kind_from_name(const char* name);

/* ---- logging --------------------------------------------------------------------------------------------------- */

/* Receives every log line at or above the current level; `component` may be NULL. Called from any thread. */
typedef void (*basalt_log_callback)(basalt_log_level level, const char* component, const char* message,
                                    void* user_data);

/* Sets the process-wide log level (default WARN, or $BASALT_LOG). Thread-safe. */
BASALT_API void basalt_log_set_level(basalt_log_level level);
/* Returns the process-wide log level. Thread-safe. */
BASALT_API basalt_log_level basalt_log_get_level(void);
/* Parses "trace|debug|info|warn|error|off" into *out; BASALT_ERR_INVALID_ARGUMENT otherwise. Thread-safe. */
BASALT_API basalt_status basalt_log_level_from_name(const char* name, basalt_log_level* out);
/* Routes logs to callback (NULL restores stderr); user_data is borrowed until replaced. Thread-safe. */
BASALT_API void basalt_log_set_callback(basalt_log_callback callback, void* user_data);

/* ---- runtime and plugins --------------------------------------------------------------------------------------- */

/* A runtime: the set of loaded plugin libraries and their components. */
typedef struct basalt_runtime basalt_runtime;

enum {
    /* Skip discovery in the plugin folder next to libbasalt. */
    BASALT_RUNTIME_NO_DEFAULT_PLUGINS = 1u << 0,
    /* Skip discovery in $BASALT_PLUGIN_PATH. */
    BASALT_RUNTIME_NO_ENV_PLUGINS = 1u << 1
};

typedef struct basalt_runtime_params {
    uint32_t struct_size;
    uint32_t flags; /* BASALT_RUNTIME_* */
} basalt_runtime_params;

/*
 * Creates a runtime and discovers plugins: first the folder `basalt/plugins`
 * beside libbasalt (relocatable installs), then every entry of
 * $BASALT_PLUGIN_PATH (':'-separated folders or files). A library that fails to
 * load during discovery is skipped with a logged warning naming file and
 * reason. params may be NULL (defaults). *out is owned by the caller.
 * Thread-safe; the runtime itself may be shared by threads for lookups.
 */
BASALT_API basalt_status basalt_runtime_create(const basalt_runtime_params* params, basalt_runtime** out);
/* Unloads every plugin and frees the runtime; every object created from it must be destroyed first. NULL ignored. */
BASALT_API void basalt_runtime_destroy(basalt_runtime* runtime);
/*
 * Loads one plugin library explicitly. Fails (and loads nothing of it) when the
 * file cannot be loaded, lacks basalt_plugin_init, was built for another ABI
 * major, returns a bad descriptor, or provides a component name already
 * registered for the same kind (the message names both files).
 * Not thread-safe with other calls on the same runtime.
 */
BASALT_API basalt_status basalt_runtime_load_plugin(basalt_runtime* runtime, const char* path);
/* Returns the folder discovery searches beside libbasalt; static string. Thread-safe. */
BASALT_API const char* basalt_default_plugin_dir(void);

/* Description of a loaded component, filled by basalt_runtime_component_info. */
typedef struct basalt_component_info {
    uint32_t struct_size; /* set by the caller */
    basalt_component_kind kind;
    const char* name;        /* borrowed, valid until the runtime is destroyed */
    const char* description; /* borrowed, "" when the plugin gave none */
    uint32_t version_major;
    uint32_t version_minor;
    uint32_t version_patch;
    uint32_t plugin_abi_major; /* ABI version the plugin was built against */
    uint32_t plugin_abi_minor;
    uint32_t reserved0;
    const char* plugin_name; /* borrowed */
    const char* file;        /* borrowed: absolute path of the library */
} basalt_component_info;

/* Returns the number of loaded components. Thread-safe. */
BASALT_API size_t basalt_runtime_component_count(const basalt_runtime* runtime);
/* Describes component `index` (0 .. count-1, ordered by kind then name) into *out. Thread-safe. */
BASALT_API basalt_status basalt_runtime_component_info(const basalt_runtime* runtime, size_t index,
                                                       basalt_component_info* out);
/* Finds a component by kind and name; sets *out_index. BASALT_ERR_NOT_FOUND lists what exists. Thread-safe. */
BASALT_API basalt_status basalt_runtime_find_component(const basalt_runtime* runtime, basalt_component_kind kind,
                                                       const char* name, size_t* out_index);

/* ---- samplers -------------------------------------------------------------------------------------------------- */

/* One sampler instance (one sequence's state) of a loaded sampler component. */
typedef struct basalt_sampler basalt_sampler;

/* Creates an instance of sampler `name` configured by params (may be NULL); caller owns *out. Thread-safe. */
BASALT_API basalt_status basalt_sampler_create(basalt_runtime* runtime, const char* name, const basalt_params* params,
                                               basalt_sampler** out);
/* Destroys an instance; NULL is ignored. */
BASALT_API void basalt_sampler_destroy(basalt_sampler* sampler);
/* Applies the sampler to one candidate array (borrowed) in place. One thread per instance. */
BASALT_API basalt_status basalt_sampler_apply(basalt_sampler* sampler, basalt_candidates* candidates);
/* Applies n instances to n candidate arrays in one call (all instances of the same component). */
BASALT_API basalt_status basalt_sampler_apply_batch(basalt_sampler* const* samplers,
                                                    basalt_candidates* const* candidates, size_t n);
/* Tells the instance the token finally chosen for its sequence. One thread per instance. */
BASALT_API basalt_status basalt_sampler_accept(basalt_sampler* sampler, int32_t token);
/* Forgets the instance's per-sequence state. One thread per instance. */
BASALT_API basalt_status basalt_sampler_reset(basalt_sampler* sampler);
/* Deep-copies an instance including its state; caller owns *out. */
BASALT_API basalt_status basalt_sampler_clone(const basalt_sampler* sampler, basalt_sampler** out);
/* Returns the component's BASALT_SAMPLER_* flags. Thread-safe. */
BASALT_API uint32_t basalt_sampler_flags(const basalt_sampler* sampler);

BASALT_END_DECLS

#endif /* BASALT_BASALT_H */
