// A least-recently-used cache of token masks (bitsets, one bit per vocabulary id) keyed by a parse position,
// bounded by the bytes its masks hold. Not thread-safe: its owner (the Matcher) locks around it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <unordered_map>
#include <utility>
#include <vector>

namespace basalt::grammar {

class MaskCache {
  public:
    // A cache that holds masks of at most `budget_bytes` in all (always at least one mask).
    explicit MaskCache(size_t budget_bytes) : budget_(budget_bytes) {}

    // The mask stored for key (now the most recently used), or nullptr. Valid until the next put or clear.
    const std::vector<uint64_t>* find(uint64_t key) {
        auto it = index_.find(key);
        if (it == index_.end()) return nullptr;
        order_.splice(order_.begin(), order_, it->second);
        return &it->second->second;
    }
    // Stores mask for key (a key not present), evicting the least recently used masks past the budget; returns
    // the stored mask, valid until the next put or clear.
    const std::vector<uint64_t>& put(uint64_t key, std::vector<uint64_t> mask) {
        const size_t bytes = mask.size() * sizeof(uint64_t);
        while (!order_.empty() && held_ + bytes > budget_) {
            held_ -= order_.back().second.size() * sizeof(uint64_t);
            index_.erase(order_.back().first);
            order_.pop_back();
        }
        order_.emplace_front(key, std::move(mask));
        index_[key] = order_.begin();
        held_ += bytes;
        return order_.front().second;
    }
    // Drops every mask.
    void clear() {
        order_.clear();
        index_.clear();
        held_ = 0;
    }
    size_t size() const { return order_.size(); }

  private:
    using Entry = std::pair<uint64_t, std::vector<uint64_t>>;
    size_t budget_;
    size_t held_ = 0;
    std::list<Entry> order_;  // most recently used first
    std::unordered_map<uint64_t, std::list<Entry>::iterator> index_;
};

}  // namespace basalt::grammar
