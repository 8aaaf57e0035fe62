/*
 * Basalt plugin ABI: the sampler component kind.
 *
 * A sampler transforms candidate arrays (basalt_candidates) and may select a
 * token; samplers chain (temperature -> top-k -> ... -> dist). A sampler
 * instance holds the state of ONE sequence (e.g. its recent tokens for
 * penalties); the host keeps one instance per sequence and clones instances
 * when a sequence forks (beams, speculation). `apply` is batch-capable: it
 * receives several (instance, candidates) pairs at once.
 */
#ifndef BASALT_PLUGIN_SAMPLER_H
#define BASALT_PLUGIN_SAMPLER_H

#include "basalt/plugin.h"

BASALT_BEGIN_DECLS

/* Sampler capability flags (basalt_sampler_iface.flags). */
enum {
    /* Never changes which candidate has the highest logit (temperature > 0, top-k, top-p ...). */
    BASALT_SAMPLER_ARGMAX_INVARIANT = 1u << 0,
    /* May be applied to a draft model's distribution during speculative decoding. */
    BASALT_SAMPLER_DRAFT_SAFE = 1u << 1,
    /* Sets `selected` (a terminal sampler: greedy, dist). */
    BASALT_SAMPLER_SELECTS = 1u << 2
};

/*
 * Interface table of a sampler component. Entries marked optional may be NULL
 * (the host supplies the default described). Unless stated otherwise an
 * instance is used by one thread at a time; distinct instances may be used
 * concurrently.
 */
typedef struct basalt_sampler_iface {
    uint32_t struct_size;
    uint32_t flags; /* BASALT_SAMPLER_* */

    /* Creates an instance configured by `params` (borrowed); sets *out_instance, owned by the caller
     * until passed to destroy. Unknown keys or bad values fail naming the key and value. Thread-safe. */
    basalt_status (*create)(const basalt_host* host, const basalt_params* params, void** out_instance);
    /* Destroys an instance from create or clone; NULL is ignored. */
    void (*destroy)(void* instance);
    /* Transforms n candidate arrays in place; candidates[i] belongs to instances[i]. Both arrays are
     * borrowed for the call. On failure the arrays may be partially transformed. */
    basalt_status (*apply)(void* const* instances, basalt_candidates* const* candidates, size_t n);
    /* Optional (NULL: no-op). Tells the instance which token was finally chosen for its sequence. */
    basalt_status (*accept)(void* instance, int32_t token);
    /* Optional (NULL: no-op). Forgets per-sequence state (history), keeping the configuration. */
    basalt_status (*reset)(void* instance);
    /* Optional (NULL: the host creates a fresh instance from the same params). Deep-copies an instance,
     * state included; *out_instance is owned by the caller. */
    basalt_status (*clone)(const void* instance, void** out_instance);
} basalt_sampler_iface;

/* The smallest struct_size the host accepts for a sampler table (through `apply`). */
#define BASALT_SAMPLER_IFACE_MIN_SIZE (offsetof(basalt_sampler_iface, apply) + sizeof(void*))

BASALT_END_DECLS

#endif /* BASALT_PLUGIN_SAMPLER_H */
