// Recurrent-state checkpoints of a hybrid model's prefix cache: the state (every recurrent layer's conv and
// delta-rule rows of one sequence) after a token prefix that ends on a cache block boundary, kept in host memory
// under a byte budget, least recently used first out. A prompt that starts with a kept prefix attaches that
// prefix's K/V blocks and takes the state from here instead of computing it (docs/kv-cache.md "Prefix reuse on a
// hybrid model"). Keyed by the prefix-cache salt and the whole token prefix (compared, not only hashed). Not
// thread-safe: one session's thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <unordered_map>
#include <vector>

namespace basalt {

class StateCheckpoints {
  public:
    // budget_bytes: host memory for states (0: none kept); block: the cache's block size (checkpoint lengths are
    // its multiples); state_bytes: one sequence's state.
    void configure(uint64_t budget_bytes, uint32_t block, uint64_t state_bytes);
    // Whether a checkpoint can be kept at all (the budget holds one state).
    bool enabled() const { return state_bytes_ != 0 && budget_ >= state_bytes_; }
    uint32_t block() const { return block_; }
    // Keeps `state` (state_bytes) as the state after tokens[0..n) under salt; n must be a positive multiple of the
    // block. A prefix already kept is only marked used. Evicts the least recently used to stay within the budget.
    void put(uint64_t salt, const int32_t* tokens, size_t n, std::vector<uint8_t> state);
    // The longest kept prefix of tokens[0..n) under salt (its length, a multiple of the block; 0: none) and its
    // state (borrowed until the next put); marks it used.
    size_t find(uint64_t salt, const int32_t* tokens, size_t n, const std::vector<uint8_t>** state);
    // Forgets the state after tokens[0..n) under salt, if kept.
    void erase(uint64_t salt, const int32_t* tokens, size_t n);
    // A buffer of state_bytes for the next put: one an evicted or erased checkpoint left (its pages already mapped:
    // a checkpoint of a large model is tens of MB), else a new one.
    std::vector<uint8_t> buffer();
    size_t count() const { return lru_.size(); }
    uint64_t bytes() const { return lru_.size() * state_bytes_; }
    uint64_t budget() const { return budget_; }

  private:
    struct Entry {
        uint64_t key = 0;
        uint64_t salt = 0;
        std::vector<int32_t> tokens;
        std::vector<uint8_t> state;
    };
    using Lru = std::list<Entry>;  // most recently used first
    // The keys of tokens[0..L) under salt for L = block, 2 block, ... <= n (one pass over the tokens).
    std::vector<uint64_t> prefix_keys(uint64_t salt, const int32_t* tokens, size_t n) const;
    Lru::iterator lookup(uint64_t key, uint64_t salt, const int32_t* tokens, size_t n);
    void remove(Lru::iterator it);

    uint64_t budget_ = 0;
    uint32_t block_ = 0;
    uint64_t state_bytes_ = 0;
    Lru lru_;
    std::vector<std::vector<uint8_t>> spare_;  // at most kSpare buffers of removed checkpoints
    static constexpr size_t kSpare = 2;
    std::unordered_multimap<uint64_t, Lru::iterator> index_;
};

}  // namespace basalt
