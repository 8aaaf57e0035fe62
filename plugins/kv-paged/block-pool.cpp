#include "block-pool.hpp"

namespace basalt::kv_paged {

BlockPool::BlockPool(uint32_t n_blocks)
    : refcount_(n_blocks, 0), cached_(n_blocks, 0), prev_(n_blocks, -1), next_(n_blocks, -1) {
    clean_.reserve(n_blocks);
    // Highest id at the bottom so blocks are handed out in ascending order (easier to read in traces).
    for (uint32_t i = n_blocks; i-- > 0;) clean_.push_back(static_cast<int32_t>(i));
}

int32_t BlockPool::take(bool* evicted) noexcept {
    int32_t b = -1;
    if (!clean_.empty()) {
        b = clean_.back();
        clean_.pop_back();
        *evicted = false;
    } else {
        b = head_;
        unlink(b);
        *evicted = true;
    }
    refcount_[static_cast<size_t>(b)] = 1;
    return b;
}

void BlockPool::retain(int32_t block) noexcept {
    const auto i = static_cast<size_t>(block);
    if (refcount_[i] == 0 && cached_[i] != 0) unlink(block);
    ++refcount_[i];
}

void BlockPool::release(int32_t block, bool keep_cached) noexcept {
    const auto i = static_cast<size_t>(block);
    if (--refcount_[i] != 0) return;
    if (!keep_cached) {
        clean_.push_back(block);
        return;
    }
    cached_[i] = 1;
    prev_[i] = tail_;
    next_[i] = -1;
    if (tail_ >= 0) {
        next_[static_cast<size_t>(tail_)] = block;
    } else {
        head_ = block;
    }
    tail_ = block;
    ++n_cached_;
}

void BlockPool::unlink(int32_t block) noexcept {
    const auto i = static_cast<size_t>(block);
    const int32_t p = prev_[i];
    const int32_t n = next_[i];
    if (p >= 0) {
        next_[static_cast<size_t>(p)] = n;
    } else {
        head_ = n;
    }
    if (n >= 0) {
        prev_[static_cast<size_t>(n)] = p;
    } else {
        tail_ = p;
    }
    prev_[i] = next_[i] = -1;
    cached_[i] = 0;
    --n_cached_;
}

}  // namespace basalt::kv_paged
