// The paged KV cache manager behind component kv_cache 'paged'. It hands out slots (rows of the per-layer K/V
// storage the host holds) in fixed-size blocks; sequences own lists of blocks (block tables); blocks are
// reference counted so forks and prefix hits share them, with copy on write of a shared partial block.
// Storage is n_slots / block_size whole blocks. Without an explicit block_size the manager picks the largest
// divisor of n_slots not above 16, so every slot is usable (a single sequence can always reach n_slots tokens);
// with an explicit block_size that does not divide n_slots, the trailing n_slots % block_size slots stay unused.
// Sliding-window layers: when the host gives n_batch and a ring of (largest window + n_batch) rows per sequence is
// smaller than n_slots in all, those layers keep their K/V in such rings (row seq * ring + position % ring, the
// layout's n_window_slots rows) instead of the blocks: a query sees the window before the first token of a batch,
// and a batch of n_batch tokens overwrites only positions older than that. Then prefix_attach matches nothing
// (a ring holds no shared prefix), a fork copies the source's ring (a window copy returned by the next reserve),
// and a truncation may not cut back past what the ring still holds.
// One instance is used by one thread at a time (ABI rule); every public call is all-or-nothing.
#pragma once

#include <basalt/plugin_kv_cache.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "block-pool.hpp"
#include "prefix-index.hpp"

namespace basalt::kv_paged {

// "kv_cache 'paged'": prefix of every message this component reports.
extern const char* const kLabel;

// Largest block size the manager picks by itself.
constexpr uint32_t kDefaultBlockSize = 16;

struct Options {
    uint32_t block_size = 0;  // 0: not given, the manager picks (see above)
    basalt_dtype k_type = BASALT_DTYPE_F16;
    basalt_dtype v_type = BASALT_DTYPE_F16;
    uint32_t residual = 0;  // residual window R of quantized K/V (a multiple of 32; 0: none)
};

class PagedCache {
  public:
    // Validates config and options; throws basalt::sdk::error naming the bad field and value.
    PagedCache(const basalt_kv_cache_config& config, const Options& options);

    void layout(basalt_kv_cache_layout* out) const;
    void reserve(basalt_kv_reservation* r);
    // Throws BASALT_ERR_CAPACITY after setting *out_count when capacity is too small (nothing else written).
    void visible(int32_t seq_id, uint32_t layer, int32_t* out_slots, int32_t* out_positions, size_t capacity,
                 size_t* out_count) const;
    void drop(int32_t seq_id);
    void fork(int32_t src, int32_t dst);
    void prefix_attach(int32_t seq_id, const int32_t* tokens, size_t n_tokens, size_t* out_n_matched);
    // Forgets positions >= n_keep (see basalt_kv_cache_iface::seq_truncate).
    void truncate(int32_t seq_id, uint32_t n_keep);
    // Sets an empty sequence's prefix-cache salt (see basalt_kv_cache_iface::seq_set_salt).
    void set_salt(int32_t seq_id, uint64_t salt);
    size_t free_slots() const noexcept { return pool_.n_free() * block_size_; }
    uint32_t ring() const noexcept { return ring_; }

  private:
    struct Sequence {
        std::vector<int32_t> blocks;  // block table: block k holds positions [k*block_size, (k+1)*block_size)
        uint32_t length = 0;          // tokens held; positions 0 .. length-1
        uint32_t ring_lo = 0;         // lowest position whose window-layer K/V are still in the ring
        uint64_t salt = 0;            // prefix-cache salt: its full blocks match only sequences with the same salt
    };

    Sequence& sequence(int32_t seq_id, const char* call);
    const Sequence& sequence(int32_t seq_id, const char* call) const;
    int32_t take_block() noexcept;
    void release_block(int32_t block) noexcept;
    int32_t slot_of(const Sequence& s, uint32_t pos) const noexcept {
        return s.blocks[pos / block_size_] * static_cast<int32_t>(block_size_) +
               static_cast<int32_t>(pos % block_size_);
    }

    uint32_t n_blocks_;  // first: initialised by validating the config, before anything reads it
    uint32_t n_layers_;
    uint32_t n_batch_;                     // most tokens of one sequence per reserve (0: any)
    uint32_t max_window_;                  // largest sliding window (0: none)
    uint32_t ring_;                        // rows per sequence in the window storage; 0: window layers use blocks
    std::vector<uint8_t> layer_windowed_;  // per layer: keeps its K/V in the rings
    uint32_t block_size_;
    basalt_dtype k_type_;
    basalt_dtype v_type_;
    uint32_t residual_;
    BlockPool pool_;
    PrefixIndex index_;
    std::vector<Sequence> seqs_;

    // Scratch for reserve()/prefix_attach(), sized at creation so steady-state calls do not allocate.
    std::vector<int32_t> batch_seqs_;          // sequences of the batch, in order of first appearance
    std::vector<uint32_t> batch_added_;        // per sequence: tokens of the batch (0 when not in it)
    std::vector<uint32_t> cow_planned_;        // per block: copies planned away from it in this batch
    std::vector<int32_t> cow_blocks_;          // blocks with cow_planned_ != 0
    std::vector<int32_t> matched_;             // prefix_attach result
    std::vector<basalt_kv_copy> ring_copies_;  // forks' window copies, returned by the next reserve
};

}  // namespace basalt::kv_paged
