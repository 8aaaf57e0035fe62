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
    BASALT_SAMPLER_SELECTS = 1u << 2,
    /* since 1.5: its history is the generated output only: the engine does not accept prompt tokens into it
     * (a grammar constrains what is generated, not the prompt). */
    BASALT_SAMPLER_GENERATED_ONLY = 1u << 3,
    /* since 1.5: needs the model's vocabulary (set_vocab) before its first apply; a chain made without a model
     * refuses it. */
    BASALT_SAMPLER_NEEDS_VOCAB = 1u << 4
};

/* since 1.5: per-token flags of basalt_vocab_view.token_flags. */
enum {
    BASALT_VOCAB_TOKEN_EOG = 1u << 0,    /* ends generation (EOS, EOT, ...) */
    BASALT_VOCAB_TOKEN_CONTROL = 1u << 1 /* a control token: no output text of its own */
};

/*
 * since 1.5: the model's vocabulary as a sampler sees it: for every token id the bytes it adds to the output
 * (byte-level BPE decoded, SentencePiece's U+2581 as a space, <0xXX> byte tokens as their byte; a piece may end
 * inside a UTF-8 character) and its flags. Owned by the host, valid until the instance it was given to is
 * destroyed; read-only, safe to read from any thread.
 */
typedef struct basalt_vocab_view {
    uint32_t struct_size;
    uint32_t reserved0;
    size_t n_tokens;
    const char* const* texts;    /* n_tokens entries, texts[i] holds text_lens[i] bytes (not NUL-terminated) */
    const size_t* text_lens;     /* n_tokens entries */
    const uint32_t* token_flags; /* n_tokens entries, BASALT_VOCAB_TOKEN_* */
    uint64_t fingerprint;        /* equal for equal vocabularies (texts and flags): a key for caches over it */
} basalt_vocab_view;

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

    /* since 1.5 (check struct_size) */
    /* Optional (NULL: the sampler needs no vocabulary). Gives the instance the model's vocabulary (borrowed,
     * valid until destroy) right after create, before any other call; clones keep it. */
    basalt_status (*set_vocab)(void* instance, const basalt_vocab_view* vocab);
    /* Optional (NULL: unsupported; the host refuses a rollback). Forgets the last n_tokens accepted tokens, as if
     * they had never been accepted (a rejected speculative draft). n_tokens larger than what it holds fails. */
    basalt_status (*rollback)(void* instance, size_t n_tokens);
} basalt_sampler_iface;

/* The smallest struct_size the host accepts for a sampler table (through `apply`). */
#define BASALT_SAMPLER_IFACE_MIN_SIZE (offsetof(basalt_sampler_iface, apply) + sizeof(void*))

BASALT_END_DECLS

#endif /* BASALT_PLUGIN_SAMPLER_H */
