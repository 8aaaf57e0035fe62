#include "sink-cache.hpp"

#include <basalt/sdk/plugin.hpp>

#include <algorithm>
#include <climits>
#include <string>

namespace basalt::kv_paged {

const char* const kSinkLabel = "kv_cache 'sink'";

namespace {

[[noreturn]] void fail(basalt_status status, const std::string& message) {
    throw sdk::error(status, std::string(kSinkLabel) + ": " + message);
}

std::string str(uint64_t v) {
    return std::to_string(v);
}

// Checks the config and options; returns the rows of each sequence's region.
uint32_t validate(const basalt_kv_cache_config& c, const SinkOptions& o) {
    if (c.struct_size < offsetof(basalt_kv_cache_config, n_seq_max) + sizeof(c.n_seq_max)) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "config struct_size " + str(c.struct_size) + " is too small");
    }
    if (c.n_layers == 0) fail(BASALT_ERR_INVALID_ARGUMENT, "config n_layers is 0");
    if (c.n_seq_max == 0) fail(BASALT_ERR_INVALID_ARGUMENT, "config n_seq_max is 0: no sequence could be stored");
    if (c.n_slots > static_cast<uint32_t>(INT32_MAX) || c.n_seq_max > static_cast<uint32_t>(INT32_MAX)) {
        fail(BASALT_ERR_INVALID_ARGUMENT,
             "config n_slots " + str(c.n_slots) + " or n_seq_max " + str(c.n_seq_max) + " exceeds the index range");
    }
    const bool has_windows = c.struct_size >= offsetof(basalt_kv_cache_config, layer_window) + sizeof(c.layer_window);
    for (uint32_t l = 0; has_windows && c.layer_window != nullptr && l < c.n_layers; ++l) {
        if (c.layer_window[l] != 0) {
            fail(BASALT_ERR_UNSUPPORTED, "layer " + str(l) + " has a sliding window of " +
                                             std::to_string(c.layer_window[l]) +
                                             " tokens; a sink cache needs every layer to attend fully (it sets the "
                                             "window itself)");
        }
    }
    const uint32_t region = c.n_slots / c.n_seq_max;
    if (o.n_sink < 0) fail(BASALT_ERR_INVALID_ARGUMENT, "n_sink " + std::to_string(o.n_sink) + " is negative");
    if (o.window == 0 || o.window < -1) {
        fail(BASALT_ERR_INVALID_ARGUMENT,
             "window " + std::to_string(o.window) + " must be at least 1 (a query sees itself)");
    }
    const int64_t window = o.window < 0 ? int64_t{region} - o.n_sink : o.window;
    if (window < 1 || o.n_sink + window > int64_t{region}) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "n_sink " + std::to_string(o.n_sink) + " + window " + std::to_string(window) +
                                              " = " + std::to_string(o.n_sink + window) + " exceeds the " +
                                              str(region) + " cache rows of a sequence (the context: n_slots " +
                                              str(c.n_slots) + " / n_seq_max " + str(c.n_seq_max) + ")");
    }
    if (o.k_type == BASALT_DTYPE_Q8_0 && c.head_dim_k % 32 != 0) {
        fail(BASALT_ERR_INVALID_ARGUMENT,
             "k_type 'q8_0' needs head_dim_k to be a multiple of 32, but it is " + str(c.head_dim_k));
    }
    if (o.v_type == BASALT_DTYPE_Q8_0 && c.head_dim_v % 32 != 0) {
        fail(BASALT_ERR_INVALID_ARGUMENT,
             "v_type 'q8_0' needs head_dim_v to be a multiple of 32, but it is " + str(c.head_dim_v));
    }
    return region;
}

}  // namespace

SinkCache::SinkCache(const basalt_kv_cache_config& config, const SinkOptions& options)
    : n_layers_(config.n_layers),
      region_(validate(config, options)),
      n_sink_(static_cast<uint32_t>(options.n_sink)),
      window_(static_cast<uint32_t>(options.window < 0 ? int64_t{region_} - options.n_sink : options.window)),
      ring_(region_ - n_sink_),
      batch_(ring_ - window_ + 1),
      k_type_(options.k_type),
      v_type_(options.v_type),
      seqs_(config.n_seq_max),
      batch_added_(config.n_seq_max, 0) {
    pending_.reserve(config.n_seq_max);
}

SinkCache::Sequence& SinkCache::sequence(int32_t seq_id, const char* call) {
    return const_cast<Sequence&>(static_cast<const SinkCache*>(this)->sequence(seq_id, call));
}

const SinkCache::Sequence& SinkCache::sequence(int32_t seq_id, const char* call) const {
    if (seq_id < 0 || static_cast<size_t>(seq_id) >= seqs_.size()) {
        fail(BASALT_ERR_INVALID_ARGUMENT, std::string(call) + ": sequence id " + std::to_string(seq_id) +
                                              " is out of range (n_seq_max " + str(seqs_.size()) + ")");
    }
    return seqs_[static_cast<size_t>(seq_id)];
}

void SinkCache::layout(basalt_kv_cache_layout* out) const {
    if (out == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "layout: out is NULL");
    if (BASALT_HAS_FIELD(out, basalt_kv_cache_layout, k_type)) out->k_type = k_type_;
    if (BASALT_HAS_FIELD(out, basalt_kv_cache_layout, v_type)) out->v_type = v_type_;
    if (BASALT_HAS_FIELD(out, basalt_kv_cache_layout, block_size)) out->block_size = 1;
    if (BASALT_HAS_FIELD(out, basalt_kv_cache_layout, n_window_slots)) out->n_window_slots = 0;
    if (!BASALT_HAS_FIELD(out, basalt_kv_cache_layout, stream_batch)) {
        // A host that cannot read the stream fields would attend over evicted rows as if they held the context.
        fail(BASALT_ERR_UNSUPPORTED, "layout: the host's layout struct (struct_size " + str(out->struct_size) +
                                         ") lacks the stream fields of ABI 1.4, which a sink cache needs");
    }
    out->stream_sinks = n_sink_;
    out->stream_window = window_;
    out->stream_batch = batch_;
}

void SinkCache::reserve(basalt_kv_reservation* r) {
    if (r == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "reserve: reservation is NULL");
    if (!BASALT_HAS_FIELD(r, basalt_kv_reservation, out_n_copies)) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "reserve: reservation struct_size " + str(r->struct_size) + " is too small");
    }
    const bool window_fields = BASALT_HAS_FIELD(r, basalt_kv_reservation, out_n_window_copies);
    const size_t n = r->n_tokens;
    if (n > 0 && (r->positions == nullptr || r->seq_ids == nullptr || r->out_slots == nullptr)) {
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
    struct ScratchReset {
        SinkCache& c;
        ~ScratchReset() { std::fill(c.batch_added_.begin(), c.batch_added_.end(), 0u); }
    } scratch_reset{*this};
    // 1. Validate: ids, positions continuing each sequence, at most batch_ tokens of a sequence.
    for (size_t i = 0; i < n; ++i) {
        const int32_t s = r->seq_ids[i];
        if (s < 0 || static_cast<size_t>(s) >= seqs_.size()) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "reserve: token " + str(i) + " has sequence id " + std::to_string(s) +
                                                  ", but ids are 0.." + str(seqs_.size() - 1));
        }
        const auto si = static_cast<size_t>(s);
        const int64_t expected = int64_t{seqs_[si].length} + batch_added_[si];
        if (r->positions[i] != expected) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "reserve: sequence " + std::to_string(s) + ": token " + str(i) +
                                                  " has position " + std::to_string(r->positions[i]) + ", expected " +
                                                  std::to_string(expected));
        }
        if (expected >= INT32_MAX) {
            fail(BASALT_ERR_CAPACITY, "reserve: sequence " + std::to_string(s) + " reached the position range");
        }
        if (++batch_added_[si] > batch_) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "reserve: sequence " + std::to_string(s) + " has more than " +
                                                  str(batch_) + " tokens in this batch, but its ring of " + str(ring_) +
                                                  " rows holds a window of " + str(window_) + " plus " + str(batch_) +
                                                  " new tokens (layout stream_batch)");
        }
    }
    if (pending_.size() > r->copies_capacity) {
        r->out_n_copies = pending_.size();
        fail(BASALT_ERR_CAPACITY, "reserve: " + str(pending_.size()) + " fork copies are due, but copies_capacity is " +
                                      str(r->copies_capacity) + " (out_n_copies holds the number needed)");
    }
    // 2. Commit; nothing below can fail.
    std::copy(pending_.begin(), pending_.end(), r->out_copies);
    r->out_n_copies = pending_.size();
    pending_.clear();
    if (window_fields) r->out_n_window_copies = 0;
    for (size_t i = 0; i < n; ++i) r->out_slots[i] = slot_of(r->seq_ids[i], static_cast<uint32_t>(r->positions[i]));
    for (size_t si = 0; si < seqs_.size(); ++si) {
        if (batch_added_[si] == 0) continue;
        Sequence& q = seqs_[si];
        q.length += batch_added_[si];
        if (q.length > n_sink_ + ring_) q.lo = std::max(q.lo, q.length - ring_);
    }
}

void SinkCache::visible(int32_t seq_id, uint32_t layer, int32_t* out_slots, int32_t* out_positions, size_t capacity,
                        size_t* out_count) const {
    const Sequence& q = sequence(seq_id, "visible");
    if (layer >= n_layers_) {
        fail(BASALT_ERR_INVALID_ARGUMENT,
             "visible: layer " + str(layer) + " is out of range (the cache has " + str(n_layers_) + " layers)");
    }
    if (out_count == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "visible: out_count is NULL");
    const uint32_t sinks = std::min(q.length, n_sink_);
    const uint32_t lo = std::max(n_sink_, q.lo);
    const uint32_t count = sinks + (q.length > lo ? q.length - lo : 0);
    if (capacity < count) {
        *out_count = count;
        fail(BASALT_ERR_CAPACITY, "visible: sequence " + std::to_string(seq_id) + " has " + str(count) +
                                      " visible slots, but capacity is " + str(capacity) +
                                      " (out_count holds the size needed)");
    }
    if (count > 0 && (out_slots == nullptr || out_positions == nullptr)) {
        fail(BASALT_ERR_INVALID_ARGUMENT,
             std::string("visible: ") + (out_slots == nullptr ? "out_slots" : "out_positions") + " is NULL");
    }
    size_t k = 0;
    for (uint32_t p = 0; p < sinks; ++p, ++k) {
        out_slots[k] = slot_of(seq_id, p);
        out_positions[k] = static_cast<int32_t>(p);
    }
    for (uint32_t p = lo; p < q.length; ++p, ++k) {
        out_slots[k] = slot_of(seq_id, p);
        out_positions[k] = static_cast<int32_t>(p);
    }
    *out_count = count;
}

void SinkCache::drop(int32_t seq_id) {
    Sequence& q = sequence(seq_id, "seq_drop");
    q = Sequence{};
    const auto base = static_cast<int32_t>(static_cast<uint32_t>(seq_id) * region_);
    // A fork into this sequence that has not run yet must not overwrite whatever takes the region next.
    pending_.erase(
        std::remove_if(pending_.begin(), pending_.end(), [&](const basalt_kv_copy& c) { return c.dst_slot == base; }),
        pending_.end());
}

void SinkCache::fork(int32_t src_id, int32_t dst_id) {
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
    pending_.reserve(pending_.size() + 1);  // may throw: no change
    const auto r = static_cast<int32_t>(region_);
    // Runs before the next batch's writes, so it reads the source as it is now.
    pending_.push_back(basalt_kv_copy{src_id * r, dst_id * r, r});
    dst = src;
}

void SinkCache::truncate(int32_t seq_id, uint32_t n_keep) {
    Sequence& q = sequence(seq_id, "seq_truncate");
    if (n_keep > q.length) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "seq_truncate: sequence " + std::to_string(seq_id) + " holds " +
                                              str(q.length) + " tokens, so it cannot keep " + str(n_keep));
    }
    if (n_keep == q.length) return;
    // The next query (position n_keep) sees positions from n_keep + 1 - window: they must still be in the ring.
    const uint32_t need_lo = std::max(n_sink_, n_keep + 1 > window_ ? n_keep + 1 - window_ : 0);
    const uint32_t held_lo = std::max(n_sink_, q.lo);
    if (n_keep > n_sink_ && need_lo < held_lo) {
        fail(BASALT_ERR_UNSUPPORTED, "seq_truncate: sequence " + std::to_string(seq_id) + " keeps positions " +
                                         str(held_lo) + ".." + str(q.length - 1) + " in its ring; keeping " +
                                         str(n_keep) + " tokens needs positions from " + str(need_lo) + " (window " +
                                         str(window_) + "), overwritten already");
    }
    q.length = n_keep;
    if (n_keep <= n_sink_) q.lo = 0;
}

void SinkCache::set_salt(int32_t seq_id) {
    const Sequence& q = sequence(seq_id, "seq_set_salt");
    if (q.length != 0) {
        fail(BASALT_ERR_INVALID_ARGUMENT,
             "seq_set_salt: sequence " + std::to_string(seq_id) + " is not empty (holds " + str(q.length) + " tokens)");
    }
}

size_t SinkCache::free_slots() const noexcept {
    size_t n = 0;
    for (const Sequence& q : seqs_) n += q.length == 0 ? region_ : 0;
    return n;
}

}  // namespace basalt::kv_paged
