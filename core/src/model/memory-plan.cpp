#include "model/memory-plan.hpp"

#include <basalt/blocks/kivi.hpp>

#include <algorithm>
#include <string>
#include <utility>

#include "model/dtype.hpp"
#include "support/error.hpp"

namespace basalt {
namespace {

uint64_t row_bytes(basalt_dtype type, uint64_t n, const char* which) {
    const auto b = dtype_bytes(type, n);
    if (!b) {
        const DtypeTraits* t = dtype_traits(type);
        fail(BASALT_ERR_INVALID_ARGUMENT,
             "{} cache type {}: a row of {} values is not a whole number of {}-value blocks", which,
             t != nullptr ? t->name : "unknown", n, t != nullptr ? t->block_size : 0);
    }
    return *b;
}

}  // namespace

uint64_t window_cells(uint64_t n_ctx, uint64_t window, uint64_t n_batch, uint64_t n_seq_max) {
    if (window == 0) return 0;
    const uint64_t ring = window + n_batch;
    return ring * n_seq_max < n_ctx ? ring * n_seq_max : n_ctx;
}

uint64_t kv_storage_rows(basalt_dtype k_type, basalt_dtype v_type, uint64_t cells) {
    return blocks::kivi_per_channel(k_type) || blocks::kivi_per_channel(v_type) ? (cells + 31) / 32 * 32 : cells;
}

MemoryPlan plan_memory(const gguf::File& file, const ModelHparams& hp, const PlanRequest& req) {
    // Plan only what a session can allocate: the types the attention ops read K and V in (kv-paged's k_type /
    // v_type accept exactly these).
    for (const auto& [which, type] : {std::pair{"K", req.k_type}, std::pair{"V", req.v_type}}) {
        if (type != BASALT_DTYPE_F32 && type != BASALT_DTYPE_F16 && type != BASALT_DTYPE_Q8_0 &&
            type != BASALT_DTYPE_Q4_0 && blocks::kivi_bits(type) == 0) {
            const DtypeTraits* t = dtype_traits(type);
            fail(BASALT_ERR_UNSUPPORTED,
                 "{} cache type {} cannot be stored by a session (f32, f16, q8_0, q4_0, kivi_t8/4/2, kivi_c8/4/2)",
                 which, t != nullptr ? t->name : std::to_string(type));
        }
        if (blocks::kivi_per_channel(type) && req.kv_residual == 0) {
            fail(BASALT_ERR_INVALID_ARGUMENT,
                 "{} cache type {} quantizes each channel over 32 tokens: it needs a residual window (e.g. 32 or 128)",
                 which, dtype_name(type));
        }
    }
    if (req.kv_residual % 32 != 0) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "KV residual window {} is not a multiple of 32", req.kv_residual);
    }
    MemoryPlan p;
    p.k_type = req.k_type;
    p.v_type = req.v_type;
    p.kv_residual = req.kv_residual;
    p.n_ctx = req.n_ctx != 0 ? req.n_ctx
                             : (hp.n_ctx_train != 0 ? std::min(hp.n_ctx_train, PlanRequest::kDefaultMaxCtx)
                                                    : PlanRequest::kDefaultMaxCtx);
    if (req.n_batch == 0) fail(BASALT_ERR_INVALID_ARGUMENT, "batch size must be at least 1");
    p.n_batch = std::min(req.n_batch, p.n_ctx);
    if (req.n_seq_max == 0) fail(BASALT_ERR_INVALID_ARGUMENT, "n_seq_max must be at least 1");
    p.n_seq_max = req.n_seq_max;

    for (const auto& t : file.tensors()) {
        TypeUsage& u = p.types[t.type];
        u.tensors += 1;
        u.elements += t.n_elements();
        u.bytes += t.n_bytes;
        p.n_params += t.n_elements();
        p.weight_bytes += t.n_bytes;
    }

    // KV cache: one K row and one V row per token per attention layer.
    const uint64_t kv_row =
        row_bytes(req.k_type, hp.n_embd_k_gqa(), "K") + row_bytes(req.v_type, hp.n_embd_v_gqa(), "V");
    const uint64_t ctx = p.n_ctx;
    p.kv_cells_full = ctx;
    if (hp.encoder_only) {
        // An embedding model's passes attend over their own rows: nothing is cached.
        p.kv_cells_full = 0;
    } else if (hp.encoder_decoder) {
        // Decoder self-attention caches n_ctx tokens; cross-attention caches the encoder output (<= n_ctx).
        p.kv_bytes_per_token = 2ull * hp.n_layer_dec * kv_row;
        p.kv_bytes = p.kv_bytes_per_token * ctx;
    } else {
        // A sliding-window layer keeps, per sequence, its window plus one batch of new tokens that must coexist
        // with it (when that is smaller than the context).
        bool any_sliding = false;
        for (uint32_t il = 0; il < hp.n_layer; ++il) any_sliding = any_sliding || hp.layer_sliding[il];
        const uint64_t win = any_sliding ? window_cells(ctx, hp.sliding_window, p.n_batch, p.n_seq_max) : 0;
        p.kv_cells_window = win;
        if (req.kv_residual != 0 && win != 0 && win != ctx) {
            fail(BASALT_ERR_UNSUPPORTED,
                 "a KV residual window ({}) does not compose with this model's capped sliding-window storage",
                 req.kv_residual);
        }
        // Rows of each layer's own width (gemma4's layers differ) and, per layer and sequence, the residual windows'
        // R F32 rows of K and of V. A layer that attends over another's K/V (gemma4's KV sharing) has none.
        for (uint32_t il = 0; il < hp.n_layer; ++il) {
            if (!hp.owns_kv(il)) continue;
            const uint64_t k_row = row_bytes(req.k_type, hp.n_embd_k_gqa(il), "K");
            const uint64_t v_row = row_bytes(req.v_type, hp.n_embd_v_gqa(il), "V");
            p.kv_bytes_per_token += k_row + v_row;
            const uint64_t cells = hp.layer_sliding[il] ? win : ctx;
            p.kv_bytes += (k_row + v_row) * kv_storage_rows(req.k_type, req.v_type, cells);
            p.kv_residual_bytes += static_cast<uint64_t>(p.n_seq_max) * req.kv_residual * 4ull *
                                   (static_cast<uint64_t>(hp.n_embd_k_gqa(il)) + hp.n_embd_v_gqa(il));
        }
        p.kv_bytes += p.kv_residual_bytes;
        // Recurrent layers (hybrid models): each sequence's conv and delta-rule state, F32.
        p.state_bytes = p.n_seq_max * hp.recurrent_state_bytes();
        p.kv_bytes += p.state_bytes;
    }

    // Scratch: f32 activations of one layer for n_batch tokens (the backends place intermediates in an arena
    // reused across layers; the CPU backend's measured peak is below this), and the step's inputs and the logits
    // a generation asks for, which exist twice: in the session's host memory and in the backend's IO buffer. Attention
    // keeps no score matrix in any backend (online softmax over the visible list).
    const uint64_t T = p.n_batch;
    const uint64_t qkv = static_cast<uint64_t>(hp.n_head) * hp.head_dim_k +
                         static_cast<uint64_t>(hp.n_head_kv) * (hp.head_dim_k + hp.head_dim_v);
    const uint64_t ffn_mats = hp.ffn_mats;
    const uint64_t experts = std::max<uint32_t>(1, hp.n_expert_used);
    uint64_t floats = 0;
    floats += 4 * T * hp.n_embd;                                          // residual, norm, attn out, ffn out
    floats += T * qkv;                                                    // q, k, v
    floats += T * static_cast<uint64_t>(hp.n_head) * hp.head_dim_v;       // attention context
    floats += ffn_mats * T * hp.n_ff * experts + T * hp.n_expert;         // ffn (+ router)
    floats += T * (3ull * hp.n_ff_shexp + (hp.n_ff_shexp != 0 ? 2 : 0));  // shared expert: gate, up, act; its gate
    // Per-layer embeddings (gemma4): the gathered rows, the projection and their sum for every layer (n_layer x P
    // each, live through the pass), and a layer's gate and its product.
    floats += T * (4ull * hp.n_layer * hp.n_embd_per_layer + 2ull * hp.n_embd_per_layer);
    if (hp.recurrent()) {
        // A recurrent layer: projection, conv, q/k/v (twice: sliced, normed), z, output; gate of attention layers.
        floats += T * (3ull * hp.ssm_conv_channels() + 3ull * hp.ssm_d_inner + 4ull * hp.ssm_dt_rank) +
                  T * static_cast<uint64_t>(hp.n_head) * hp.head_dim_k;
    }
    // Inputs: token ids, positions, slots (and window slots), query table, output rows; the visible (slot,
    // position) lists of up to min(n_seq_max, T) sequences, full and window.
    const uint64_t lists = std::min<uint64_t>(p.n_seq_max, T);
    // (+ 8 x 63 bytes: the session aligns each of its 8 input arrays to 64 bytes)
    // A residual window adds each token's residual row and per list (base row, open position), 2 x 63 aligned.
    const uint64_t inputs = 4 * T * (p.kv_cells_window != 0 && p.kv_cells_window != ctx ? 7 : 6) +
                            8 * lists * (ctx + (p.kv_cells_window != ctx ? p.kv_cells_window : 0)) + 8 * 63 +
                            (req.kv_residual != 0 ? 4 * T + 8 * lists + 2 * 63 : 0) +
                            (hp.recurrent() ? 8 * T + 63 : 0);  // (state slot, fresh) per token
    // The IO buffer is bounded by a step whose every row asks for logits (perplexity; an embedding model: its
    // hidden states); a generation step asks for one row per sequence, and the session's host copy and the IO
    // buffer's logits region are sized by what the steps ask for, so a generation holds only those rows, twice.
    const uint64_t row = 4ull * (hp.encoder_only ? hp.n_embd : hp.n_vocab);
    const uint64_t logits = T * row;
    const uint64_t gen_rows = hp.encoder_only ? T : std::min<uint64_t>(p.n_seq_max, T);
    p.logits_bytes = 2 * gen_rows * row;
    p.logits_all_rows_bytes = 2 * logits;
    p.io_bytes = inputs + logits;
    uint64_t io_inputs = inputs;
    if (hp.encoder_decoder) {
        // Decoder steps: + cross-attention q and context per layer, + each sequence's cross-attention list and the
        // position-bias buckets (2 more aligned arrays).
        const uint64_t rel = 4 * (2 * static_cast<uint64_t>(hp.rel_max_distance) + 1);
        floats += T * static_cast<uint64_t>(hp.n_head) * (hp.head_dim_k + hp.head_dim_v);
        const uint64_t dec_inputs = inputs + 8 * lists * ctx + rel + 2 * 63;
        // Encoder passes: one layer's activations for a pass of up to max(n_batch, n_ctx) tokens (a source longer
        // than the batch has a pass of its own) plus the cross K/V of its output before they are written; inputs:
        // tokens, positions, cross rows, query table, the sources' (row, position) lists, buckets (6 arrays).
        const uint64_t Te = std::max<uint64_t>(T, ctx);
        const uint64_t enc_floats = 4 * Te * hp.n_embd + Te * qkv + Te * hp.n_head * hp.head_dim_v + 3 * Te * hp.n_ff +
                                    Te * (hp.n_embd_k_gqa() + hp.n_embd_v_gqa());
        const uint64_t enc_inputs = 4 * Te * 5 + 8 * lists * ctx + rel + 6 * 63;
        floats = std::max(floats, enc_floats);
        io_inputs = std::max(dec_inputs, enc_inputs);
        p.io_bytes = std::max(dec_inputs + logits, enc_inputs);
    }
    p.scratch_bytes = 4 * floats + 2 * io_inputs + p.logits_bytes;
    p.scratch_all_rows_bytes = p.scratch_bytes - p.logits_bytes + p.logits_all_rows_bytes;

    p.host_bytes = req.host_bytes;
    if (p.state_bytes != 0 && req.state_checkpoint_bytes >= hp.recurrent_state_bytes())
        p.state_checkpoint_bytes = req.state_checkpoint_bytes;
    p.total_bytes = p.weight_bytes + p.kv_bytes + p.scratch_bytes + p.host_bytes + p.state_checkpoint_bytes;
    return p;
}

}  // namespace basalt
