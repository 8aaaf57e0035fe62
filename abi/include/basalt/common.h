/*
 * Basalt C ABI: definitions shared by the public API and every plugin interface.
 *
 * Pure C99. Every struct that crosses the library boundary starts with
 * `uint32_t struct_size`; fields are only ever appended (marked "since 1.N").
 * A reader never touches a field past the struct_size it was given
 * (use BASALT_HAS_FIELD).
 */
#ifndef BASALT_COMMON_H
#define BASALT_COMMON_H

#include <stddef.h>
#include <stdint.h>

/* ABI version. A different major is refused at plugin load; minors only append. */
#ifndef BASALT_ABI_VERSION_MAJOR
#define BASALT_ABI_VERSION_MAJOR 1
#endif
#ifndef BASALT_ABI_VERSION_MINOR
#define BASALT_ABI_VERSION_MINOR 9
#endif

#ifdef __cplusplus
#define BASALT_EXTERN_C extern "C"
#define BASALT_BEGIN_DECLS extern "C" {
#define BASALT_END_DECLS }
#else
#define BASALT_EXTERN_C
#define BASALT_BEGIN_DECLS
#define BASALT_END_DECLS
#endif

#if defined(_WIN32)
#define BASALT_EXPORT __declspec(dllexport)
#define BASALT_IMPORT __declspec(dllimport)
#else
#define BASALT_EXPORT __attribute__((visibility("default")))
#define BASALT_IMPORT __attribute__((visibility("default")))
#endif

/* BASALT_API marks functions exported by libbasalt. */
#ifdef BASALT_BUILDING_LIBRARY
#define BASALT_API BASALT_EXPORT
#else
#define BASALT_API BASALT_IMPORT
#endif

/* True when the struct at `ptr` (whose first member is struct_size) is large enough to hold `field`. */
#define BASALT_HAS_FIELD(ptr, type, field) \
    ((ptr) != NULL && (size_t)(ptr)->struct_size >= offsetof(type, field) + sizeof(((type*)0)->field))

BASALT_BEGIN_DECLS

/* Status codes. Fixed-width so the ABI does not depend on enum sizing. */
typedef int32_t basalt_status;
enum {
    BASALT_OK = 0,
    BASALT_ERR_INVALID_ARGUMENT = 1, /* a parameter value is wrong; the message names it and its value */
    BASALT_ERR_OUT_OF_MEMORY = 2,    /* an allocation failed; no state was lost */
    BASALT_ERR_NOT_FOUND = 3,        /* a named file, component, sequence or key does not exist */
    BASALT_ERR_IO = 4,               /* a file could not be opened, read or mapped */
    BASALT_ERR_FORMAT = 5,           /* a file or blob is malformed (corrupt GGUF, not a library) */
    BASALT_ERR_UNSUPPORTED = 6,      /* a valid request this build, backend or device cannot serve */
    BASALT_ERR_ABI_MISMATCH = 7,     /* a plugin was built for a different ABI major */
    BASALT_ERR_PLUGIN = 8,           /* a plugin misbehaved (threw, returned NULL, bad descriptor) */
    BASALT_ERR_DUPLICATE = 9,        /* a name is already registered */
    BASALT_ERR_CAPACITY = 10,        /* a fixed capacity (context, slots, budget) would be exceeded */
    BASALT_ERR_BACKEND = 11,         /* the compute backend or its device failed */
    BASALT_ERR_CANCELLED = 12,       /* a callback asked to stop */
    BASALT_ERR_INTERNAL = 13         /* a bug in Basalt or a plugin; the message says where */
};

/* Log levels, lowest is most verbose. */
typedef int32_t basalt_log_level;
enum {
    BASALT_LOG_TRACE = 0,
    BASALT_LOG_DEBUG = 1,
    BASALT_LOG_INFO = 2,
    BASALT_LOG_WARN = 3,
    BASALT_LOG_ERROR = 4,
    BASALT_LOG_OFF = 5
};

/* The kinds of component a plugin library can provide. */
typedef int32_t basalt_component_kind;
enum {
    BASALT_COMPONENT_BACKEND = 1,  /* plugin_backend.h  basalt_backend_iface  */
    BASALT_COMPONENT_KV_CACHE = 2, /* plugin_kv_cache.h basalt_kv_cache_iface */
    BASALT_COMPONENT_SAMPLER = 3,  /* plugin_sampler.h  basalt_sampler_iface  */
    BASALT_COMPONENT_DECODER = 4,  /* plugin_decoder.h  basalt_decoder_iface  */
    BASALT_COMPONENT_STEERING = 5  /* plugin_steering.h basalt_steering_iface */
};

/* Element types. Numbering follows GGUF's tensor type ids so file types map 1:1. */
typedef int32_t basalt_dtype;
enum {
    BASALT_DTYPE_F32 = 0,
    BASALT_DTYPE_F16 = 1,
    BASALT_DTYPE_Q4_0 = 2,
    BASALT_DTYPE_Q4_1 = 3,
    BASALT_DTYPE_Q5_0 = 6,
    BASALT_DTYPE_Q5_1 = 7,
    BASALT_DTYPE_Q8_0 = 8,
    BASALT_DTYPE_Q8_1 = 9,
    BASALT_DTYPE_Q2_K = 10,
    BASALT_DTYPE_Q3_K = 11,
    BASALT_DTYPE_Q4_K = 12,
    BASALT_DTYPE_Q5_K = 13,
    BASALT_DTYPE_Q6_K = 14,
    BASALT_DTYPE_Q8_K = 15,
    BASALT_DTYPE_I8 = 24,
    BASALT_DTYPE_I16 = 25,
    BASALT_DTYPE_I32 = 26,
    BASALT_DTYPE_I64 = 27,
    BASALT_DTYPE_F64 = 28,
    BASALT_DTYPE_BF16 = 30,
    /* since 1.4: KV-cache-only types (not GGUF ids), KIVI-style asymmetric quantization (docs/kv-cache.md).
     * Every 32 values are stored as f16 scale d, f16 minimum m and 32 codes of b bits (x = m + d * q).
     * KIVI_T*: per token, the 32 values are 32 consecutive channels of one row (like a GGUF block).
     * KIVI_C*: per channel, the 32 values are one channel over 32 consecutive slots (a group of 32 rows is one
     * unit of 32 * row bytes: channel c's chunk at c * (4 + 4b)); only KV_WRITE with a residual and ATTENTION
     * read or write them. */
    BASALT_DTYPE_KIVI_T8 = 64,
    BASALT_DTYPE_KIVI_T4 = 65,
    BASALT_DTYPE_KIVI_T2 = 66,
    BASALT_DTYPE_KIVI_C8 = 67,
    BASALT_DTYPE_KIVI_C4 = 68,
    BASALT_DTYPE_KIVI_C2 = 69,
    /* since 1.6: GGUF's MXFP4 (OCP microscaling FP4, ggml's type 39): every 32 weights are one E8M0
     * exponent byte e (scale 2^(e-127)) and 16 bytes of 4-bit E2M1 codes, element j in the low nibble of byte j,
     * element j+16 in the high one (docs/cpu.md, "MXFP4"). */
    BASALT_DTYPE_MXFP4 = 39
};

/*
 * Key/value configuration handed to a component's create function, e.g. a
 * sampler's "k" = "40". Values are UTF-8 text; the component parses them and
 * reports a bad value naming the key and the value. Borrowed for the call only.
 */
typedef struct basalt_params {
    uint32_t struct_size;
    uint32_t reserved0;
    size_t count;
    const char* const* keys;   /* count entries, borrowed */
    const char* const* values; /* count entries, borrowed */
} basalt_params;

/* One candidate token: id, raw logit and (once a sampler computed it) probability. */
typedef struct basalt_token_data {
    int32_t id;
    float logit;
    float p;
} basalt_token_data;

/*
 * A candidate array for one sequence. Samplers may reorder, shrink (size),
 * rewrite logits and probabilities, and set `selected` to an index into data.
 * `data` is borrowed: valid for the duration of the call it is passed to.
 */
typedef struct basalt_candidates {
    uint32_t struct_size;
    int32_t seq_id;          /* sequence the candidates belong to */
    basalt_token_data* data; /* borrowed, `size` entries */
    size_t size;             /* number of live entries; samplers may shrink it */
    int64_t selected;        /* index into data of the chosen token, -1 when none yet */
    int32_t sorted;          /* non-zero when data is sorted by logit, descending */
    int32_t probs_valid;     /* non-zero when every p is a normalised probability */
} basalt_candidates;

/*
 * A ragged batch: tokens of several sequences packed with their positions and
 * sequence ids, no padding; logits are produced only where want_logits[i] != 0.
 * Arrays are borrowed for the call, n_tokens entries each.
 */
typedef struct basalt_batch {
    uint32_t struct_size;
    uint32_t reserved0;
    size_t n_tokens;
    const int32_t* tokens;
    const int32_t* positions;
    const int32_t* seq_ids;
    const int8_t* want_logits;
} basalt_batch;

BASALT_END_DECLS

#endif /* BASALT_COMMON_H */
