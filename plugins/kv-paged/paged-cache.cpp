#include "paged-cache.hpp"

#include <basalt/sdk/plugin.hpp>

#include <algorithm>
#include <climits>
#include <string>
#include <tuple>

#include <basalt/blocks/dtype.hpp>
#include <basalt/blocks/kivi.hpp>

namespace basalt::kv_paged {

const char* const kLabel = "kv_cache 'paged'";

namespace {

[[noreturn]] void fail(basalt_status status, const std::string& message) {
    throw sdk::error(status, std::string(kLabel) + ": " + message);
}

std::string str(uint64_t v) {
    return std::to_string(v);
}

// The block size in use: the one given, else the largest divisor of n_slots up to kDefaultBlockSize; with a
// residual window, R (a unit of R tokens never straddles two blocks).
uint32_t block_size_for(const basalt_kv_cache_config& c, const Options& o) {
    if (o.block_size != 0) return o.block_size;
    if (o.residual != 0) return o.residual;
    uint32_t bs = kDefaultBlockSize;
    while (c.n_slots % bs != 0) --bs;
    return bs;
}

uint32_t max_window_of(const basalt_kv_cache_config& c);
uint32_t ring_of(const basalt_kv_cache_config& c);

// Checks the session's config and the chosen options; returns the number of whole blocks.
uint32_t validate(const basalt_kv_cache_config& c, const Options& o) {
    if (c.struct_size < offsetof(basalt_kv_cache_config, n_seq_max) + sizeof(c.n_seq_max)) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "config struct_size " + str(c.struct_size) + " is too small (need at least " +
                                              str(offsetof(basalt_kv_cache_config, n_seq_max) + sizeof(uint32_t)) +
                                              ")");
    }
    if (c.n_layers == 0) fail(BASALT_ERR_INVALID_ARGUMENT, "config n_layers is 0");
    if (c.n_kv_heads == 0) fail(BASALT_ERR_INVALID_ARGUMENT, "config n_kv_heads is 0");
    if (c.head_dim_k == 0 || c.head_dim_v == 0) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "config head dimensions must be positive (head_dim_k " + str(c.head_dim_k) +
                                              ", head_dim_v " + str(c.head_dim_v) + ")");
    }
    if (c.n_slots == 0) fail(BASALT_ERR_INVALID_ARGUMENT, "config n_slots is 0: the cache needs at least one block");
    if (c.n_slots > static_cast<uint32_t>(INT32_MAX)) {
        fail(BASALT_ERR_INVALID_ARGUMENT,
             "config n_slots " + str(c.n_slots) + " exceeds the slot index range " + str(INT32_MAX));
    }
    if (c.n_seq_max == 0) fail(BASALT_ERR_INVALID_ARGUMENT, "config n_seq_max is 0: no sequence could be stored");
    if (c.n_seq_max > static_cast<uint32_t>(INT32_MAX)) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "config n_seq_max " + str(c.n_seq_max) + " exceeds the sequence id range");
    }
    const bool has_windows = c.struct_size >= offsetof(basalt_kv_cache_config, layer_window) + sizeof(c.layer_window);
    if (has_windows && c.layer_window != nullptr) {
        for (uint32_t l = 0; l < c.n_layers; ++l) {
            if (c.layer_window[l] < 0) {
                fail(BASALT_ERR_INVALID_ARGUMENT, "config layer_window[" + str(l) + "] is " +
                                                      std::to_string(c.layer_window[l]) +
                                                      " (0 = full attention, else a positive window in tokens)");
            }
        }
    }
    const uint32_t bs = block_size_for(c, o);
    if (c.n_slots < bs) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "config n_slots " + str(c.n_slots) + " is smaller than block_size " +
                                              str(bs) + ": not even one block fits");
    }
    // Quantized rows are blocks of 32 along the head dimension.
    for (const auto& [key, type, hd, name] : {std::tuple{"k_type", o.k_type, c.head_dim_k, "head_dim_k"},
                                              std::tuple{"v_type", o.v_type, c.head_dim_v, "head_dim_v"}}) {
        if (type != BASALT_DTYPE_F32 && type != BASALT_DTYPE_F16 && hd % 32 != 0) {
            fail(BASALT_ERR_INVALID_ARGUMENT, std::string(key) + " '" + blocks::dtype_name(type) + "' needs " + name +
                                                  " to be a multiple of 32, but it is " + str(hd));
        }
        // Per-channel groups of 32 tokens are quantized when full: until then they live in the residual window.
        if (blocks::kivi_per_channel(type) && o.residual == 0) {
            fail(BASALT_ERR_INVALID_ARGUMENT, std::string(key) + " '" + blocks::dtype_name(type) +
                                                  "' quantizes each channel over 32 tokens: it needs a residual "
                                                  "window (parameter residual, a multiple of 32, e.g. 32 or 128)");
        }
    }
    if (o.residual != 0) {
        if (bs % o.residual != 0) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "block_size " + str(bs) + " is not a multiple of residual " +
                                                  str(o.residual) +
                                                  " (a unit of the residual window lies in one block)");
        }
        if (max_window_of(c) != 0 && ring_of(c) != 0) {
            fail(BASALT_ERR_UNSUPPORTED,
                 "a residual window (residual " + str(o.residual) +
                     ") does not compose with the capped sliding-window storage of this model's layers");
        }
    }
    return c.n_slots / bs;
}

uint64_t ceil_div(uint64_t a, uint64_t b) {
    return (a + b - 1) / b;
}

uint32_t config_n_batch(const basalt_kv_cache_config& c) {
    return c.struct_size >= offsetof(basalt_kv_cache_config, n_batch) + sizeof(c.n_batch) ? c.n_batch : 0;
}

const int32_t* config_windows(const basalt_kv_cache_config& c) {
    return c.struct_size >= offsetof(basalt_kv_cache_config, layer_window) + sizeof(c.layer_window) ? c.layer_window
                                                                                                    : nullptr;
}

uint32_t max_window_of(const basalt_kv_cache_config& c) {
    const int32_t* w = config_windows(c);
    int32_t m = 0;
    for (uint32_t l = 0; w != nullptr && l < c.n_layers; ++l) m = std::max(m, w[l]);
    return static_cast<uint32_t>(m);
}

// Rows per sequence of the window storage: the largest window plus one batch, when that is smaller in all than the
// blocks (else the window layers share the blocks, as without n_batch).
uint32_t ring_of(const basalt_kv_cache_config& c) {
    const uint64_t w = max_window_of(c), b = config_n_batch(c);
    if (w == 0 || b == 0) return 0;
    return (w + b) * c.n_seq_max < c.n_slots ? static_cast<uint32_t>(w + b) : 0;
}

}  // namespace

PagedCache::PagedCache(const basalt_kv_cache_config& config, const Options& options)
    : n_blocks_(validate(config, options)),
      n_layers_(config.n_layers),
      n_batch_(config_n_batch(config)),
      max_window_(max_window_of(config)),
      ring_(ring_of(config)),
      layer_windowed_(config.n_layers, 0),
      block_size_(block_size_for(config, options)),
      k_type_(options.k_type),
      v_type_(options.v_type),
      residual_(options.residual),
      pool_(n_blocks_),
      index_(pool_.n_blocks(), block_size_),
      seqs_(config.n_seq_max),
      batch_added_(config.n_seq_max, 0),
      cow_planned_(pool_.n_blocks(), 0) {
    batch_seqs_.reserve(config.n_seq_max);
    cow_blocks_.reserve(std::min<size_t>(config.n_seq_max, pool_.n_blocks()));
    matched_.reserve(pool_.n_blocks());
    const int32_t* w = config_windows(config);
    for (uint32_t l = 0; ring_ != 0 && l < n_layers_; ++l) layer_windowed_[l] = w[l] > 0 ? 1 : 0;
}

PagedCache::Sequence& PagedCache::sequence(int32_t seq_id, const char* call) {
    return const_cast<Sequence&>(static_cast<const PagedCache*>(this)->sequence(seq_id, call));
}

const PagedCache::Sequence& PagedCache::sequence(int32_t seq_id, const char* call) const {
    if (seq_id < 0 || static_cast<size_t>(seq_id) >= seqs_.size()) {
        fail(BASALT_ERR_INVALID_ARGUMENT, std::string(call) + ": sequence id " + std::to_string(seq_id) +
                                              " is out of range (n_seq_max " + str(seqs_.size()) + ")");
    }
    return seqs_[static_cast<size_t>(seq_id)];
}

int32_t PagedCache::take_block() noexcept {
    bool evicted = false;
    const int32_t b = pool_.take(&evicted);
    index_.reset(b);  // forgets an evicted block's prefix registration
    return b;
}

void PagedCache::release_block(int32_t block) noexcept {
    pool_.release(block, index_.registered(block));
}

void PagedCache::layout(basalt_kv_cache_layout* out) const {
    if (out == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "layout: out is NULL");
    if (BASALT_HAS_FIELD(out, basalt_kv_cache_layout, k_type)) out->k_type = k_type_;
    if (BASALT_HAS_FIELD(out, basalt_kv_cache_layout, v_type)) out->v_type = v_type_;
    if (BASALT_HAS_FIELD(out, basalt_kv_cache_layout, block_size)) out->block_size = block_size_;
    if (BASALT_HAS_FIELD(out, basalt_kv_cache_layout, n_window_slots)) {
        out->n_window_slots = ring_ * static_cast<uint32_t>(seqs_.size());
    }
    if (BASALT_HAS_FIELD(out, basalt_kv_cache_layout, residual)) out->residual = residual_;
}

void PagedCache::reserve(basalt_kv_reservation* r) {
    if (r == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "reserve: reservation is NULL");
    if (!BASALT_HAS_FIELD(r, basalt_kv_reservation, out_n_copies)) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "reserve: reservation struct_size " + str(r->struct_size) +
                                              " is too small (need " + str(sizeof(basalt_kv_reservation)) + ")");
    }
    const bool window_fields = BASALT_HAS_FIELD(r, basalt_kv_reservation, out_n_window_copies);
    if (ring_ != 0 && !window_fields) {
        fail(BASALT_ERR_INVALID_ARGUMENT,
             "reserve: reservation struct_size " + str(r->struct_size) + " lacks the window fields (need " +
                 str(sizeof(basalt_kv_reservation)) + "): this cache keeps sliding-window layers in rings of " +
                 str(ring_) + " rows per sequence (layout n_window_slots " + str(ring_ * seqs_.size()) + ")");
    }
    const size_t n = r->n_tokens;
    if (n == 0) {
        r->out_n_copies = 0;
        if (window_fields) r->out_n_window_copies = 0;
        return;
    }
    if (ring_ != 0 && r->out_window_slots == nullptr) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "reserve: out_window_slots is NULL for " + str(n) +
                                              " tokens, but sliding-window layers keep their K/V in rings");
    }
    if (ring_ != 0 && r->window_copies_capacity > 0 && r->out_window_copies == nullptr) {
        fail(BASALT_ERR_INVALID_ARGUMENT,
             "reserve: out_window_copies is NULL but window_copies_capacity is " + str(r->window_copies_capacity));
    }
    if (r->positions == nullptr || r->seq_ids == nullptr || r->out_slots == nullptr) {
        fail(BASALT_ERR_INVALID_ARGUMENT, std::string("reserve: ") +
                                              (r->positions == nullptr ? "positions"
                                               : r->seq_ids == nullptr ? "seq_ids"
                                                                       : "out_slots") +
                                              " is NULL for " + str(n) + " tokens");
    }
    if (r->copies_capacity > 0 && r->out_copies == nullptr) {
        fail(BASALT_ERR_INVALID_ARGUMENT,
             "reserve: out_copies is NULL but copies_capacity is " + str(r->copies_capacity));
    }

    // The scratch arrays are back to all-zero/empty when this call returns, whatever happens.
    struct ScratchReset {
        PagedCache& c;
        ~ScratchReset() {
            for (int32_t s : c.batch_seqs_) c.batch_added_[static_cast<size_t>(s)] = 0;
            c.batch_seqs_.clear();
            for (int32_t b : c.cow_blocks_) c.cow_planned_[static_cast<size_t>(b)] = 0;
            c.cow_blocks_.clear();
        }
    } scratch_reset{*this};

    // 1. Validate ids and positions, group tokens by sequence. Nothing is changed until step 3.
    for (size_t i = 0; i < n; ++i) {
        const int32_t s = r->seq_ids[i];
        if (s < 0 || static_cast<size_t>(s) >= seqs_.size()) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "reserve: token " + str(i) + " has sequence id " + std::to_string(s) +
                                                  ", but ids are 0.." + str(seqs_.size() - 1) + " (n_seq_max " +
                                                  str(seqs_.size()) + ")");
        }
        const auto si = static_cast<size_t>(s);
        const int64_t expected = static_cast<int64_t>(seqs_[si].length) + batch_added_[si];
        if (r->positions[i] != expected) {
            fail(BASALT_ERR_INVALID_ARGUMENT,
                 "reserve: sequence " + std::to_string(s) + ": token " + str(i) + " has position " +
                     std::to_string(r->positions[i]) + ", expected " + std::to_string(expected) +
                     " (the sequence holds " + str(seqs_[si].length) + " tokens and " + str(batch_added_[si]) +
                     " earlier tokens of this batch; positions must continue it in order)");
        }
        if (batch_added_[si]++ == 0) batch_seqs_.push_back(s);  // capacity n_seq_max: never reallocates
        if (ring_ != 0 && batch_added_[si] > n_batch_) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "reserve: sequence " + std::to_string(s) + " has more than " +
                                                  str(n_batch_) + " tokens in this batch, but its window ring (" +
                                                  str(ring_) + " rows: window " + str(max_window_) + " + n_batch " +
                                                  str(n_batch_) + ") holds one batch of at most n_batch");
        }
    }

    // 2. Plan: new blocks (including copy-on-write targets) and copies, simulating the order of step 3.
    uint64_t need_blocks = 0;
    size_t need_copies = 0;
    for (int32_t s : batch_seqs_) {
        const Sequence& q = seqs_[static_cast<size_t>(s)];
        const uint64_t after = ceil_div(uint64_t{q.length} + batch_added_[static_cast<size_t>(s)], block_size_);
        need_blocks += after - q.blocks.size();
        if (q.length % block_size_ != 0) {
            const int32_t b = q.blocks.back();
            auto& planned = cow_planned_[static_cast<size_t>(b)];
            if (pool_.refcount(b) - planned > 1) {  // still shared when this sequence writes: copy it away
                if (planned++ == 0) cow_blocks_.push_back(b);
                ++need_blocks;
                ++need_copies;
            }
        }
    }
    if (need_blocks > pool_.n_free()) {
        fail(BASALT_ERR_CAPACITY, "reserve: the batch of " + str(n) + " tokens needs " +
                                      str(need_blocks * block_size_) + " free slots (" + str(need_blocks) +
                                      " blocks of " + str(block_size_) + "), but only " + str(free_slots()) +
                                      " slots are free");
    }
    if (need_copies > r->copies_capacity) {
        r->out_n_copies = need_copies;
        fail(BASALT_ERR_CAPACITY, "reserve: the batch needs " + str(need_copies) +
                                      " copy-on-write copies, but copies_capacity is " + str(r->copies_capacity) +
                                      " (out_n_copies holds the number needed)");
    }
    if (ring_copies_.size() > (window_fields ? r->window_copies_capacity : 0)) {
        r->out_n_window_copies = ring_copies_.size();
        fail(BASALT_ERR_CAPACITY,
             "reserve: " + str(ring_copies_.size()) +
                 " window copies (forked sequences' rings) are due, but window_copies_capacity is " +
                 str(r->window_copies_capacity) + " (out_n_window_copies holds the number needed)");
    }
    for (int32_t s : batch_seqs_) {  // may throw bad_alloc; still nothing changed
        Sequence& q = seqs_[static_cast<size_t>(s)];
        const auto after =
            static_cast<size_t>(ceil_div(uint64_t{q.length} + batch_added_[static_cast<size_t>(s)], block_size_));
        if (after > q.blocks.capacity()) q.blocks.reserve(std::max(after, 2 * q.blocks.capacity()));
    }

    // 3. Commit; nothing below can fail.
    if (window_fields) {
        std::copy(ring_copies_.begin(), ring_copies_.end(), r->out_window_copies);
        r->out_n_window_copies = ring_copies_.size();
        ring_copies_.clear();
    }
    size_t n_copies = 0;
    for (int32_t s : batch_seqs_) {
        Sequence& q = seqs_[static_cast<size_t>(s)];
        const uint64_t end = uint64_t{q.length} + batch_added_[static_cast<size_t>(s)];
        const uint32_t fill = q.length % block_size_;
        if (fill != 0 && pool_.refcount(q.blocks.back()) > 1) {
            const int32_t src = q.blocks.back();
            const int32_t dst = take_block();
            index_.copy_prefix(src, dst, fill);
            const auto bs = static_cast<int32_t>(block_size_);
            r->out_copies[n_copies++] = basalt_kv_copy{src * bs, dst * bs, static_cast<int32_t>(fill)};
            release_block(src);  // still held by the other sharers
            q.blocks.back() = dst;
        } else if (fill != 0 && index_.indexed(q.blocks.back())) {
            // A full block this sequence was truncated into, now its own: the write below overwrites tokens the
            // index says it holds, so it stops being a prefix anyone can match (it was matchable until now).
            index_.forget(q.blocks.back());
        }
        while (uint64_t{q.blocks.size()} * block_size_ < end) q.blocks.push_back(take_block());
    }
    for (size_t i = 0; i < n; ++i) {
        const Sequence& q = seqs_[static_cast<size_t>(r->seq_ids[i])];
        const auto pos = static_cast<uint32_t>(r->positions[i]);
        const int32_t slot = slot_of(q, pos);
        r->out_slots[i] = slot;
        if (ring_ != 0) {
            r->out_window_slots[i] = static_cast<int32_t>(static_cast<uint32_t>(r->seq_ids[i]) * ring_ + pos % ring_);
        }
        if (r->tokens != nullptr) {
            index_.write_token(slot, r->tokens[i]);
        } else {
            index_.mark_unknown(q.blocks[pos / block_size_]);  // no ids: this block can never match a prefix
        }
    }
    for (int32_t s : batch_seqs_) {
        Sequence& q = seqs_[static_cast<size_t>(s)];
        const uint32_t start = q.length;
        q.length += batch_added_[static_cast<size_t>(s)];
        if (ring_ != 0 && q.length > ring_) q.ring_lo = std::max(q.ring_lo, q.length - ring_);
        for (size_t k = start / block_size_; (k + 1) * block_size_ <= q.length; ++k) {
            index_.on_full(q.blocks[k], k > 0 ? q.blocks[k - 1] : -1, q.salt);
        }
    }
    r->out_n_copies = n_copies;
}

void PagedCache::visible(int32_t seq_id, uint32_t layer, int32_t* out_slots, int32_t* out_positions, size_t capacity,
                         size_t* out_count) const {
    const Sequence& q = sequence(seq_id, "visible");
    if (layer >= n_layers_) {
        fail(BASALT_ERR_INVALID_ARGUMENT,
             "visible: layer " + str(layer) + " is out of range (the cache has " + str(n_layers_) + " layers)");
    }
    if (out_count == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "visible: out_count is NULL");
    const bool ring_layer = ring_ != 0 && layer_windowed_[layer] != 0;
    const uint32_t lo = ring_layer ? q.ring_lo : 0;
    const uint32_t count = q.length - lo;
    if (capacity < count) {
        *out_count = count;  // the one output written on this error: the size to retry with
        fail(BASALT_ERR_CAPACITY, "visible: sequence " + std::to_string(seq_id) + " has " + str(count) +
                                      " visible slots, but capacity is " + str(capacity) +
                                      " (out_count holds the size needed)");
    }
    if (count > 0 && (out_slots == nullptr || out_positions == nullptr)) {
        fail(BASALT_ERR_INVALID_ARGUMENT,
             std::string("visible: ") + (out_slots == nullptr ? "out_slots" : "out_positions") + " is NULL");
    }
    if (ring_layer) {
        const uint32_t base = static_cast<uint32_t>(seq_id) * ring_;
        for (uint32_t p = lo; p < q.length; ++p) {
            out_slots[p - lo] = static_cast<int32_t>(base + p % ring_);
            out_positions[p - lo] = static_cast<int32_t>(p);
        }
        *out_count = count;
        return;
    }
    uint32_t pos = 0;
    for (int32_t b : q.blocks) {
        const int32_t base = b * static_cast<int32_t>(block_size_);
        for (uint32_t j = 0; j < block_size_ && pos < q.length; ++j, ++pos) {
            out_slots[pos] = base + static_cast<int32_t>(j);
            out_positions[pos] = static_cast<int32_t>(pos);
        }
    }
    *out_count = q.length;
}

void PagedCache::drop(int32_t seq_id) {
    Sequence& q = sequence(seq_id, "seq_drop");
    // Last block first: cached blocks are evicted oldest first, so a chain loses its tail before its head.
    for (auto it = q.blocks.rbegin(); it != q.blocks.rend(); ++it) release_block(*it);
    q.blocks.clear();
    q.length = 0;
    q.ring_lo = 0;
    q.salt = 0;
}

void PagedCache::fork(int32_t src_id, int32_t dst_id) {
    const Sequence& src = sequence(src_id, "seq_fork");
    Sequence& dst = sequence(dst_id, "seq_fork");
    if (src_id == dst_id) {
        fail(BASALT_ERR_INVALID_ARGUMENT,
             "seq_fork: source and destination are both sequence " + std::to_string(src_id));
    }
    if (dst.length != 0) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "seq_fork: destination sequence " + std::to_string(dst_id) +
                                              " is not empty (holds " + str(dst.length) + " tokens); drop it first");
    }
    if (dst.blocks.capacity() < src.blocks.size()) dst.blocks.reserve(src.blocks.size());  // may throw: no change
    if (ring_ != 0) ring_copies_.reserve(ring_copies_.size() + 1);                         // may throw: no change
    dst.blocks.assign(src.blocks.begin(), src.blocks.end());
    for (int32_t b : dst.blocks) pool_.retain(b);
    dst.length = src.length;
    dst.salt = src.salt;
    if (ring_ != 0) {
        // The copy runs before the next batch's writes (whichever sequences it has), so it reads src as it is now.
        const auto r = static_cast<int32_t>(ring_);
        ring_copies_.push_back(basalt_kv_copy{src_id * r, dst_id * r, r});
        dst.ring_lo = src.ring_lo;
    }
}

void PagedCache::prefix_attach(int32_t seq_id, const int32_t* tokens, size_t n_tokens, size_t* out_n_matched) {
    Sequence& q = sequence(seq_id, "prefix_attach");
    if (out_n_matched == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "prefix_attach: out_n_matched is NULL");
    if (tokens == nullptr && n_tokens > 0) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "prefix_attach: tokens is NULL for " + str(n_tokens) + " tokens");
    }
    if (q.length != 0) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "prefix_attach: sequence " + std::to_string(seq_id) +
                                              " is not empty (holds " + str(q.length) + " tokens)");
    }
    if (ring_ != 0) {  // the sliding-window layers' rings hold no shared prefix: nothing can be reused
        *out_n_matched = 0;
        return;
    }
    matched_.clear();
    index_.match(tokens, n_tokens, q.salt, matched_);  // matched_ has capacity n_blocks: a chain never repeats a block
    if (q.blocks.capacity() < matched_.size()) q.blocks.reserve(matched_.size());  // may throw: no change
    q.blocks.assign(matched_.begin(), matched_.end());
    for (int32_t b : q.blocks) pool_.retain(b);  // a cached block leaves the LRU list
    q.length = static_cast<uint32_t>(matched_.size()) * block_size_;
    *out_n_matched = q.length;
}

void PagedCache::truncate(int32_t seq_id, uint32_t n_keep) {
    Sequence& q = sequence(seq_id, "seq_truncate");
    if (n_keep > q.length) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "seq_truncate: sequence " + std::to_string(seq_id) + " holds " +
                                              str(q.length) + " tokens, so it cannot keep " + str(n_keep));
    }
    if (n_keep == q.length) return;
    // The next query (position n_keep) needs positions from n_keep + 1 - window in the rings again.
    const uint32_t need_lo = n_keep + 1 > max_window_ ? n_keep + 1 - max_window_ : 0;
    if (ring_ != 0 && n_keep > 0 && q.ring_lo > need_lo) {
        fail(BASALT_ERR_UNSUPPORTED,
             "seq_truncate: sequence " + std::to_string(seq_id) + " keeps its sliding-window layers in a ring of " +
                 str(ring_) + " rows that now holds positions " + str(q.ring_lo) + ".." + str(q.length - 1) +
                 "; keeping " + str(n_keep) + " tokens needs positions from " + str(need_lo) + " (window " +
                 str(max_window_) + "), overwritten already: keep at least " + str(q.ring_lo + max_window_ - 1) +
                 " tokens (a cut back within the last batch always fits)");
    }
    const auto keep_blocks = static_cast<size_t>(ceil_div(n_keep, block_size_));
    // Last block first, as drop() does: a released chain is evicted tail first.
    while (q.blocks.size() > keep_blocks) {
        release_block(q.blocks.back());
        q.blocks.pop_back();
    }
    // A partly kept last block keeps its index entry while its K/V still hold the whole block: reserve() copies it
    // away when it is still shared, or forgets the entry before overwriting it in place.
    q.length = n_keep;
    if (n_keep == 0) q.ring_lo = 0;
}

void PagedCache::set_salt(int32_t seq_id, uint64_t salt) {
    Sequence& q = sequence(seq_id, "seq_set_salt");
    if (q.length != 0 || !q.blocks.empty()) {
        fail(BASALT_ERR_INVALID_ARGUMENT,
             "seq_set_salt: sequence " + std::to_string(seq_id) + " is not empty (holds " + str(q.length) + " tokens)");
    }
    q.salt = salt;
}

}  // namespace basalt::kv_paged
