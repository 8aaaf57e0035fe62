// Basalt SDK: the last n tokens a sampler instance accepted, with a count per token, for samplers whose state is
// a recent-history window (repetition penalties, bans). Header-only C++17; compiled into the plugin, nothing here
// crosses the ABI. One window belongs to one sampler instance (one sequence): not thread-safe, copyable (clone).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <unordered_map>

namespace basalt::sdk {

class token_window {
  public:
    // length > 0 keeps the last `length` tokens; 0 keeps none (push is a no-op); -1 keeps every token pushed.
    explicit token_window(long long length = 0) : length_(length) {}

    // Records an accepted token, forgetting the oldest one when the window is full.
    void push(int32_t token) {
        if (length_ == 0) return;
        tokens_.push_back(token);
        ++counts_[token];
        if (length_ > 0 && tokens_.size() > static_cast<size_t>(length_)) {
            const int32_t old = tokens_.front();
            tokens_.pop_front();
            if (--counts_[old] == 0) counts_.erase(old);
        }
    }

    // How many times token occurs in the window (0: absent).
    int count(int32_t token) const {
        auto it = counts_.find(token);
        return it == counts_.end() ? 0 : it->second;
    }

    // True when the window holds no token.
    bool empty() const noexcept { return counts_.empty(); }

    // Forgets every token, keeping the length.
    void clear() noexcept {
        tokens_.clear();
        counts_.clear();
    }

  private:
    long long length_;
    std::deque<int32_t> tokens_;               // oldest first
    std::unordered_map<int32_t, int> counts_;  // occurrences of each token in tokens_
};

}  // namespace basalt::sdk
