// The streaming KV cache manager behind component kv_cache 'sink' (StreamingLLM: attention sinks plus a window).
// Each sequence owns a fixed region of n_slots / n_seq_max rows: its first n_sink tokens stay in the region's first
// n_sink rows for good (the sinks), every later token goes to a ring over the other rows, overwriting the oldest.
// A query sees the sinks and its last `window` positions (the host masks attention with the layout's stream fields
// and gives the kept keys cache positions), so memory is bounded by the region whatever the sequence's length.
// The ring holds window + stream_batch - 1 positions: a batch of up to stream_batch tokens of one sequence
// overwrites only positions none of its queries sees. No prefix caching (a ring holds no shared prefix); forks copy
// the source's region (a copy returned by the next reserve); a truncation may not cut back past what the ring holds.
// One instance is used by one thread at a time (ABI rule); every public call is all-or-nothing.
#pragma once

#include <basalt/plugin_kv_cache.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace basalt::kv_paged {

// "kv_cache 'sink'": prefix of every message this component reports.
extern const char* const kSinkLabel;

struct SinkOptions {
    int64_t n_sink = 4;   // tokens kept from the start of each sequence
    int64_t window = -1;  // recent tokens each query sees (itself included); -1: the region's rows minus n_sink
    basalt_dtype k_type = BASALT_DTYPE_F16;
    basalt_dtype v_type = BASALT_DTYPE_F16;
};

class SinkCache {
  public:
    // Validates config and options; throws basalt::sdk::error naming the bad field and value.
    SinkCache(const basalt_kv_cache_config& config, const SinkOptions& options);

    void layout(basalt_kv_cache_layout* out) const;
    void reserve(basalt_kv_reservation* r);
    void visible(int32_t seq_id, uint32_t layer, int32_t* out_slots, int32_t* out_positions, size_t capacity,
                 size_t* out_count) const;
    void drop(int32_t seq_id);
    void fork(int32_t src, int32_t dst);
    void truncate(int32_t seq_id, uint32_t n_keep);
    // Accepts any salt on an empty sequence: nothing is ever shared, so every tenant is isolated already.
    void set_salt(int32_t seq_id);
    size_t free_slots() const noexcept;

  private:
    struct Sequence {
        uint32_t length = 0;  // tokens seen; positions 0 .. length-1
        uint32_t lo = 0;      // lowest ring position whose row still holds its K/V
    };
    Sequence& sequence(int32_t seq_id, const char* call);
    const Sequence& sequence(int32_t seq_id, const char* call) const;
    int32_t slot_of(int32_t seq_id, uint32_t pos) const noexcept {
        const uint32_t row = pos < n_sink_ ? pos : n_sink_ + (pos - n_sink_) % ring_;
        return static_cast<int32_t>(static_cast<uint32_t>(seq_id) * region_ + row);
    }

    uint32_t n_layers_;
    uint32_t region_;  // rows per sequence
    uint32_t n_sink_;
    uint32_t window_;
    uint32_t ring_;   // region_ - n_sink_
    uint32_t batch_;  // most tokens of one sequence per reserve: ring_ - window_ + 1
    basalt_dtype k_type_;
    basalt_dtype v_type_;
    std::vector<Sequence> seqs_;
    std::vector<uint32_t> batch_added_;    // scratch of reserve(): tokens per sequence in the batch
    std::vector<basalt_kv_copy> pending_;  // forks' region copies, returned by the next reserve
};

}  // namespace basalt::kv_paged
