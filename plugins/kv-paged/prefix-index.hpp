// Prefix index of the paged KV cache: the token id held by every slot, and for each FULL block the hash of the
// whole token prefix up to and including it (a hash chain). A full block whose chain is new is registered
// (hash -> block); a full block whose prefix is already registered elsewhere records that block as its
// "canonical" twin, so its successors can still extend the chain. Lookups verify token ids and parent links, so
// a hash collision can never attach wrong K/V. Registration is best effort: it never fails a reservation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace basalt::kv_paged {

class PrefixIndex {
  public:
    PrefixIndex(uint32_t n_blocks, uint32_t block_size);

    // Records the token written to `slot`; tokens_known false marks the block as unregistrable (no ids given).
    void write_token(int32_t slot, int32_t token) noexcept { tokens_[static_cast<size_t>(slot)] = token; }
    void mark_unknown(int32_t block) noexcept { meta_[static_cast<size_t>(block)].known = false; }

    // A block handed out again starts empty: drops its registration (if any) and invalidates links to it.
    void reset(int32_t block) noexcept;
    // A full block about to be overwritten in place past its first slots (its sequence was truncated into it):
    // forgets its registration, twin and hash like reset, but keeps the token ids and `known` of the slots kept.
    void forget(int32_t block) noexcept;
    // True when the block is registered or records a registered twin (only ever true for a block that was full).
    bool indexed(int32_t block) const noexcept {
        const Meta& m = meta_[static_cast<size_t>(block)];
        return m.registered || m.canon >= 0;
    }
    // Copy on write: dst receives the first n token ids of src.
    void copy_prefix(int32_t src, int32_t dst, uint32_t n) noexcept;
    // Called when `block` became full; prev is the block before it in the sequence (-1 for the first block),
    // salt the sequence's (a chain hashes under its salt: sequences with different salts never match).
    void on_full(int32_t block, int32_t prev, uint64_t salt) noexcept;

    bool registered(int32_t block) const noexcept { return meta_[static_cast<size_t>(block)].registered; }
    // Appends to out the longest chain of registered blocks holding exactly tokens[0 .. k*block_size), registered
    // under salt. out must have capacity for n / block_size more entries (no allocation here).
    void match(const int32_t* tokens, size_t n, uint64_t salt, std::vector<int32_t>& out) const;

  private:
    struct Meta {
        uint64_t hash = 0;        // chain hash of the prefix ending with this block (valid when full and known)
        uint64_t salt = 0;        // the salt of the sequence that registered it (checked, not only hashed)
        int32_t parent = -1;      // registered block before this one (registered blocks only), -1 at the root
        uint32_t parent_gen = 0;  // parent's generation when linked; a reused parent breaks the chain
        uint32_t gen = 0;         // bumped each time the block is handed out again
        int32_t canon = -1;       // registered block holding the same prefix (itself when registered), or -1
        uint32_t canon_gen = 0;
        bool registered = false;
        bool known = true;  // every token id written into the block was given
    };

    const int32_t* block_tokens(int32_t block) const noexcept {
        return tokens_.data() + static_cast<size_t>(block) * block_size_;
    }
    bool same_tokens(int32_t block, const int32_t* tokens) const noexcept;
    // The registered block holding the same prefix as `block`, or -1.
    int32_t canonical(int32_t block) const noexcept;
    uint64_t chain_hash(uint64_t seed, const int32_t* tokens) const noexcept;

    uint32_t block_size_;
    std::vector<int32_t> tokens_;  // one per slot
    std::vector<Meta> meta_;       // one per block
    std::unordered_map<uint64_t, int32_t> by_hash_;
};

}  // namespace basalt::kv_paged
