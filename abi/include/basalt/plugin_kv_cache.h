/*
 * Basalt plugin ABI: the KV cache manager component kind.
 *
 * A KV cache manager decides where each sequence's keys and values live
 * (slots: row indices into the per-layer K and V storage the backend holds)
 * and which of them a query may see. It never touches the K/V data itself:
 * it returns slot assignments, block copies to perform (copy on write) and
 * visible (slot, position) lists, and the host executes them on the backend.
 * One manager instance serves one session and is used by one thread at a time.
 */
#ifndef BASALT_PLUGIN_KV_CACHE_H
#define BASALT_PLUGIN_KV_CACHE_H

#include "basalt/plugin_backend.h"

BASALT_BEGIN_DECLS

/* What the session tells the manager at creation. Borrowed for the create call. */
typedef struct basalt_kv_cache_config {
    uint32_t struct_size;
    uint32_t n_layers;
    uint32_t n_kv_heads;
    uint32_t head_dim_k;
    uint32_t head_dim_v;
    uint32_t n_slots;   /* capacity in tokens (all sequences together) */
    uint32_t n_seq_max; /* sequence ids are 0 .. n_seq_max-1 */
    uint32_t reserved0;
    const int32_t* layer_window; /* n_layers entries: sliding window per layer, 0 = full attention; may be NULL */
    /* since 1.1 */
    uint32_t n_batch; /* most tokens of one sequence in one reserve call (the host splits larger batches); 0: any */
    uint32_t reserved1;
} basalt_kv_cache_config;

/* The stored format the manager chose for K and V (may differ: separate error budgets). */
typedef struct basalt_kv_cache_layout {
    uint32_t struct_size;
    basalt_dtype k_type;
    basalt_dtype v_type;
    uint32_t block_size; /* tokens per block; slots of a block are contiguous */
    /* since 1.1 */
    /* Rows of the separate storage the sliding-window layers use (capped: they need only their window plus one
     * batch per sequence); 0: every layer uses the n_slots rows and the same slots. When non-zero, reserve()
     * also assigns each token a row there (out_window_slots), visible() of a sliding-window layer lists those
     * rows, and out_copies apply to the full-attention layers only. */
    uint32_t n_window_slots;
    /* since 1.4 */
    /* Streaming (attention sinks, StreamingLLM): stream_window != 0 says the manager evicts. Each query of every layer
     * then sees only positions < stream_sinks and its own last stream_window positions, at cache positions (the host
     * asks attention to rotate the sinks' keys as if they sat just before the window: ATTENTION ip[2]); a sequence may
     * grow past n_slots (the manager reuses evicted rows); and one reserve call holds at most stream_batch tokens of a
     * sequence (0: any), the host splitting larger batches. */
    uint32_t stream_sinks;
    uint32_t stream_window;
    uint32_t stream_batch;
    /* Residual window R (0: none): each sequence's most recent tokens, from the last multiple of R on, are held in
     * F32 storage per sequence (R rows each) and read from there; a unit of R tokens is quantized into its slots
     * when its last token is written. R is a multiple of 32 and divides block_size (units never straddle blocks).
     * Needed by the per-channel KIVI_C* types (R >= 32). */
    uint32_t residual;
} basalt_kv_cache_layout;

/* A copy the host performs on K and V of every layer before writing new tokens (copy on write). */
typedef struct basalt_kv_copy {
    int32_t src_slot;
    int32_t dst_slot;
    int32_t n_slots;
} basalt_kv_copy;

/*
 * Slot assignment for a batch of new tokens: in = tokens/positions/seq_ids,
 * out = slots (one per token) and the copies to perform first. All arrays are
 * owned by the caller, sized n_tokens (copies: copies_capacity).
 * With a layout whose n_window_slots != 0 the window fields (since 1.1) are
 * required: the rows of the sliding-window layers' storage, and the copies to
 * perform there first (e.g. a forked sequence's window). A copy array that is too
 * small gives BASALT_ERR_CAPACITY with out_n_copies / out_n_window_copies = needed.
 */
typedef struct basalt_kv_reservation {
    uint32_t struct_size;
    uint32_t reserved0;
    size_t n_tokens;
    const int32_t* tokens;
    const int32_t* positions;
    const int32_t* seq_ids;
    int32_t* out_slots;
    basalt_kv_copy* out_copies;
    size_t copies_capacity;
    size_t out_n_copies;
    /* since 1.1 */
    int32_t* out_window_slots;         /* n_tokens entries; may be NULL when the layout's n_window_slots is 0 */
    basalt_kv_copy* out_window_copies; /* applied to the sliding-window layers' K and V before the writes */
    size_t window_copies_capacity;
    size_t out_n_window_copies;
} basalt_kv_reservation;

typedef struct basalt_kv_cache_iface {
    uint32_t struct_size;
    uint32_t reserved0;

    /* Creates a manager for one session; caller owns *out_cache. Thread-safe. */
    basalt_status (*create)(const basalt_host* host, const basalt_kv_cache_config* config, const basalt_params* params,
                            void** out_cache);
    /* Destroys a manager; NULL is ignored. */
    void (*destroy)(void* cache);
    /* Writes the stored K/V formats and block size into *out (caller sets struct_size). */
    basalt_status (*layout)(void* cache, basalt_kv_cache_layout* out);
    /* Assigns slots to every token of the batch, all or nothing (BASALT_ERR_CAPACITY when full). */
    basalt_status (*reserve)(void* cache, basalt_kv_reservation* reservation);
    /* Lists the (slot, position) pairs layer `layer` of sequence seq_id may attend to, in position order (rows of
     * the window storage for a sliding-window layer when the layout's n_window_slots != 0).
     * Writes at most capacity entries into out_slots/out_positions (caller-owned) and the total into *out_count. */
    basalt_status (*visible)(void* cache, int32_t seq_id, uint32_t layer, int32_t* out_slots, int32_t* out_positions,
                             size_t capacity, size_t* out_count);
    /* Forgets a sequence and releases the blocks only it used. */
    basalt_status (*seq_drop)(void* cache, int32_t seq_id);
    /* Makes dst a copy of src sharing its blocks (copy on write); dst must be empty. */
    basalt_status (*seq_fork)(void* cache, int32_t src_seq_id, int32_t dst_seq_id);
    /* Optional (NULL: no prefix caching). Reuses held blocks matching the longest prefix of tokens for an empty
     * seq_id; sets *out_n_matched to the number of tokens whose K/V are now visible to it. */
    basalt_status (*prefix_attach)(void* cache, int32_t seq_id, const int32_t* tokens, size_t n_tokens,
                                   size_t* out_n_matched);
    /* Optional (NULL: 0). Number of slots still free. */
    size_t (*free_slots)(void* cache);
    /* since 1.1 */
    /* Optional (NULL: the host cannot truncate). Forgets positions >= n_keep of seq_id (rejected draft tokens):
     * blocks wholly past n_keep are released; a partly kept block stays (copied on its next write when shared).
     * n_keep == length is a no-op; n_keep > length is BASALT_ERR_INVALID_ARGUMENT. A manager with capped window
     * storage refuses (BASALT_ERR_UNSUPPORTED) a cut back past what that storage still holds. All or nothing. */
    basalt_status (*seq_truncate)(void* cache, int32_t seq_id, uint32_t n_keep);
    /* since 1.2 */
    /* Optional (NULL: no salts; the host then refuses requests that set one). Sets the prefix-cache salt of an
     * empty sequence (0: none): its full blocks are indexed under it and prefix_attach matches only blocks indexed
     * under the same salt, so requests of different tenants never share K/V. seq_fork copies the salt, seq_drop
     * clears it. A sequence that is not empty is BASALT_ERR_INVALID_ARGUMENT. */
    basalt_status (*seq_set_salt)(void* cache, int32_t seq_id, uint64_t salt);
} basalt_kv_cache_iface;

#define BASALT_KV_CACHE_IFACE_MIN_SIZE (offsetof(basalt_kv_cache_iface, seq_fork) + sizeof(void*))

BASALT_END_DECLS

#endif /* BASALT_PLUGIN_KV_CACHE_H */
