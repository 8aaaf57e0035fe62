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
#include "basalt/plugin_decoder.h"
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

/* ---- progress of long work ------------------------------------------------------------------------------------ */

/*
 * Receives how far a long piece of work has come: `what` names it (static text) and `done` of `total` units are
 * finished (0 < total, done <= total; the last report of a piece has done == total, the first done == 0):
 *   "upload"   weight bytes copied to a backend that does not map the file (a session's creation; the CPU backend
 *              maps the file and reports nothing),
 *   "prefill"  tokens of one basalt_session_decode call that needs more than one forward pass (longer than n_batch;
 *              an engine's whole-prompt prefill goes through it),
 *   "quantize" input tensor bytes processed by basalt_model_quantize.
 * Called on the thread doing the work, synchronously between its steps (several threads at once when several
 * sessions work): keep it short, make it thread-safe, and do not call back into Basalt from it.
 */
typedef void (*basalt_progress_callback)(const char* what, uint64_t done, uint64_t total, void* user_data);
/* Installs the process-wide progress callback (NULL, the default: no reports); user_data is borrowed until replaced.
 * Thread-safe. */
BASALT_API void basalt_progress_set_callback(basalt_progress_callback callback, void* user_data);

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

/*
 * Registers a sampler component implemented by the application itself (no shared library), e.g. in Python
 * through ctypes callbacks. It is then listed, created (basalt_sampler_create) and used in chains exactly like
 * a plugin's sampler; its component info has plugin_name "in-process" and file "". The same checks as for a
 * plugin's component apply: name of 1-64 [A-Za-z0-9_.+-], iface->struct_size >= BASALT_SAMPLER_IFACE_MIN_SIZE,
 * create/destroy/apply non-NULL (BASALT_ERR_INVALID_ARGUMENT), a name no loaded or registered sampler has
 * (BASALT_ERR_DUPLICATE, naming who provides it). The table is copied; the functions it points to (and what
 * they use) must stay valid until the runtime is destroyed. The `host` passed to iface->create is the same
 * services table plugins get (use host->set_error to report a message). Not thread-safe with other calls on
 * the same runtime.
 */
BASALT_API basalt_status basalt_runtime_register_sampler(basalt_runtime* runtime, const char* name,
                                                         const basalt_sampler_iface* iface);

/* ---- sampler chains -------------------------------------------------------------------------------------------- */

/* Sampler instances applied in order to one sequence's logits, the last one selecting the token. */
typedef struct basalt_sampler_chain basalt_sampler_chain;

/*
 * Creates a chain from its text, e.g. "penalties:repeat=1.1,last_n=64;top_k:40;top_p:0.9;temp:0.7;dist:seed=42"
 * (docs/samplers.md: entries split by ';', parameters by ','; key=value or a bare value for the sampler's main
 * parameter). Fails with BASALT_ERR_FORMAT on malformed text ("bad sampler chain: an empty entry in '...'")
 * and when the last sampler does not select a token (lacks BASALT_SAMPLER_SELECTS), BASALT_ERR_NOT_FOUND for
 * an unknown sampler (listing those loaded) and the sampler's own status and message for a bad parameter
 * (naming the sampler, the key and the value). *out is owned by the caller; the runtime must outlive it.
 * Thread-safe with other creations; not with register/load calls on the same runtime.
 */
BASALT_API basalt_status basalt_sampler_chain_create(basalt_runtime* runtime, const char* spec,
                                                     basalt_sampler_chain** out);
/* Destroys a chain and its instances; NULL is ignored. */
BASALT_API void basalt_sampler_chain_destroy(basalt_sampler_chain* chain);
/*
 * One step: builds the candidates (id = index, logit = logits[i], n_vocab of them; logits borrowed for the call),
 * applies every sampler in order, writes the selected token into *out_token and accepts it into every sampler.
 * Fails naming the sampler that failed or selected nothing, leaving *out_token untouched.
 * One thread per chain at a time; distinct chains may be used concurrently.
 */
BASALT_API basalt_status basalt_sampler_chain_sample(basalt_sampler_chain* chain, const float* logits, size_t n_vocab,
                                                     int32_t* out_token);
/* Applies every sampler in order to candidates (borrowed) in place, without accepting anything; on success
 * candidates->selected indexes the chosen entry. One thread per chain at a time. */
BASALT_API basalt_status basalt_sampler_chain_apply(basalt_sampler_chain* chain, basalt_candidates* candidates);
/* Tells every sampler of the chain that `token` was chosen (e.g. a prompt token, or a token picked outside
 * the chain). One thread per chain at a time. */
BASALT_API basalt_status basalt_sampler_chain_accept(basalt_sampler_chain* chain, int32_t token);
/* Forgets every sampler's per-sequence state (penalty window, dist generator back to its seed). One thread
 * per chain at a time. */
BASALT_API basalt_status basalt_sampler_chain_reset(basalt_sampler_chain* chain);
/* Deep-copies a chain, every sampler's state included (a forked sequence); caller owns *out. The source must
 * not be used by another thread during the call. */
BASALT_API basalt_status basalt_sampler_chain_clone(const basalt_sampler_chain* chain, basalt_sampler_chain** out);
/* Returns the number of samplers in the chain (0 for NULL). Thread-safe. */
BASALT_API size_t basalt_sampler_chain_length(const basalt_sampler_chain* chain);
/* Returns sampler `index` of the chain (borrowed, owned by the chain), or NULL when out of range. Thread-safe. */
BASALT_API basalt_sampler* basalt_sampler_chain_get(basalt_sampler_chain* chain, size_t index);
/* Returns the name of sampler `index` (borrowed until the chain is destroyed), or NULL when out of range.
 * Thread-safe. */
BASALT_API const char* basalt_sampler_chain_name(const basalt_sampler_chain* chain, size_t index);

/* ---- models ---------------------------------------------------------------------------------------------------- */

/* A loaded model file (memory-mapped GGUF, validated, with its hyper-parameters and tokenizer). */
typedef struct basalt_model basalt_model;

typedef struct basalt_model_params {
    uint32_t struct_size;
    uint32_t flags; /* reserved, 0 */
} basalt_model_params;

/*
 * Maps and validates the GGUF file at path (v2/v3, every field checked) and reads its hyper-parameters.
 * A bare name that is not a file ("target", "draft"; "" for the default "target") loads the model shipped
 * with Basalt from $BASALT_MODELS_DIR or <libdir>/../share/basalt/models. Fails with BASALT_ERR_NOT_FOUND /
 * BASALT_ERR_IO / BASALT_ERR_FORMAT naming the file, field and value. runtime and params may be NULL. *out is owned by
 * the caller (basalt_model_free). Thread-safe.
 */
BASALT_API basalt_status basalt_model_load(basalt_runtime* runtime, const char* path, const basalt_model_params* params,
                                           basalt_model** out);
/* Frees a model; NULL is ignored. Every object created from it must be destroyed first. */
BASALT_API void basalt_model_free(basalt_model* model);

/* Hyper-parameters and sizes of a model, filled by basalt_model_describe (caller sets struct_size). */
typedef struct basalt_model_info {
    uint32_t struct_size;
    uint32_t gguf_version;
    const char* arch; /* borrowed until the model is freed, e.g. "llama" */
    const char* name; /* borrowed, "" when the file has none */
    uint32_t n_layer;
    uint32_t n_embd;
    uint32_t n_head;
    uint32_t n_head_kv;
    uint32_t head_dim_k;
    uint32_t head_dim_v;
    uint32_t n_ff;
    uint32_t n_ctx_train;
    uint32_t n_vocab;
    uint32_t n_expert;
    uint32_t n_expert_used;
    uint32_t sliding_window;
    uint64_t n_params;
    uint64_t weight_bytes;
    uint64_t file_bytes;
    uint32_t n_tensors;
    int32_t supported; /* non-zero when Basalt has a graph builder for the architecture */
    /* since 1.4: embeddings (docs/embeddings.md) */
    int32_t pooling; /* BASALT_POOLING_* the model embeds with by default; BASALT_POOLING_MODEL (0): it cannot embed */
    uint32_t n_cls_out; /* outputs of its rank (classifier) head; 0: none, it cannot rerank */
    /* since 1.4: the RoPE scaling sessions apply, in words ("none", "linear x8 on global layers; ...", "yarn x32
     * (original context 4096, beta 32/1)", "frequency factors from rope_freqs.weight", ...); borrowed until the
     * model is freed. */
    const char* rope_scaling;
    /* since 1.8 */
    uint32_t n_layer_recurrent; /* layers that keep a per-sequence recurrent state (Gated DeltaNet); 0: every
                                   sequence can be cut back to any length */
    uint32_t reserved0;
} basalt_model_info;

/* Describes the model into *out. Thread-safe. */
BASALT_API basalt_status basalt_model_describe(const basalt_model* model, basalt_model_info* out);
/* since 1.4. The decoder's block count of an encoder-decoder model (t5; <arch>.decoder_block_count, default the
 * encoder's n_layer) into *out; 0 for a decoder-only model. Thread-safe. */
BASALT_API basalt_status basalt_model_decoder_layers(const basalt_model* model, uint32_t* out);
/* Renders metadata `key` as text into *out (borrowed until the model is freed; arrays are summarised).
 * BASALT_ERR_NOT_FOUND when absent. Thread-safe. */
BASALT_API basalt_status basalt_model_meta(const basalt_model* model, const char* key, const char** out);

/*
 * Checks that Basalt can run the model, without a runtime, backend or session: the forward graph of a one-token
 * batch is built against the file's tensors with nothing placed or allocated. BASALT_OK when it can;
 * BASALT_ERR_UNSUPPORTED for an architecture this build has no graph builder for; BASALT_ERR_FORMAT for a tensor the
 * architecture's graph needs that is missing, has a zero-sized dimension or another shape than the graph needs
 * (basalt_last_error names the file, the tensor and the shapes). basalt_session_create and basalt_engine_create
 * refuse such a model with the same message before they allocate anything; tokenization needs only the vocabulary
 * and works either way. Thread-safe.
 */
BASALT_API basalt_status basalt_model_check_runnable(const basalt_model* model);

/* Array metadata element by element (e.g. a vocabulary's tokenizer.ggml.tokens / scores / token_type, to copy it
 * into a basalt_gguf_writer). The element count of array `key` into *out_n: BASALT_ERR_NOT_FOUND when the key is
 * absent, BASALT_ERR_INVALID_ARGUMENT when it is not an array. Thread-safe. */
BASALT_API basalt_status basalt_model_meta_array_size(const basalt_model* model, const char* key, size_t* out_n);
/* Element `index` of string array `key`: *out (NUL-terminated, borrowed until the model is freed) and *out_len (may
 * be NULL) its length in bytes, which counts any NUL inside it. BASALT_ERR_INVALID_ARGUMENT naming the key for an
 * index past the end or an array of another type. Thread-safe. */
BASALT_API basalt_status basalt_model_meta_array_string(const basalt_model* model, const char* key, size_t index,
                                                        const char** out, size_t* out_len);
/* Element `index` of numeric or bool array `key` as a double (exact for every 32-bit integer and every float32;
 * bools are 0/1). Errors as basalt_model_meta_array_string. Thread-safe. */
BASALT_API basalt_status basalt_model_meta_array_number(const basalt_model* model, const char* key, size_t index,
                                                        double* out);

/* One tensor of a model file, filled by basalt_model_tensor_info (caller sets struct_size). */
typedef struct basalt_model_tensor {
    uint32_t struct_size;
    int32_t type;     /* basalt_dtype */
    const char* name; /* borrowed until the model is freed */
    uint32_t n_dims;
    uint32_t reserved0;
    int64_t ne[4]; /* ne[0] contiguous; unused dims are 1 */
    uint64_t n_bytes;
    uint64_t offset; /* from the start of the file */
} basalt_model_tensor;

/* Returns the number of tensors in the model file. Thread-safe. */
BASALT_API size_t basalt_model_tensor_count(const basalt_model* model);
/* Describes tensor `index` (file order) into *out. Thread-safe. */
BASALT_API basalt_status basalt_model_tensor_info(const basalt_model* model, size_t index, basalt_model_tensor* out);

/* What to plan for. Zero fields take the defaults noted. */
typedef struct basalt_plan_params {
    uint32_t struct_size;
    uint32_t n_ctx;      /* 0: the training context, at most 4096 */
    uint32_t n_batch;    /* 0: 512 (capped at n_ctx) */
    basalt_dtype k_type; /* stored type of keys; -1: F16 */
    basalt_dtype v_type; /* stored type of values; -1: F16 */
    /* since 1.1 */
    uint32_t n_seq_max; /* sequences of the session; 0: 1 (sliding-window layers keep a window per sequence) */
    /* since 1.4 */
    uint32_t kv_residual; /* residual window R of quantized K/V (kv-paged's "residual"); 0: none */
    uint32_t reserved1;
} basalt_plan_params;

/* The memory a session of the given shape needs, computed before anything is allocated. */
typedef struct basalt_memory_plan {
    uint32_t struct_size;
    uint32_t n_ctx;
    uint32_t n_batch;
    int32_t k_type;
    int32_t v_type;
    uint32_t reserved0;
    uint64_t weight_bytes;
    uint64_t kv_bytes_per_token; /* K+V of one token over all attention layers */
    uint64_t kv_bytes;           /* the whole cache (sliding-window layers capped: kv_cells_window) */
    uint64_t scratch_bytes;      /* activations of one layer for n_batch tokens, inputs, logits (no score matrix) */
    uint64_t total_bytes;
    /* since 1.1 */
    uint32_t n_seq_max;
    uint32_t reserved1;
    uint64_t kv_cells_full;   /* K/V rows of each full-attention layer (n_ctx) */
    uint64_t kv_cells_window; /* K/V rows of each sliding-window layer: n_seq_max x (window + n_batch) when that
                                 is below n_ctx, else n_ctx; 0 without sliding-window layers */
    uint64_t logits_bytes;    /* of scratch_bytes: the logits of all n_batch rows, in host memory and in the
                                 backend's IO buffer (a step asking for fewer rows needs that much less) */
    /* since 1.7 */
    uint64_t host_bytes; /* the model's host tables: its parsed metadata and its tokenizer's vocabulary (built for
                            the plan when it was not yet), part of total_bytes */
    /* since 1.9 */
    uint64_t state_checkpoint_bytes; /* a session's budget for recurrent-state checkpoints (hybrid models with
                                        basalt_session_params.state_checkpoint_bytes), part of total_bytes; 0 in
                                        basalt_model_plan */
} basalt_memory_plan;

/* Computes the memory plan for params (NULL: defaults) into *out (caller sets struct_size). Thread-safe. */
BASALT_API basalt_status basalt_model_plan(const basalt_model* model, const basalt_plan_params* params,
                                           basalt_memory_plan* out);
/* Parses a type name ("f16", "q8_0", "Q4_K", ...) into *out (a basalt_dtype). Thread-safe. */
BASALT_API basalt_status basalt_dtype_from_name(const char* name, int32_t* out);
/* Returns the static lower-case name of a basalt_dtype, or "unknown". Thread-safe. */
BASALT_API const char* basalt_dtype_name(int32_t dtype);

/* ---- sessions -------------------------------------------------------------------------------------------------- */

/* A session: one model on one backend instance with one KV-cache manager, decoding ragged batches. */
typedef struct basalt_session basalt_session;

typedef struct basalt_session_params {
    uint32_t struct_size;
    uint32_t n_ctx;     /* cache slots for all sequences together; 0: training context, at most 4096 */
    uint32_t n_batch;   /* tokens per forward pass (bigger batches are split); 0: 512 */
    uint32_t n_seq_max; /* sequence ids 0 .. n_seq_max-1; 0: 1 */
    uint32_t n_threads; /* backend threads; 0: the backend's default */
    uint32_t reserved0;
    const char* backend;                 /* backend component name; NULL: "cpu" */
    const char* kv_cache;                /* manager name or "NAME:key=value,..." (after kv_params); NULL: "paged" */
    const basalt_params* backend_params; /* may be NULL; borrowed for the call */
    const basalt_params* kv_params;      /* may be NULL; borrowed for the call */
    /* since 1.4 */
    const char* moe_router; /* MoE routing (docs/moe.md): NULL or "dropless" (top-k, the default), or
                               "capacity:factor=C,overflow=drop|reroute": each expert takes at most
                               ceil(C * tokens * k / n_expert) assignments per forward pass. Refused for a model
                               without experts. Borrowed for the call */
    /* since 1.9 */
    uint64_t state_checkpoint_bytes; /* a hybrid model (recurrent layers): host memory for checkpoints of the
                                        recurrent state at block boundaries, which basalt_session_prefix_attach
                                        needs to reuse a prefix (docs/kv-cache.md "Prefix reuse on a hybrid model");
                                        0: none kept, no prefix reuse. Ignored for other models */
} basalt_session_params;

/*
 * Creates a session for model on the runtime's plugins. Fails naming the missing backend / cache manager,
 * an unsupported architecture, or what the backend refused. The model and runtime must outlive the
 * session. *out is owned by the caller. Thread-safe; a session is used by one thread at a time.
 */
BASALT_API basalt_status basalt_session_create(basalt_runtime* runtime, const basalt_model* model,
                                               const basalt_session_params* params, basalt_session** out);
/* Frees a session; NULL is ignored. */
BASALT_API void basalt_session_free(basalt_session* session);
/*
 * Runs a ragged batch: tokens of several sequences with their positions (each sequence's positions must
 * continue where it stopped) and sequence ids; logits are computed for rows with want_logits[i] != 0 (NULL:
 * the last row only). Everything is validated first (ids, positions, context room: BASALT_ERR_CAPACITY
 * names the sequence and the context) so a refused batch changes nothing.
 */
BASALT_API basalt_status basalt_session_decode(basalt_session* session, const basalt_batch* batch);
/*
 * since 1.4. Encoder-decoder models (t5): runs the encoder over a ragged batch of sources, each sequence's whole
 * source (positions 0..n-1) into an empty sequence; want_logits is ignored. Every decoder layer's cross-attention
 * K/V of the source are kept for the sequence's decoder steps (shared by forks, freed by seq_drop); a sequence must
 * be encoded before basalt_session_decode takes its decoder tokens (the first usually the model's decoder start
 * token: metadata <arch>.decoder_start_token_id, read with basalt_model_meta). Validated first: BASALT_ERR_UNSUPPORTED
 * for a decoder-only model, BASALT_ERR_CAPACITY for more source tokens than free cross-attention rows (n_ctx in all).
 * Sources are packed into encoder passes of at most n_batch tokens; a longer source has a pass of its own. Not
 * thread-safe with other calls on the session.
 */
BASALT_API basalt_status basalt_session_encode(basalt_session* session, const basalt_batch* batch);
/* Number of logits rows produced by the last decode. */
BASALT_API size_t basalt_session_n_outputs(const basalt_session* session);
/* Logits (n_vocab floats) of output row `row` of the last decode, in batch order; borrowed until the next
 * decode or free. */
BASALT_API basalt_status basalt_session_logits(const basalt_session* session, size_t row, const float** out);
/* Vocabulary size (length of a logits row) and the session's context size. */
BASALT_API size_t basalt_session_n_vocab(const basalt_session* session);
BASALT_API uint32_t basalt_session_n_ctx(const basalt_session* session);
/*
 * What the session allocated (since 1.1), in the plan's struct so the two compare field by field: n_ctx, n_batch,
 * n_seq_max, k_type/v_type (as the cache manager chose them), weight_bytes (the weights buffer the backend holds:
 * the wrapped file, or the uploaded data section), kv_bytes_per_token, kv_bytes (the K and V buffers),
 * kv_cells_full / kv_cells_window (rows per layer), scratch_bytes (the session's IO buffer and host copy of
 * the logits as large as they have grown so far; a backend's own work memory is not visible here), logits_bytes
 * (of that, the logits) and total_bytes (their sum); host_bytes is 0 (the host tables are the model's, see
 * basalt_model_plan). Writes up to out->struct_size.
 * Thread-safe with other const calls on the session.
 */
BASALT_API basalt_status basalt_session_memory(const basalt_session* session, basalt_memory_plan* out);
/* Tokens currently cached for a sequence. */
BASALT_API basalt_status basalt_session_seq_length(const basalt_session* session, int32_t seq_id, uint32_t* out);
/* Forgets a sequence (its cache slots are released). */
BASALT_API basalt_status basalt_session_seq_drop(basalt_session* session, int32_t seq_id);
/* Makes empty sequence dst a copy-on-write copy of src (beams, speculation). */
BASALT_API basalt_status basalt_session_seq_fork(basalt_session* session, int32_t src_seq_id, int32_t dst_seq_id);
/*
 * Forgets the positions >= n_keep of a sequence (since 1.1), e.g. the draft tokens a speculative step rejected;
 * the next decode of that sequence continues at position n_keep. Blocks wholly past n_keep are released, a
 * shared block partly kept is copied on its next write. n_keep == length is a no-op; n_keep > length fails
 * with BASALT_ERR_INVALID_ARGUMENT naming both; a cache manager without the entry gives BASALT_ERR_UNSUPPORTED.
 * A failed call changes nothing. One thread per session at a time.
 */
BASALT_API basalt_status basalt_session_seq_truncate(basalt_session* session, int32_t seq_id, uint32_t n_keep);
/*
 * Prefix caching (since 1.2): attaches to empty sequence seq_id the longest chain of cached full blocks whose
 * tokens are a prefix of tokens[0 .. n_tokens) and were indexed under the sequence's salt; *out_n_matched gets
 * the tokens now held (a multiple of the block size, 0 when nothing matches or the manager caches no
 * prefixes). The next decode continues at position *out_n_matched. Blocks of dropped sequences stay cached
 * until their room is needed (least recently used first). One thread per session at a time.
 */
BASALT_API basalt_status basalt_session_prefix_attach(basalt_session* session, int32_t seq_id, const int32_t* tokens,
                                                      size_t n_tokens, size_t* out_n_matched);
/* Sets the prefix-cache salt of an empty sequence (since 1.2; 0: none): its blocks match only sequences with the
 * same salt. Forks keep it, drop clears it. One thread per session at a time. */
BASALT_API basalt_status basalt_session_seq_set_salt(basalt_session* session, int32_t seq_id, uint64_t salt);
/*
 * Activation steering of sequence seq_id's rows from the next decode on (since 1.3): vectors holds n_layer x n_embd
 * floats (layer il's at il * n_embd, counted from 0), layers n_layer flags; where a flag is non-zero the vector is
 * added to the residual stream at that layer's output (after its feed-forward residual add, where llama.cpp adds
 * control vectors). Both are copied to the device now. vectors == NULL clears the sequence's steering. n_layer and
 * n_embd must be the model's (BASALT_ERR_INVALID_ARGUMENT naming both otherwise). A fork copies the steering; rows
 * of unsteered sequences are computed exactly as without this call. The prefix cache does not know about it: give
 * steered sequences their own salt. One thread per session at a time.
 */
BASALT_API basalt_status basalt_session_seq_set_steering(basalt_session* session, int32_t seq_id, const float* vectors,
                                                         const uint8_t* layers, uint32_t n_layer, uint32_t n_embd);
/* OBSERVE (since 1.3): from the next decode on, every decode copies the residual rows at the output of the layers
 * whose flag (layers[0..n_layer), n_layer the model's) is non-zero (the steering hook point, after any steering) to
 * the host; layers == NULL turns it off. One thread per session at a time. */
BASALT_API basalt_status basalt_session_set_observe(basalt_session* session, const uint8_t* layers, uint32_t n_layer);
/* The rows observed at layer `layer` by the last decode: *out_rows rows (every batch row, in batch order) of n_embd
 * floats at *out, borrowed until the next decode (0 rows for a layer not observed). One thread per session. */
BASALT_API basalt_status basalt_session_observed(const basalt_session* session, uint32_t layer, const float** out,
                                                 size_t* out_rows);

/* MoE routing statistics of one layer (since 1.4), summed over the forward passes since collection was turned on
 * (filled by basalt_session_moe_stats / basalt_engine_moe_stats; caller sets struct_size). */
typedef struct basalt_moe_stats {
    uint32_t struct_size;
    uint32_t n_expert;    /* experts of the layer (entries of per_expert) */
    uint64_t passes;      /* forward passes counted */
    uint64_t tokens;      /* token rows routed */
    uint64_t assignments; /* assignments computed by an expert (kept, and rerouted to another) */
    uint64_t dropped;     /* assignments dropped under capacity (the token keeps its residual for that share) */
    uint64_t rerouted;    /* assignments moved to the token's next-ranked expert with room */
    double imbalance;     /* max / mean of the per-expert assignments (1: even; 0: nothing assigned) */
} basalt_moe_stats;

/* Turns the collection of MoE routing statistics on (non-zero: counters start at 0) or off, from the next decode
 * on (since 1.4). A model without experts is refused (BASALT_ERR_INVALID_ARGUMENT). One thread per session. */
BASALT_API basalt_status basalt_session_set_moe_stats(basalt_session* session, int32_t enable);
/* The routing statistics of layer `layer` into *out (written up to out->struct_size) and the assignments of each
 * expert into per_expert[0 .. min(capacity, n_expert)) (may be NULL when capacity is 0). Fails when collection is
 * off or the layer is out of range. One thread per session at a time. */
BASALT_API basalt_status basalt_session_moe_stats(const basalt_session* session, uint32_t layer, basalt_moe_stats* out,
                                                  uint64_t* per_expert, size_t capacity);

/* ---- engine: requests, continuous batching, decoders ------------------------------------------------------- */

/*
 * An engine: the one generation loop. It owns a session over a model (and optionally one over a second model
 * with the same vocabulary: a draft or an amateur), a FIFO queue of requests and the running ones. Each step
 * packs the work of every running request into one ragged batch per model under a token budget: decode tokens
 * first, then prefill chunks, in admission order. A request is admitted when a sequence and the KV blocks it needs
 * for its next step are free; when a step's blocks run out, the newest running requests are preempted (their K/V
 * dropped, recomputed when they are admitted again, their output unchanged), so the oldest always progress
 * (since 1.7; BASALT_ENGINE_ADMIT_RESERVE: admitted only when the worst-case KV room, prompt + max_tokens capped at
 * n_ctx times the sequences its decoder needs, is free, never preempted). The others wait in the queue.
 * docs/engine.md.
 */
typedef struct basalt_engine basalt_engine;
/* One generation request of an engine. */
typedef struct basalt_request basalt_request;

enum {
    /* Run the step loop on a thread of the engine's own (started by basalt_engine_create, joined by destroy):
     * callers only submit, poll and wait. Without it the caller drives the loop (basalt_engine_step/_run). */
    BASALT_ENGINE_OWN_THREAD = 1u << 0,
    /* Turn prefix caching off (since 1.2): by default a request's prompt reuses the K/V of the longest cached
     * chain of full blocks holding the same tokens (with the same cache_salt), computed by earlier or running
     * requests; only the rest is computed. */
    BASALT_ENGINE_NO_PREFIX_CACHE = 1u << 1,
    /* Collect the main model's MoE routing statistics (since 1.4; basalt_engine_moe_stats). */
    BASALT_ENGINE_MOE_STATS = 1u << 2,
    /* Admit by worst-case KV room, without preemption (since 1.7): the policy of 1.0-1.6. By default a request is
     * admitted by the KV blocks it needs now and the newest running requests are preempted when blocks run out. */
    BASALT_ENGINE_ADMIT_RESERVE = 1u << 3
};

typedef struct basalt_engine_params {
    uint32_t struct_size;
    uint32_t flags;            /* BASALT_ENGINE_* */
    uint32_t n_ctx;            /* positions one request's sequence may hold; 0: training context, at most 4096 */
    uint32_t n_parallel;       /* requests running at once; 0: 1 */
    uint32_t n_seq_max;        /* cache sequences of the session (beams need several); 0: n_parallel */
    uint32_t n_kv_slots;       /* KV slots shared by all sequences; 0: n_ctx x n_seq_max */
    uint32_t max_batch_tokens; /* token budget of one step; 0: 512 */
    uint32_t prefill_chunk;    /* longest prefill piece per step; 0: whole prompts (never split) */
    uint32_t n_threads;        /* backend threads; 0: the backend's default */
    uint32_t reserved0;
    const char* backend;                 /* backend component; NULL: "cpu" */
    const char* kv_cache;                /* KV cache manager or "NAME:key=value,..." as for sessions; NULL: "paged" */
    const basalt_params* backend_params; /* may be NULL; borrowed for the call */
    const basalt_params* kv_params;      /* may be NULL; borrowed for the call */
    const basalt_model* second_model;    /* draft/amateur with the same vocabulary, or NULL; must outlive the engine */
    /* since 1.4 */
    const char* moe_router; /* MoE routing of every batch (as basalt_session_params.moe_router; a second model
                               without experts stays dropless). NULL: dropless. Borrowed for the call */
    /* since 1.7: the step-time budget (docs/engine.md "Step-time budget"): while requests decode, prompt pieces
       join a step only as far as its predicted time stays within the budget; with no decode, prompts go at full
       speed */
    double max_step_ms;     /* > 0: the budget in ms; 0: max_step_factor x the predicted time of the step's decode
                               rows alone; < 0: no budget (prompt pieces as packed). NaN/inf are refused */
    double max_step_factor; /* with max_step_ms 0: that multiple, at least 1; 0: 2 */
    /* since 1.9 */
    uint64_t prefix_state_bytes; /* a hybrid model's prefix cache: host memory for recurrent-state checkpoints
                                    (as basalt_session_params.state_checkpoint_bytes); 0: room for 16 states of a
                                    sequence, or 2 per running request (n_parallel) when that is more. Nothing
                                    is kept with BASALT_ENGINE_NO_PREFIX_CACHE */
} basalt_engine_params;

/*
 * Creates an engine over model (and params->second_model when set: a vocabulary of another size is refused
 * naming both sizes). Fails like basalt_session_create for the backend, cache manager or memory. runtime and
 * the models must outlive the engine; *out is owned by the caller. Thread-safe.
 */
BASALT_API basalt_status basalt_engine_create(basalt_runtime* runtime, const basalt_model* model,
                                              const basalt_engine_params* params, basalt_engine** out);
/* Cancels every unfinished request, stops the engine's thread (if any), frees the engine. Request handles stay
 * valid (finished, reason CANCELLED) until basalt_request_free. NULL is ignored. Not concurrent with step/run.
 * Called from a request callback of this same engine it is refused: it logs an error, sets basalt_last_error and
 * returns with the engine untouched and still running (its step is the calling thread); destroy it afterwards. */
BASALT_API void basalt_engine_destroy(basalt_engine* engine);

/* Receives a request's new output after each engine step that produced some: tokens (n_tokens) and the UTF-8
 * text they complete (text_len bytes, not NUL-terminated, never a partial character or a held-back stop string
 * prefix), and finish_reason (BASALT_FINISH_*, NONE while running; the last call has it set). Buffers are
 * borrowed for the call. Called on the thread running the step, with no engine lock held: it may call
 * basalt_request_* and basalt_engine_submit, not basalt_engine_step/_run/_destroy of the same engine (refused:
 * step/run return BASALT_ERR_INVALID_ARGUMENT naming the call, destroy does nothing, see basalt_engine_destroy) nor
 * basalt_request_wait with no limit on a request of it that has nothing unread (refused the same way). */
typedef void (*basalt_request_callback)(basalt_request* request, const int32_t* tokens, size_t n_tokens,
                                        const char* text, size_t text_len, int32_t finish_reason, void* user_data);

enum {
    BASALT_REQUEST_NO_SPECIAL = 1u << 0,    /* tokenize the text prompt without BOS/EOS */
    BASALT_REQUEST_PARSE_SPECIAL = 1u << 1, /* control-token text in the prompt becomes the token */
    BASALT_REQUEST_IGNORE_EOG = 1u << 2,    /* do not stop at the vocabulary's end-of-generation tokens */
    BASALT_REQUEST_LOGPROBS = 1u << 3,      /* since 1.4: record each emitted token's log-probability
                                               (basalt_request_logprob); decoder 'sample' only */
    BASALT_REQUEST_EMBED = 1u << 4          /* since 1.4: embed the prompt (an embedding model's input) instead of
                                               generating: pooling / normalize / dimensions below, the result by
                                               basalt_request_embedding; sampling fields are ignored */
};

/* since 1.4. How an embedding request turns per-token hidden states into its result (docs/embeddings.md). */
enum {
    BASALT_POOLING_MODEL = 0, /* the model's own (<arch>.pooling_type; mean for an encoder without one) */
    BASALT_POOLING_NONE = 1,  /* one vector per token */
    BASALT_POOLING_MEAN = 2,  /* the mean of the input's tokens */
    BASALT_POOLING_CLS = 3,   /* the first token's ([CLS]) */
    BASALT_POOLING_LAST = 4,  /* the last token's */
    BASALT_POOLING_RANK = 5   /* the rank head's scores (rerankers: n_cls_out values, not normalised) */
};
/* since 1.4. Normalisation of an embedding request's vectors. */
enum {
    BASALT_NORMALIZE_L2 = 0,  /* unit Euclidean length (the default, as Ollama and llama-server do) */
    BASALT_NORMALIZE_NONE = 1 /* as the model gives them */
};

typedef struct basalt_request_params {
    uint32_t struct_size;
    uint32_t flags;        /* BASALT_REQUEST_*; other bits are refused (BASALT_ERR_INVALID_ARGUMENT) */
    const char* prompt;    /* UTF-8 text (prompt_len bytes), tokenized with BOS as the vocabulary asks */
    size_t prompt_len;     /* SIZE_MAX: prompt is NUL-terminated */
    const int32_t* tokens; /* the prompt as token ids instead of text (when non-NULL, prompt is ignored) */
    size_t n_tokens;       /* borrowed for the call */
    const char* samplers;  /* sampler chain text (basalt_sampler_chain_create); NULL: "greedy" */
    const char* decoder;   /* decoder spec "NAME[:key=value,...]" (e.g. "sample"); NULL: "sample" */
    int32_t max_tokens;    /* tokens to generate at most; -1: until the context is full */
    int32_t reserved0;
    int64_t seed;               /* -1: the chain's own; else given to every sampler "dist" without its own seed */
    const int32_t* stop_tokens; /* extra end-of-generation token ids (n_stop_tokens, each in the vocabulary, else
                                   refused naming the entry), borrowed for the call */
    size_t n_stop_tokens;
    const char* const* stop; /* stop strings (n_stop, NUL-terminated): the output ends before the first match */
    size_t n_stop;
    basalt_request_callback callback; /* may be NULL (poll instead) */
    void* user_data;                  /* passed to callback; borrowed until the request finishes */
    /* since 1.2 */
    const char* cache_salt; /* prefix-cache isolation: requests share cached K/V only with the same salt (NULL or
                               "": the shared default); e.g. one salt per tenant. Copied. */
    /* since 1.3 */
    const char* const* steer; /* activation steering: n_steer specs "FILE[:SCALE[:A-B]]" (llama.cpp control-vector
                                 GGUF, scale default 1, layers A..B counted from 0, default all), summed; each file
                                 is checked against the model at submit. The steering joins the prefix-cache salt.
                                 Copied. NULL / 0: none */
    size_t n_steer;
    /* since 1.4: encoder-decoder models (t5). With neither field set, the prompt (text or tokens) is the source and
       the decoder starts from the model's decoder start token. With one set, the source is this and the prompt, if
       any, is the decoder's prefix: tokens as given (the start token included), text tokenized without special
       tokens after the start token. A decoder-only model refuses a source. */
    const char* source;           /* the encoder's input text (NUL-terminated), tokenized as a text prompt is (T5's
                                     vocabulary appends </s>); copied */
    const int32_t* source_tokens; /* the source as token ids instead (when non-NULL, source is ignored); borrowed */
    size_t n_source_tokens;
    /* since 1.4: with BASALT_REQUEST_LOGPROBS, also record this many most likely alternatives per token (0..20) */
    int32_t n_top_logprobs;
    int32_t reserved1;
    /* since 1.4: with BASALT_REQUEST_EMBED */
    int32_t pooling;     /* BASALT_POOLING_* (0: the model's) */
    int32_t normalize;   /* BASALT_NORMALIZE_* (0: L2) */
    uint32_t dimensions; /* keep the first this many values of each vector before normalising (Matryoshka models);
                            0: all; more than n_embd is refused */
    uint32_t reserved2;
    /* since 1.5: structured output. The generated text is constrained to `grammar` (NUL-terminated, copied), read
       as grammar_kind says (BASALT_GRAMMAR_*; docs/structured-output.md); a grammar that does not compile is
       refused at submit naming the position or keyword. NULL / BASALT_GRAMMAR_NONE: unconstrained. */
    const char* grammar;
    int32_t grammar_kind;
    int32_t reserved3;
} basalt_request_params;

/* since 1.5: how basalt_request_params.grammar is read. */
enum {
    BASALT_GRAMMAR_NONE = 0,
    BASALT_GRAMMAR_GBNF = 1,        /* llama.cpp's GBNF dialect, start rule `root` */
    BASALT_GRAMMAR_JSON_SCHEMA = 2, /* a JSON Schema (text), compiled to GBNF */
    BASALT_GRAMMAR_REGEX = 3,       /* a regular expression the whole output matches */
    BASALT_GRAMMAR_JSON = 4,        /* any JSON object (OpenAI's json_object); grammar is ignored */
    BASALT_GRAMMAR_GBNF_SCHEMAS = 5 /* since 1.6: {"gbnf": TEXT, "schemas": {NAME: SCHEMA}}: GBNF where rule NAME
                                       matches the JSON Schema (tool calls: literal markers around arguments) */
};

/* What a decoder needs for one request (filled by basalt_decoder_requirements; caller sets struct_size). */
typedef struct basalt_decoder_needs {
    uint32_t struct_size;
    uint32_t n_seq;     /* request-local sequences (beam search: its width): n_seq_max and n_kv_slots must allow them */
    uint32_t n_models;  /* 2 when it needs the engine's second_model (speculative with a draft, contrastive) */
    uint32_t n_outputs; /* hypotheses it gives (n-best) */
    /* since 1.8 */
    uint32_t n_snapshot_seq; /* more sequences it takes on a model with a recurrent state (basalt_model_info
                                n_layer_recurrent > 0): size n_seq_max for n_seq + n_snapshot_seq there */
    uint32_t reserved0;
} basalt_decoder_needs;

/* Creates decoder `decoder` ("NAME[:key=value,...]"; NULL: "sample") from the runtime's plugins, asks what it
 * needs and destroys it: size an engine for a request before creating it. Unknown decoders (naming those
 * loaded) and refused parameters fail as basalt_engine_submit would. Thread-safe. */
BASALT_API basalt_status basalt_decoder_requirements(basalt_runtime* runtime, const char* decoder,
                                                     basalt_decoder_needs* out);

/*
 * Queues a request; it starts when admission allows (FIFO). Everything is checked first: the prompt
 * (empty, longer than n_ctx, an unknown id), the chain, the decoder spec (an unknown decoder names those
 * loaded; a decoder needing the second model when none is attached), and a worst case that can never fit the
 * cache (BASALT_ERR_CAPACITY naming both figures). *out is owned by the caller (basalt_request_free); the
 * engine keeps what it needs. Thread-safe.
 */
BASALT_API basalt_status basalt_engine_submit(basalt_engine* engine, const basalt_request_params* params,
                                              basalt_request** out);
/* Runs one scheduler step (admission, one batched forward per model, the decoders' consume); *out_active (may
 * be NULL) gets the number of queued + running requests left. Only without BASALT_ENGINE_OWN_THREAD, from
 * one thread at a time, never from a request callback of this engine (BASALT_ERR_INVALID_ARGUMENT). A failing decoder
 * or sampler fails its request only; a failing forward fails the requests of that batch (their message says why) and
 * returns the status. */
BASALT_API basalt_status basalt_engine_step(basalt_engine* engine, size_t* out_active);
/* Steps until no request is queued or running (or, with OWN_THREAD, waits for that). Same threading as step;
 * from a request callback of this engine it is refused (BASALT_ERR_INVALID_ARGUMENT), in both modes. */
BASALT_API basalt_status basalt_engine_run(basalt_engine* engine);

/* Engine-wide counters, filled by basalt_engine_stats (caller sets struct_size). */
typedef struct basalt_engine_stats {
    uint32_t struct_size;
    uint32_t reserved0;
    uint64_t steps;            /* scheduler steps that ran a forward */
    uint64_t queued;           /* requests waiting now */
    uint64_t running;          /* requests admitted and not finished now */
    uint64_t finished;         /* requests finished so far (any reason) */
    uint64_t prompt_tokens;    /* prompt tokens computed so far */
    uint64_t generated_tokens; /* tokens emitted so far */
    uint64_t batch_tokens_max; /* largest step (tokens over both models) */
    uint64_t kv_slots;         /* the cache's capacity */
    uint64_t kv_slots_free;    /* not reserved by running requests (ADMIT_RESERVE), or not held by their sequences
                                  as of the last step (on-demand admission) */
    /* since 1.2 */
    uint64_t cached_tokens; /* prompt tokens reused from the prefix cache instead of computed; hit rate =
                               cached_tokens / (cached_tokens + prompt_tokens) */
    /* since 1.7 */
    uint64_t preemptions; /* running requests preempted so far (K/V dropped for older ones, recomputed later) */
    /* since 1.9 */
    uint64_t state_checkpoints;      /* a hybrid model's prefix cache: recurrent-state checkpoints kept now (the
                                        main model's; docs/kv-cache.md "Prefix reuse on a hybrid model") */
    uint64_t state_checkpoint_bytes; /* their host memory now (at most basalt_engine_params.prefix_state_bytes) */
} basalt_engine_stats;

/* Writes the engine's counters into *out. Thread-safe. */
BASALT_API basalt_status basalt_engine_stats_get(const basalt_engine* engine, basalt_engine_stats* out);
/* The main model's MoE routing statistics of layer `layer` as of the last step (since 1.4), as
 * basalt_session_moe_stats; fails unless the engine was created with BASALT_ENGINE_MOE_STATS. Thread-safe. */
BASALT_API basalt_status basalt_engine_moe_stats(const basalt_engine* engine, uint32_t layer, basalt_moe_stats* out,
                                                 uint64_t* per_expert, size_t capacity);

/* Cancels a request (queued or running); it finishes with BASALT_FINISH_CANCELLED at the next step.
 * Idempotent. Thread-safe. */
BASALT_API basalt_status basalt_request_cancel(basalt_request* request);
/* Frees the handle; an unfinished request is cancelled first, and a callback running on another thread is
 * waited for (no callback starts after this returns). May be called from the request's own callback. NULL is
 * ignored. Thread-safe (not with other calls on the same handle). */
BASALT_API void basalt_request_free(basalt_request* request);
/* BASALT_FINISH_* of the request (NONE while queued or running). Thread-safe. */
BASALT_API int32_t basalt_request_finish_reason(const basalt_request* request);
/* Returns the static name of a finish reason ("stop", "length", "context", "cancelled", "error", "" for NONE).
 * Thread-safe. */
BASALT_API const char* basalt_finish_reason_name(int32_t finish_reason);
/* The message of a request that finished with BASALT_FINISH_ERROR ("" otherwise); borrowed until the handle is
 * freed. Thread-safe once finished. */
BASALT_API const char* basalt_request_error(const basalt_request* request);
/*
 * Polling: moves up to capacity new tokens into out_tokens (*out_n gets how many) and up to text_capacity new
 * text bytes into out_text (*out_text_len; never splitting a UTF-8 character; no NUL is written). Either
 * output may be NULL with capacity 0. What is read is not returned again; the callback, when set, does not
 * consume it. Thread-safe.
 */
BASALT_API basalt_status basalt_request_read(basalt_request* request, int32_t* out_tokens, size_t capacity,
                                             size_t* out_n, char* out_text, size_t text_capacity, size_t* out_text_len);
/* Blocks until the request has unread output or is finished, or timeout_ms passes (-1: no limit; below -1 is
 * BASALT_ERR_INVALID_ARGUMENT); returns BASALT_OK either way. Useful with BASALT_ENGINE_OWN_THREAD. With no limit
 * from a request callback of the request's engine, and nothing unread, it is refused (it could never return).
 * Thread-safe. */
BASALT_API basalt_status basalt_request_wait(basalt_request* request, int32_t timeout_ms);

/* Per-request figures, filled by basalt_request_stats_get (caller sets struct_size). Times in milliseconds. */
typedef struct basalt_request_stats {
    uint32_t struct_size;
    int32_t finish_reason;
    uint64_t prompt_tokens;    /* tokens of the prompt */
    uint64_t cached_tokens;    /* of them, reused from the cache instead of computed */
    uint64_t generated_tokens; /* tokens emitted */
    double queue_ms;           /* submit -> admission */
    double ttft_ms;            /* submit -> first emitted token */
    double total_ms;           /* submit -> finish (or now) */
    double itl_mean_ms;        /* inter-token latency between consecutive emitted tokens */
    double itl_p50_ms;
    double itl_p99_ms;
    double itl_max_ms;
    double tokens_per_s; /* (generated - 1) / (finish - first token), 0 below two tokens */
    /* since 1.4: encoder-decoder requests (0 otherwise) */
    uint64_t source_tokens; /* tokens of the source the encoder read */
    double encode_ms;       /* the request's share (by source tokens) of the ragged encoder pass it ran in; part of
                               ttft_ms, the rest of which is queueing and the decoder's first step(s). Embedding
                               requests: their share (by input tokens) of the embedding pass(es) of their step */
} basalt_request_stats;

/* Writes the request's figures into *out. Thread-safe. */
BASALT_API basalt_status basalt_request_stats_get(const basalt_request* request, basalt_request_stats* out);
/* Copies up to capacity inter-token latencies (ms, in order) into out; *out_n gets the total count. Thread-safe. */
BASALT_API basalt_status basalt_request_itl(const basalt_request* request, double* out, size_t capacity, size_t* out_n);
/* Number of hypotheses the request's decoder has given: 0 before its first output, 1 for a plain request, up
 * to n-best for beam search (best first once finished). Thread-safe. */
BASALT_API size_t basalt_request_n_hypotheses(const basalt_request* request);
/* Copies hypothesis index's tokens into out_tokens (capacity entries) and its score into *out_score (may be
 * NULL; the decoder's score, e.g. beam's length-normalised log-probability; 0 for plain sampling); *out_n gets
 * its token count. capacity 0 with out_tokens NULL asks for the count; a smaller buffer is BASALT_ERR_CAPACITY
 * with nothing copied. Hypothesis 0 is the request's output: every token it emitted, read or not. An index past
 * the last is BASALT_ERR_NOT_FOUND. Thread-safe. */
BASALT_API basalt_status basalt_request_hypothesis(const basalt_request* request, size_t index, int32_t* out_tokens,
                                                   size_t capacity, size_t* out_n, float* out_score);
/* The index-th named figure the request's decoder recorded (speculative: "drafted", "accepted",
 * "acceptance_rate"...): *out_name is borrowed until the handle is freed. An index past the last is
 * BASALT_ERR_NOT_FOUND (iterate from 0). Thread-safe. */
BASALT_API basalt_status basalt_request_decoder_stat(const basalt_request* request, size_t index, const char** out_name,
                                                     double* out_value);
/* Number of emitted tokens with a recorded log-probability so far (since 1.4; 0 without BASALT_REQUEST_LOGPROBS);
 * entry i belongs to token i of hypothesis 0. Thread-safe. */
BASALT_API size_t basalt_request_n_logprobs(const basalt_request* request);
/* Entry index of the request's log-probabilities (since 1.4): *out_token (may be NULL) the emitted token,
 * *out_logprob (may be NULL) its natural-log probability under the model's raw distribution (log-softmax of the
 * logits row it was drawn from, before temperature or any other sampler), and up to capacity most likely tokens of
 * that row, most likely first, into top_ids / top_logprobs (either may be NULL; *out_n_top, may be NULL, gets how
 * many were recorded: n_top_logprobs). An index past the last is BASALT_ERR_NOT_FOUND. Buffers are the caller's.
 * Thread-safe. */
BASALT_API basalt_status basalt_request_logprob(const basalt_request* request, size_t index, int32_t* out_token,
                                                float* out_logprob, int32_t* top_ids, float* top_logprobs,
                                                size_t capacity, size_t* out_n_top);

/* ---- tokenization ---------------------------------------------------------------------------------------------- */

enum {
    BASALT_TOKENIZE_ADD_SPECIAL = 1u << 0,  /* add BOS/EOS as the vocabulary asks */
    BASALT_TOKENIZE_PARSE_SPECIAL = 1u << 1 /* text like "<s>" becomes the control token, not plain text */
};
enum {
    BASALT_DETOKENIZE_REMOVE_SPECIAL = 1u << 0, /* drop a leading BOS / trailing EOS the vocabulary adds */
    BASALT_DETOKENIZE_UNPARSE_SPECIAL = 1u << 1 /* render control tokens as their text */
};

/*
 * Tokenizes text_len bytes of UTF-8 text (SIZE_MAX: text is NUL-terminated). Writes the ids into out_tokens
 * (capacity entries; NULL only with capacity 0, to ask for the count) and their count into *out_count. When
 * capacity is too small: BASALT_ERR_CAPACITY, *out_count = the count needed, nothing written. The tokenizer is built on
 * first use (an unsupported vocabulary fails here, naming the key). Thread-safe.
 */
BASALT_API basalt_status basalt_tokenize(const basalt_model* model, const char* text, size_t text_len, uint32_t flags,
                                         int32_t* out_tokens, size_t capacity, size_t* out_count);
/* Renders tokens as UTF-8 into out (capacity bytes incl. a terminating NUL); *out_len = bytes without the NUL.
 * Too small: BASALT_ERR_CAPACITY with *out_len = length needed. Bad ids: BASALT_ERR_INVALID_ARGUMENT. */
BASALT_API basalt_status basalt_detokenize(const basalt_model* model, const int32_t* tokens, size_t n_tokens,
                                           uint32_t flags, char* out, size_t capacity, size_t* out_len);
/* The text of one token (special != 0 renders control tokens), with the same buffer rules as detokenize. */
BASALT_API basalt_status basalt_token_to_piece(const basalt_model* model, int32_t token, int32_t special, char* out,
                                               size_t capacity, size_t* out_len);

/* Special tokens of a model's vocabulary; -1 when absent. Filled by basalt_model_special_tokens. */
typedef struct basalt_special_tokens {
    uint32_t struct_size;
    int32_t bos;
    int32_t eos;
    int32_t eot;
    int32_t unk;
    int32_t pad;
    int32_t sep;
    int32_t nl;
    int32_t add_bos; /* non-zero when tokenize with ADD_SPECIAL prepends BOS */
    int32_t add_eos;
} basalt_special_tokens;

/* Describes the vocabulary's special tokens into *out (caller sets struct_size). Thread-safe. */
BASALT_API basalt_status basalt_model_special_tokens(const basalt_model* model, basalt_special_tokens* out);
/* Non-zero when token ends generation (EOS, EOT, ...). Thread-safe. */
BASALT_API int32_t basalt_token_is_eog(const basalt_model* model, int32_t token);

/* ---- quantization ---------------------------------------------------------------------------------------------- */

/* What basalt_model_quantize did, filled for the caller (set struct_size). */
typedef struct basalt_quantize_report {
    uint32_t struct_size;
    uint32_t reserved0;
    uint64_t tensors_quantized; /* converted to the target type */
    uint64_t tensors_fallback;  /* rows not divisible by the target's block: stored as q8_0 or f16 */
    uint64_t tensors_kept;      /* copied unchanged (norms, biases, router, position embeddings) */
    uint64_t bytes_in;
    uint64_t bytes_out;
} basalt_quantize_report;

/*
 * Writes out_path: the GGUF at in_path (a file, or a shipped model's name as basalt_model_load takes) with every
 * weight matrix in `type` (f32, f16, bf16, q8_0, q4_0, q4_k,
 * q6_k, mxfp4), the tensor rule of llama-quantize --pure: 2-D/3-D "*weight" tensors except norms, the MoE router,
 * position embeddings and relative-attention bias. Metadata is kept (general.file_type updated). report may
 * be NULL. Thread-safe.
 */
BASALT_API basalt_status basalt_model_quantize(const char* in_path, const char* out_path, basalt_dtype type,
                                               basalt_quantize_report* report);

/* ---- writing GGUF files --------------------------------------------------------------------------------------- */

/*
 * A GGUF v3 file built in memory and written in one go: metadata in the order it was first set, then tensors
 * in the order they were added, each aligned to 32 bytes (or general.alignment). What it writes loads with
 * basalt_model_load: a model, or a llama.cpp control vector (general.architecture "controlvector",
 * controlvector.model_hint, controlvector.layer_count, one 1-D F32 tensor "direction.N" per steered layer,
 * N from 1), which basalt_model_load reads for its metadata and tensors (info.n_layer = layer_count, n_embd =
 * the directions' length, supported = 0). A writer is used by one thread at a time; distinct writers may be used
 * concurrently. A call that fails changes nothing in the writer.
 */
typedef struct basalt_gguf_writer basalt_gguf_writer;

/* Creates an empty writer; *out is owned by the caller (basalt_gguf_writer_destroy). Thread-safe. */
BASALT_API basalt_status basalt_gguf_writer_create(basalt_gguf_writer** out);
/* Frees a writer and every tensor it holds; NULL is ignored. Not concurrent with other calls on the writer. */
BASALT_API void basalt_gguf_writer_destroy(basalt_gguf_writer* writer);

/* Sets metadata `key` (non-empty UTF-8, copied) to a uint32; setting a key again replaces its value and type in
 * place. "general.alignment" (uint32 only, a power of two) also sets the tensors' alignment. One thread per
 * writer at a time, as for every call below. */
BASALT_API basalt_status basalt_gguf_writer_set_u32(basalt_gguf_writer* writer, const char* key, uint32_t value);
/* Sets metadata `key` to an int32 (same key rules as basalt_gguf_writer_set_u32). */
BASALT_API basalt_status basalt_gguf_writer_set_i32(basalt_gguf_writer* writer, const char* key, int32_t value);
/* Sets metadata `key` to a float32 (same key rules as basalt_gguf_writer_set_u32). */
BASALT_API basalt_status basalt_gguf_writer_set_f32(basalt_gguf_writer* writer, const char* key, float value);
/* Sets metadata `key` to a bool (value != 0 is true; same key rules as basalt_gguf_writer_set_u32). */
BASALT_API basalt_status basalt_gguf_writer_set_bool(basalt_gguf_writer* writer, const char* key, int32_t value);
/* Sets metadata `key` to a string (NUL-terminated UTF-8, copied; same key rules as basalt_gguf_writer_set_u32). */
BASALT_API basalt_status basalt_gguf_writer_set_string(basalt_gguf_writer* writer, const char* key, const char* value);
/* Sets metadata `key` to an array of n strings (each NUL-terminated, none NULL; copied, e.g.
 * tokenizer.ggml.tokens). n may be 0 (values may then be NULL). */
BASALT_API basalt_status basalt_gguf_writer_set_array_string(basalt_gguf_writer* writer, const char* key,
                                                             const char* const* values, size_t n);
/* Sets metadata `key` to an array of n int32 (copied; e.g. tokenizer.ggml.token_type). */
BASALT_API basalt_status basalt_gguf_writer_set_array_i32(basalt_gguf_writer* writer, const char* key,
                                                          const int32_t* values, size_t n);
/* Sets metadata `key` to an array of n float32 (copied; e.g. tokenizer.ggml.scores). */
BASALT_API basalt_status basalt_gguf_writer_set_array_f32(basalt_gguf_writer* writer, const char* key,
                                                          const float* values, size_t n);

/*
 * Adds tensor `name` (1-63 bytes, llama.cpp's limit; copied) of n_dims (1-4) dimensions ne[0..n_dims) (ne[0]
 * contiguous, each >= 1) from n_values = ne[0] x ... f32 values (borrowed for the call), stored as `type`: f32,
 * f16, bf16, q8_0, q4_0, q4_k, q6_k or mxfp4, quantized with the reference quantizers basalt_model_quantize uses (the
 * bytes llama-quantize --pure writes). The writer keeps the converted bytes. Fails with
 * BASALT_ERR_INVALID_ARGUMENT naming the tensor for a bad shape, a count that is not the shape's, an unknown type
 * id, or rows that are not whole blocks of the type ("rows of 64 elements are not whole q4_k blocks of 256");
 * BASALT_ERR_UNSUPPORTED for a known type it cannot write (listing those it can); BASALT_ERR_DUPLICATE for a name
 * already added. One thread per writer at a time.
 */
BASALT_API basalt_status basalt_gguf_writer_add_tensor_f32(basalt_gguf_writer* writer, const char* name,
                                                           basalt_dtype type, const int64_t* ne, uint32_t n_dims,
                                                           const float* data, size_t n_values);
/* Returns the number of tensors added so far (0 for NULL). One thread per writer at a time. */
BASALT_API size_t basalt_gguf_writer_tensor_count(const basalt_gguf_writer* writer);

/* Writes the file to path (created or replaced: written under a temporary name beside it, then renamed, so a
 * failed write leaves whatever was at path untouched). BASALT_ERR_IO names the path and the system's reason. The
 * writer is unchanged and may be written again. One thread per writer at a time. */
BASALT_API basalt_status basalt_gguf_writer_write(const basalt_gguf_writer* writer, const char* path);

/*
 * since 1.4. Loads the control vector spec "FILE[:SCALE[:A-B]]" now (the file is refused unless a regular file
 * under the steering size bound) and keeps it in the engine under `name` (1..255 bytes, no ':'; copied). A
 * request's steer spec "NAME[:SCALE[:A-B]]" naming it then uses the kept vectors, scaled and limited to the
 * range, and opens no file (a name shadows a file of that name). Fails with the load's error naming the file,
 * BASALT_ERR_DUPLICATE for a name already loaded, BASALT_ERR_UNSUPPORTED for an encoder-decoder model.
 * Thread-safe.
 */
BASALT_API basalt_status basalt_engine_add_control_vector(basalt_engine* engine, const char* name, const char* spec);

/* ---- embeddings (since 1.4; docs/embeddings.md) --------------------------------------------------------------- */

/*
 * since 1.4. Encoder-only (embedding) models: runs whole inputs through the model, each sequence id's rows one input
 * at positions 0..n-1 in order (the ids, any >= 0, only group rows: nothing is kept), in ragged passes of at most
 * n_batch tokens, and writes every row's final hidden state into out in batch order (n_tokens x n_embd floats;
 * capacity floats, smaller: BASALT_ERR_CAPACITY with nothing computed). A decoder model is refused
 * (BASALT_ERR_UNSUPPORTED), an input longer than the context BASALT_ERR_CAPACITY. Not thread-safe with other calls
 * on the session.
 */
BASALT_API basalt_status basalt_session_embed(basalt_session* session, const basalt_batch* batch, float* out,
                                              size_t capacity);
/*
 * since 1.4. The result of a finished embedding request (BASALT_REQUEST_EMBED): its vector (dimensions or n_embd
 * floats), with BASALT_POOLING_NONE one per token one after another, with BASALT_POOLING_RANK the rank head's
 * n_cls_out scores. *out_n gets the count; out NULL with capacity 0 asks for it; a smaller buffer is
 * BASALT_ERR_CAPACITY with nothing copied. BASALT_ERR_NOT_FOUND while it runs or when it failed or is not an
 * embedding request. Thread-safe.
 */
BASALT_API basalt_status basalt_request_embedding(const basalt_request* request, float* out, size_t capacity,
                                                  size_t* out_n);
/*
 * since 1.4. Chat templates (docs/chat-templates.md): a sandboxed Jinja interpreter renders a conversation with a
 * model's own template (tokenizer.chat_template) or any other, byte for byte as Hugging Face's jinja2 setup does.
 * Rendering reads no file, calls nothing outside the interpreter and is bounded (steps, macro depth, output bytes,
 * time). The rendered prompt keeps apart the data the caller passed (message content, tools) from the template's
 * own markup, so that only markup becomes control tokens.
 */
typedef struct basalt_chat_template basalt_chat_template;
typedef struct basalt_chat_prompt basalt_chat_prompt;

/* since 1.4. Parses Jinja source (source_len bytes; SIZE_MAX: NUL-terminated) into *out_template, which the caller
 * frees with basalt_chat_template_destroy. BASALT_ERR_FORMAT names line:column of a syntax error; *out_template is
 * then untouched. The template is immutable: thread-safe. */
BASALT_API basalt_status basalt_chat_template_create(const char* source, size_t source_len,
                                                     basalt_chat_template** out_template);
/* since 1.4. Frees a template; NULL is ignored. Prompts rendered from it stay valid. */
BASALT_API void basalt_chat_template_destroy(basalt_chat_template* chat_template);

typedef struct basalt_chat_render_params {
    uint32_t struct_size;
    uint32_t max_depth;        /* nested macro calls; 0: 100 */
    const char* context_json;  /* NUL-terminated JSON object whose keys are the template's variables: messages,
                                  tools, add_generation_prompt, chat_template_kwargs keys (enable_thinking,
                                  reasoning_effort...); borrowed for the call. NULL: {} */
    const basalt_model* model; /* optional: bos_token / eos_token default to its vocabulary's, and markup is cut
                                  at its special tokens (BASALT_CHAT_PIECE_CONTROL) */
    const char* bos_token;     /* optional: overrides the model's (NUL-terminated, markup) */
    const char* eos_token;     /* optional: overrides the model's */
    int64_t now_unix;          /* strftime_now's clock (UTC seconds); 0: the current time */
    uint64_t max_steps;        /* statements, expressions and loop iterations; 0: 10 000 000 */
    uint64_t max_output_bytes; /* 0: 16 MiB */
    uint32_t max_ms;           /* wall-clock limit; 0: 2000 */
    uint32_t reserved0;
} basalt_chat_render_params;

/* since 1.4. Kinds of the pieces of a rendered prompt. */
typedef enum basalt_chat_piece_kind {
    BASALT_CHAT_PIECE_TEXT = 0,   /* data the caller passed (message content, tools): tokenize as plain text */
    BASALT_CHAT_PIECE_MARKUP = 1, /* the template's own text */
    BASALT_CHAT_PIECE_CONTROL = 2 /* the template's own text spelling one special token of params->model */
} basalt_chat_piece_kind;

/* since 1.4. Renders the template with params (NULL fields take their defaults) into *out_prompt, which the caller
 * frees with basalt_chat_prompt_destroy. BASALT_ERR_INVALID_ARGUMENT for context_json that is not a JSON object,
 * BASALT_ERR_FORMAT naming line:column for a rendering error (raise_exception's message, a type error) and
 * BASALT_ERR_CAPACITY naming line:column and the limit when a limit is reached. Thread-safe. */
BASALT_API basalt_status basalt_chat_template_render(const basalt_chat_template* chat_template,
                                                     const basalt_chat_render_params* params,
                                                     basalt_chat_prompt** out_prompt);
/* since 1.4. The rendered text (NUL-terminated, borrowed until the prompt is destroyed); its length into *out_len
 * when non-NULL. NULL for a NULL prompt. Thread-safe. */
BASALT_API const char* basalt_chat_prompt_text(const basalt_chat_prompt* prompt, size_t* out_len);
/* since 1.4. The number of pieces of the prompt (they cover its text in order); 0 for NULL. Thread-safe. */
BASALT_API size_t basalt_chat_prompt_n_pieces(const basalt_chat_prompt* prompt);
/* since 1.4. Piece `index`: its byte offset and length in the text and its basalt_chat_piece_kind.
 * BASALT_ERR_INVALID_ARGUMENT for an index past the end (outputs untouched). Thread-safe. */
BASALT_API basalt_status basalt_chat_prompt_piece(const basalt_chat_prompt* prompt, size_t index, size_t* out_offset,
                                                  size_t* out_length, int32_t* out_kind);
/* since 1.4. Frees a prompt; NULL is ignored. */
BASALT_API void basalt_chat_prompt_destroy(basalt_chat_prompt* prompt);

/* since 1.6. Sets metadata `key` to an array of n bools (values[i] != 0 is true; copied; e.g. gemma4's
 * attention.sliding_window_pattern, which llama.cpp reads only as bools). Same key rules as
 * basalt_gguf_writer_set_u32. Not thread-safe on one writer. */
BASALT_API basalt_status basalt_gguf_writer_set_array_bool(basalt_gguf_writer* writer, const char* key,
                                                           const int32_t* values, size_t n);

/* since 1.7. Gives a sampler instance (basalt_sampler_create) the vocabulary of model, the one request chains get
 * from the engine, so a sampler that needs it (BASALT_SAMPLER_NEEDS_VOCAB: the grammar sampler) works outside an
 * engine; a sampler that takes no vocabulary ignores it. Call once, right after create; its clones keep it. The
 * model must outlive the sampler and its clones. BASALT_ERR_INVALID_ARGUMENT for NULL arguments; the model's
 * vocabulary error, or the sampler's own (naming it), otherwise. One thread per instance. */
BASALT_API basalt_status basalt_sampler_set_vocab(basalt_sampler* sampler, const basalt_model* model);
/* since 1.7. Writes rows first_row .. first_row + n_rows - 1 of a tensor being added by
 * basalt_gguf_writer_add_tensor_rows to out (n_rows x ne[0] floats; rows are counted over ne[1] x ne[2] x ne[3]; out
 * is borrowed for the call). Returns 0, or non-zero to stop the add. */
typedef int32_t (*basalt_gguf_rows_fn)(void* user_data, int64_t first_row, int64_t n_rows, float* out);
/* since 1.7. Adds tensor `name` as basalt_gguf_writer_add_tensor_f32 does (same names, shapes, types, conversion and
 * errors), asking `fill` for its f32 values a batch of whole rows at a time, in order: the writer holds the converted
 * bytes and one batch of floats (about 4 MiB), never the whole tensor as f32 (a real model's embedding tables).
 * BASALT_ERR_CANCELLED when fill returns non-zero (nothing is added). user_data is borrowed for the call. One thread
 * per writer at a time. */
BASALT_API basalt_status basalt_gguf_writer_add_tensor_rows(basalt_gguf_writer* writer, const char* name,
                                                            basalt_dtype type, const int64_t* ne, uint32_t n_dims,
                                                            basalt_gguf_rows_fn fill, void* user_data);

BASALT_END_DECLS

#endif /* BASALT_BASALT_H */
