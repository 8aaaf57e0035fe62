// The grammar matcher and its token masks (matcher.hpp).
#include "matcher.hpp"

#include <algorithm>
#include <map>
#include <string>

namespace basalt::grammar {
namespace {

uint64_t hash_stacks(const std::vector<uint32_t>& v) {
    uint64_t h = 1469598103934665603ull;
    for (const uint32_t x : v) {
        h ^= x;
        h *= 1099511628211ull;
    }
    return h;
}

uint64_t state_key(const State& s) {
    return (uint64_t{s.set} << 32) | (uint64_t{s.partial} << 4) | (uint64_t{s.length} << 2) | s.remaining;
}

}  // namespace

Matcher::Matcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> trie)
    : g_(std::move(grammar)), trie_(std::move(trie)) {
    nodes_.push_back(Node{UINT32_MAX, 0});  // the empty stack
    std::vector<uint32_t> none;
    dead_set_ = intern_set(none);
    std::vector<uint32_t> start;
    for (const uint32_t alt : g_->rule_alts[g_->root]) {
        std::vector<uint64_t> seen;
        normalise(alt, kEmptyStack, start, seen);
    }
    initial_.set = intern_set(start);
}

uint32_t Matcher::intern_node(uint32_t pos, uint32_t parent) {
    const uint64_t key = (uint64_t{pos} << 32) | parent;
    auto [it, fresh] = node_ids_.emplace(key, static_cast<uint32_t>(nodes_.size()));
    if (fresh) nodes_.push_back(Node{pos, parent});
    return it->second;
}

uint32_t Matcher::intern_set(std::vector<uint32_t>& stacks) {
    std::sort(stacks.begin(), stacks.end());
    stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
    std::vector<uint32_t>& bucket = set_ids_[hash_stacks(stacks)];
    for (const uint32_t id : bucket) {
        if (sets_[id] == stacks) return id;
    }
    const auto id = static_cast<uint32_t>(sets_.size());
    sets_.push_back(stacks);
    ascii_.emplace_back();
    bucket.push_back(id);
    return id;
}

// Expands element pos (with continuation stack `parent`) until every resulting stack's top is a character
// element, or the stack is empty. `seen` stops nullable cycles (the grammar has no left recursion).
void Matcher::normalise(uint32_t pos, uint32_t parent, std::vector<uint32_t>& out, std::vector<uint64_t>& seen) {
    const uint64_t key = (uint64_t{pos} << 32) | parent;
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) return;
    seen.push_back(key);
    const Elem& e = g_->elems[pos];
    switch (e.type) {
        case ElemType::Chars:
            out.push_back(intern_node(pos, parent));
            break;
        case ElemType::End:
            if (parent == kEmptyStack) {
                out.push_back(kEmptyStack);
            } else {
                const Node p = nodes_[parent];
                normalise(p.pos, p.parent, out, seen);
            }
            break;
        case ElemType::Ref: {
            // The continuation after the reference; nothing left in this alternative means the parent itself
            // (so right recursion does not deepen the stack).
            const uint32_t cont = g_->elems[pos + 1].type == ElemType::End ? parent : intern_node(pos + 1, parent);
            for (const uint32_t alt : g_->rule_alts[e.value]) normalise(alt, cont, out, seen);
            break;
        }
    }
}

const std::vector<uint32_t>& Matcher::advance_stack(uint32_t stack, uint32_t cp) {
    const uint64_t key = (uint64_t{stack} << 21) ^ cp;  // code points are < 2^21
    auto it = advance_.find(key);
    if (it != advance_.end()) return it->second;
    std::vector<uint32_t> out;
    if (stack != kEmptyStack) {
        const Node n = nodes_[stack];
        if (g_->sets[g_->elems[n.pos].value].matches(cp)) {
            std::vector<uint64_t> seen;
            normalise(n.pos + 1, n.parent, out, seen);
        }
    }
    return advance_.emplace(key, std::move(out)).first->second;
}

uint32_t Matcher::next_set(uint32_t set, uint32_t cp) {
    const uint64_t key = (uint64_t{set} << 21) ^ cp;
    auto it = cp_next_.find(key);
    if (it != cp_next_.end()) return it->second;
    std::vector<uint32_t> next;
    const std::vector<uint32_t> stacks = sets_[set];  // copy: interning below may grow sets_
    for (const uint32_t st : stacks) {
        const std::vector<uint32_t>& a = advance_stack(st, cp);
        next.insert(next.end(), a.begin(), a.end());
    }
    const uint32_t id = next.empty() ? kDead : intern_set(next);
    cp_next_.emplace(key, id);
    return id;
}

bool Matcher::any_match(uint32_t set, uint32_t lo, uint32_t hi) const {
    for (const uint32_t st : sets_[set]) {
        if (st != kEmptyStack && g_->sets[g_->elems[nodes_[st].pos].value].matches_any(lo, hi)) return true;
    }
    return false;
}

// One byte. A lead byte or continuation that leaves a character incomplete only checks that some stack can still
// match a character with that prefix; the character's last byte moves the stacks.
bool Matcher::step(State& s, uint8_t byte) {
    uint32_t cp = 0;
    if (s.remaining == 0) {
        if (byte < 0x80) {
            std::vector<uint32_t>& table = ascii_[s.set];
            if (table.empty()) table.assign(128, kUnknown);
            uint32_t next = table[byte];
            if (next == kUnknown) {
                next = next_set(s.set, byte);
                ascii_[s.set][byte] = next;  // (the vector may have moved while interning)
            }
            if (next == kDead) return false;
            s.set = next;
            return true;
        }
        uint32_t need = 0;
        if (byte >= 0xC2 && byte < 0xE0) {
            need = 1;
            s.partial = byte & 0x1Fu;
        } else if (byte >= 0xE0 && byte < 0xF0) {
            need = 2;
            s.partial = byte & 0x0Fu;
        } else if (byte >= 0xF0 && byte < 0xF5) {
            need = 3;
            s.partial = byte & 0x07u;
        } else {
            return false;  // a continuation byte without a lead, or an invalid lead
        }
        s.remaining = need;
        s.length = need + 1;
    } else {
        if ((byte & 0xC0) != 0x80) return false;
        s.partial = (s.partial << 6) | (byte & 0x3Fu);
        --s.remaining;
        if (s.remaining == 0) cp = s.partial;
    }
    // The shortest form only (no overlong encodings), no surrogates, nothing past U+10FFFF.
    const uint32_t min_cp = s.length == 2 ? 0x80 : s.length == 3 ? 0x800 : 0x10000;
    if (s.remaining > 0) {
        const uint32_t shift = 6 * s.remaining;
        const uint32_t lo = std::max(s.partial << shift, min_cp);
        const uint32_t hi = std::min<uint32_t>((s.partial << shift) | ((1u << shift) - 1), 0x10FFFF);
        if (lo > hi || (lo >= 0xD800 && hi <= 0xDFFF)) return false;
        return any_match(s.set, lo, hi);
    }
    if (cp < min_cp || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    s.partial = 0;
    s.length = 0;
    const uint32_t next = next_set(s.set, cp);
    if (next == kDead) return false;
    s.set = next;
    return true;
}

bool Matcher::can_end_locked(const State& s) const {
    const std::vector<uint32_t>& st = sets_[s.set];
    return s.remaining == 0 && !st.empty() && st.front() == kEmptyStack;
}

bool Matcher::can_end(const State& s) {
    const std::lock_guard<std::mutex> lock(mu_);
    return can_end_locked(s);
}

bool Matcher::accept_bytes(const State& s, const uint8_t* bytes, size_t n, State& out) {
    const std::lock_guard<std::mutex> lock(mu_);
    State t = s;
    for (size_t i = 0; i < n; ++i) {
        if (!step(t, bytes[i])) return false;
    }
    out = t;
    return true;
}

bool Matcher::accept_token(const State& s, int32_t token, State& out) {
    if (token < 0 || static_cast<size_t>(token) >= trie_->n_vocab) return false;
    const auto id = static_cast<size_t>(token);
    if (trie_->is_eog[id] != 0) {
        if (!can_end(s)) return false;
        out = s;
        return true;
    }
    const std::string& text = trie_->texts[id];
    if (text.empty()) return false;
    return accept_bytes(s, reinterpret_cast<const uint8_t*>(text.data()), text.size(), out);
}

// The preorder walk: level[d] is the state after the first d bytes of the current node's prefix.
size_t Matcher::walk(const State& s, std::vector<uint64_t>& out) {
    const TokenTrie& t = *trie_;
    out.assign((t.n_vocab + 63) / 64, 0);
    size_t allowed = 0;
    std::vector<State> level(t.max_depth + 1);
    level[0] = s;
    const size_t n = t.byte.size();
    for (size_t i = 1; i < n;) {
        const uint32_t d = t.depth[i];
        State next = level[d - 1];
        if (!step(next, t.byte[i])) {
            i = t.skip[i];
            continue;
        }
        level[d] = next;
        for (uint32_t k = t.tok_begin[i]; k < t.tok_begin[i + 1]; ++k) {
            const auto id = static_cast<uint32_t>(t.toks[k]);
            out[id >> 6] |= uint64_t{1} << (id & 63);
            ++allowed;
        }
        ++i;
    }
    if (can_end_locked(s)) {
        for (const int32_t e : t.eog) {
            const auto id = static_cast<uint32_t>(e);
            out[id >> 6] |= uint64_t{1} << (id & 63);
            ++allowed;
        }
    }
    return allowed;
}

const std::vector<uint64_t>& Matcher::mask_locked(const State& s) {
    const uint64_t key = state_key(s);
    auto it = masks_.find(key);
    if (it != masks_.end()) return it->second;
    // Bound the cache (a mask is n_vocab bits): drop everything past 256 states, keep going.
    if (masks_.size() >= 256) masks_.clear();
    std::vector<uint64_t> m;
    walk(s, m);
    return masks_.emplace(key, std::move(m)).first->second;
}

size_t Matcher::compute_mask_uncached(const State& s, std::vector<uint64_t>& out) {
    const std::lock_guard<std::mutex> lock(mu_);
    return walk(s, out);
}

void Matcher::clear_mask_cache() {
    const std::lock_guard<std::mutex> lock(mu_);
    masks_.clear();
}

std::shared_ptr<Matcher> shared_matcher(const std::string& key, const std::shared_ptr<const Grammar>& grammar,
                                        const std::shared_ptr<const TokenTrie>& trie) {
    static std::mutex mu;
    static std::map<std::pair<std::string, uint64_t>, std::weak_ptr<Matcher>> cache;
    const std::lock_guard<std::mutex> lock(mu);
    for (auto it = cache.begin(); it != cache.end();) {  // forget dead entries
        it = it->second.expired() ? cache.erase(it) : std::next(it);
    }
    std::weak_ptr<Matcher>& slot = cache[{key, trie->fingerprint}];
    if (auto live = slot.lock(); live && &live->trie() == trie.get()) return live;
    auto m = std::make_shared<Matcher>(grammar, trie);
    slot = m;
    return m;
}

}  // namespace basalt::grammar
