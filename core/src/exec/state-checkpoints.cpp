#include "exec/state-checkpoints.hpp"

#include <algorithm>

namespace basalt {
namespace {

uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 33);
}

}  // namespace

void StateCheckpoints::configure(uint64_t budget_bytes, uint32_t block, uint64_t state_bytes) {
    lru_.clear();
    index_.clear();
    spare_.clear();
    budget_ = budget_bytes;
    block_ = block == 0 ? 1 : block;
    state_bytes_ = state_bytes;
}

std::vector<uint64_t> StateCheckpoints::prefix_keys(uint64_t salt, const int32_t* tokens, size_t n) const {
    std::vector<uint64_t> keys;
    keys.reserve(n / block_);
    uint64_t h = mix(0x5851f42d4c957f2dull, salt);
    for (size_t i = 0; i < n / block_ * block_; ++i) {
        h = mix(h, static_cast<uint32_t>(tokens[i]));
        if ((i + 1) % block_ == 0) keys.push_back(h);
    }
    return keys;
}

StateCheckpoints::Lru::iterator StateCheckpoints::lookup(uint64_t key, uint64_t salt, const int32_t* tokens, size_t n) {
    const auto [first, last] = index_.equal_range(key);
    for (auto it = first; it != last; ++it) {
        const Entry& e = *it->second;
        if (e.salt == salt && e.tokens.size() == n && std::equal(e.tokens.begin(), e.tokens.end(), tokens))
            return it->second;
    }
    return lru_.end();
}

void StateCheckpoints::put(uint64_t salt, const int32_t* tokens, size_t n, std::vector<uint8_t> state) {
    if (!enabled() || n == 0 || n % block_ != 0 || state.size() != state_bytes_) return;
    const uint64_t key = prefix_keys(salt, tokens, n).back();
    if (auto it = lookup(key, salt, tokens, n); it != lru_.end()) {
        lru_.splice(lru_.begin(), lru_, it);
        if (spare_.size() < kSpare) spare_.push_back(std::move(state));
        return;
    }
    while (!lru_.empty() && bytes() + state_bytes_ > budget_) remove(std::prev(lru_.end()));
    lru_.push_front(Entry{key, salt, std::vector<int32_t>(tokens, tokens + n), std::move(state)});
    index_.emplace(key, lru_.begin());
}

void StateCheckpoints::remove(Lru::iterator entry) {
    const auto [first, last] = index_.equal_range(entry->key);
    for (auto it = first; it != last; ++it) {
        if (it->second == entry) {
            index_.erase(it);
            break;
        }
    }
    if (spare_.size() < kSpare) spare_.push_back(std::move(entry->state));
    lru_.erase(entry);
}

std::vector<uint8_t> StateCheckpoints::buffer() {
    if (spare_.empty()) return std::vector<uint8_t>(state_bytes_);
    std::vector<uint8_t> b = std::move(spare_.back());
    spare_.pop_back();
    return b;
}

void StateCheckpoints::erase(uint64_t salt, const int32_t* tokens, size_t n) {
    if (n == 0 || n % block_ != 0) return;
    if (auto it = lookup(prefix_keys(salt, tokens, n).back(), salt, tokens, n); it != lru_.end()) remove(it);
}

size_t StateCheckpoints::find(uint64_t salt, const int32_t* tokens, size_t n, const std::vector<uint8_t>** state) {
    *state = nullptr;
    if (lru_.empty()) return 0;
    const std::vector<uint64_t> keys = prefix_keys(salt, tokens, n);
    for (size_t k = keys.size(); k-- > 0;) {
        const size_t len = (k + 1) * block_;
        if (auto it = lookup(keys[k], salt, tokens, len); it != lru_.end()) {
            lru_.splice(lru_.begin(), lru_, it);
            *state = &it->state;
            return len;
        }
    }
    return 0;
}

}  // namespace basalt
