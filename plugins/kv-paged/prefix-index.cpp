#include "prefix-index.hpp"

#include <algorithm>
#include <new>

namespace basalt::kv_paged {
namespace {

constexpr uint64_t kRootSeed = 0x6b762d7061676564ULL;  // "kv-paged"

uint64_t splitmix(uint64_t x) noexcept {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

}  // namespace

PrefixIndex::PrefixIndex(uint32_t n_blocks, uint32_t block_size)
    : block_size_(block_size), tokens_(static_cast<size_t>(n_blocks) * block_size, 0), meta_(n_blocks) {
    by_hash_.reserve(n_blocks);
}

uint64_t PrefixIndex::chain_hash(uint64_t seed, const int32_t* tokens) const noexcept {
    uint64_t h = seed;
    for (uint32_t i = 0; i < block_size_; ++i) h = splitmix(h ^ static_cast<uint32_t>(tokens[i]));
    return h;
}

bool PrefixIndex::same_tokens(int32_t block, const int32_t* tokens) const noexcept {
    return std::equal(tokens, tokens + block_size_, block_tokens(block));
}

int32_t PrefixIndex::canonical(int32_t block) const noexcept {
    const Meta& m = meta_[static_cast<size_t>(block)];
    if (m.canon < 0) return -1;
    const Meta& c = meta_[static_cast<size_t>(m.canon)];
    return c.registered && c.gen == m.canon_gen ? m.canon : -1;
}

void PrefixIndex::reset(int32_t block) noexcept {
    Meta& m = meta_[static_cast<size_t>(block)];
    if (m.registered) {
        auto it = by_hash_.find(m.hash);
        if (it != by_hash_.end() && it->second == block) by_hash_.erase(it);
    }
    const uint32_t gen = m.gen + 1;
    m = Meta{};
    m.gen = gen;
}

void PrefixIndex::forget(int32_t block) noexcept {
    const bool known = meta_[static_cast<size_t>(block)].known;
    reset(block);  // the generation bump orphans registered successors: no chain can run through this block
    meta_[static_cast<size_t>(block)].known = known;
}

void PrefixIndex::copy_prefix(int32_t src, int32_t dst, uint32_t n) noexcept {
    std::copy_n(block_tokens(src), n, tokens_.data() + static_cast<size_t>(dst) * block_size_);
    meta_[static_cast<size_t>(dst)].known = meta_[static_cast<size_t>(src)].known;
}

void PrefixIndex::on_full(int32_t block, int32_t prev, uint64_t salt) noexcept {
    Meta& m = meta_[static_cast<size_t>(block)];
    if (!m.known) return;
    uint64_t seed = salt == 0 ? kRootSeed : splitmix(kRootSeed ^ salt);
    int32_t parent = -1;
    uint32_t parent_gen = 0;
    if (prev >= 0) {
        parent = canonical(prev);
        if (parent < 0) return;  // the chain before this block is not indexed, so neither is this block
        seed = meta_[static_cast<size_t>(parent)].hash;
        parent_gen = meta_[static_cast<size_t>(parent)].gen;
    }
    m.hash = chain_hash(seed, block_tokens(block));
    auto it = by_hash_.find(m.hash);
    if (it != by_hash_.end()) {
        const int32_t twin = it->second;
        Meta& t = meta_[static_cast<size_t>(twin)];
        if (t.parent == parent && t.parent_gen == parent_gen && t.salt == salt &&
            same_tokens(twin, block_tokens(block))) {
            m.canon = twin;  // a twin already holds this prefix
            m.canon_gen = t.gen;
            return;
        }
        const bool twin_orphaned = t.parent >= 0 && (!meta_[static_cast<size_t>(t.parent)].registered ||
                                                     meta_[static_cast<size_t>(t.parent)].gen != t.parent_gen);
        if (!twin_orphaned) return;  // a hash collision: leave this block unindexed
        // The twin's chain lost its parent (evicted), so no lookup can reach it: this block takes its place.
        t.registered = false;
        it->second = block;
    } else {
        try {
            by_hash_.emplace(m.hash, block);
        } catch (const std::bad_alloc&) {
            return;  // indexing is an optimisation; the reservation itself has succeeded
        }
    }
    m.registered = true;
    m.salt = salt;
    m.parent = parent;
    m.parent_gen = parent_gen;
    m.canon = block;
    m.canon_gen = m.gen;
}

void PrefixIndex::match(const int32_t* tokens, size_t n, uint64_t salt, std::vector<int32_t>& out) const {
    uint64_t h = salt == 0 ? kRootSeed : splitmix(kRootSeed ^ salt);
    int32_t prev = -1;
    for (size_t k = 0; (k + 1) * block_size_ <= n; ++k) {
        const int32_t* chunk = tokens + k * block_size_;
        h = chain_hash(h, chunk);
        auto it = by_hash_.find(h);
        if (it == by_hash_.end()) break;
        const int32_t b = it->second;
        const Meta& m = meta_[static_cast<size_t>(b)];
        if (m.parent != prev || m.salt != salt) break;
        if (prev >= 0 && m.parent_gen != meta_[static_cast<size_t>(prev)].gen) break;
        if (!same_tokens(b, chunk)) break;
        out.push_back(b);
        prev = b;
    }
}

}  // namespace basalt::kv_paged
