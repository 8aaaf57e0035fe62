// Block pool of the paged KV cache: reference counts of fixed-size blocks of slots, the free blocks that hold
// nothing worth keeping (a stack) and the free blocks that still hold a registered prefix (an LRU list, oldest
// evicted first). All storage is sized at construction; no operation allocates afterwards.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace basalt::kv_paged {

class BlockPool {
  public:
    explicit BlockPool(uint32_t n_blocks);

    uint32_t n_blocks() const noexcept { return static_cast<uint32_t>(refcount_.size()); }
    // Blocks that can be handed out: clean ones plus cached ones (evictable).
    size_t n_free() const noexcept { return clean_.size() + n_cached_; }
    size_t n_cached() const noexcept { return n_cached_; }
    uint32_t refcount(int32_t block) const noexcept { return refcount_[static_cast<size_t>(block)]; }
    bool is_cached(int32_t block) const noexcept { return cached_[static_cast<size_t>(block)] != 0; }

    // Takes a free block with refcount 1: a clean one if any, else the least recently cached one (the caller
    // must then forget what it held: *evicted is set). Precondition: n_free() > 0.
    int32_t take(bool* evicted) noexcept;
    // Adds a reference; a cached block (refcount 0) leaves the LRU list.
    void retain(int32_t block) noexcept;
    // Drops a reference; at 0 the block becomes cached (keep_cached: it holds a registered prefix) or clean.
    void release(int32_t block, bool keep_cached) noexcept;

  private:
    void unlink(int32_t block) noexcept;

    std::vector<uint32_t> refcount_;
    std::vector<int32_t> clean_;  // capacity n_blocks, so push_back never reallocates
    std::vector<uint8_t> cached_;
    // Intrusive doubly linked LRU list of cached blocks: head is the oldest, tail the most recent.
    std::vector<int32_t> prev_;
    std::vector<int32_t> next_;
    int32_t head_ = -1;
    int32_t tail_ = -1;
    size_t n_cached_ = 0;
};

}  // namespace basalt::kv_paged
