// The grammar matcher and its token masks (matcher.hpp).
#include "matcher.hpp"

#include <algorithm>
#include <map>
#include <string>

#include "utf8-step.hpp"

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

// The cache's budget: 256 masks of a 262k vocabulary (8 MiB), more states for smaller vocabularies.
constexpr size_t kMaskCacheBytes = size_t{8} << 20;

void set_bit(std::vector<uint64_t>& words, uint32_t id) {
    words[id >> 6] |= uint64_t{1} << (id & 63);
}

size_t popcount(const std::vector<uint64_t>& words) {
    size_t n = 0;
    for (const uint64_t w : words) n += static_cast<size_t>(__builtin_popcountll(w));
    return n;
}

}  // namespace

Matcher::Matcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> trie)
    : g_(std::move(grammar)), trie_(std::move(trie)), masks_(kMaskCacheBytes) {
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
    non_ascii_.push_back(kNonAsciiUnknown);
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

// The stacks after `stack`'s top element matched a character: whichever character it was, what follows is the same.
const std::vector<uint32_t>& Matcher::after_match(uint32_t stack) {
    auto it = after_.find(stack);
    if (it != after_.end()) return it->second;
    std::vector<uint32_t> out;
    const Node n = nodes_[stack];  // (a copy: normalising may grow nodes_)
    std::vector<uint64_t> seen;
    normalise(n.pos + 1, n.parent, out, seen);
    return after_.emplace(stack, std::move(out)).first->second;
}

// The set after code point cp. Only which of the set's stacks match cp decides it, so a set of up to 64 stacks keeps
// its successor per match pattern: the characters of a class (every letter inside a string) share one computation.
uint32_t Matcher::next_set(uint32_t set, uint32_t cp) {
    if (cp >= 0x80 && non_ascii(set) != kNonAsciiMixed) cp = 0x80;  // every non-ASCII character alike
    const uint64_t key = (uint64_t{set} << 21) ^ cp;
    auto it = cp_next_.find(key);
    if (it != cp_next_.end()) return it->second;
    const std::vector<uint32_t> stacks = sets_[set];  // copy: interning below may grow sets_
    std::vector<uint32_t> matched;
    uint64_t pattern = 0;
    for (size_t i = 0; i < stacks.size(); ++i) {
        const uint32_t st = stacks[i];
        if (st == kEmptyStack || !g_->sets[g_->elems[nodes_[st].pos].value].matches(cp)) continue;
        matched.push_back(st);
        if (i < 64) pattern |= uint64_t{1} << i;
    }
    const bool keyed = stacks.size() <= 64;
    uint32_t id = kUnknown;
    if (keyed) {
        for (const auto& [p, next] : pattern_next_[set]) {
            if (p == pattern) id = next;
        }
    }
    if (id == kUnknown) {
        std::vector<uint32_t> next;
        for (const uint32_t st : matched) {
            const std::vector<uint32_t>& a = after_match(st);
            next.insert(next.end(), a.begin(), a.end());
        }
        id = next.empty() ? kDead : intern_set(next);
        if (keyed) pattern_next_[set].emplace_back(pattern, id);
    }
    cp_next_.emplace(key, id);
    return id;
}

int8_t Matcher::non_ascii(uint32_t set) {
    if (non_ascii_[set] == kNonAsciiUnknown) {
        bool all = false, mixed = false;
        for (const uint32_t st : sets_[set]) {
            if (st == kEmptyStack) continue;
            const CharSet& cs = g_->sets[g_->elems[nodes_[st].pos].value];
            const bool any = cs.matches_any(0x80, 0x10FFFF);
            const bool every = any && cs.matches_all(0x80, 0x10FFFF);
            all = all || every;
            mixed = mixed || (any && !every);
        }
        non_ascii_[set] = mixed ? kNonAsciiMixed : all ? kNonAsciiAll : kNonAsciiNone;
    }
    return non_ascii_[set];
}

bool Matcher::any_match(uint32_t set, uint32_t lo, uint32_t hi) {
    const int8_t kind = non_ascii(set);
    if (kind != kNonAsciiMixed && lo >= 0x80) return kind == kNonAsciiAll;
    for (const uint32_t st : sets_[set]) {
        if (st != kEmptyStack && g_->sets[g_->elems[nodes_[st].pos].value].matches_any(lo, hi)) return true;
    }
    return false;
}

namespace {

// For a uniform set, partial characters with the same future share one representative: the next bytes can only
// be refused by UTF-8's own rules (overlong forms after E0/F0, surrogates after ED, past U+10FFFF after F4), so
// the representative keeps those leads and maps every other valid partial character of its length and progress
// to one (C2; E1, E1 80; F1, F1 80, F1 80 80). Fewer automaton states: a vocabulary's thousands of split
// characters collapse to a handful per parse position.
uint32_t canonical_partial(uint32_t partial, uint32_t remaining, uint32_t length) {
    if (remaining == 1) return length == 2 ? 0x2u : length == 3 ? 0x40u : 0x1000u;
    if (length == 3) return partial == 0x0 || partial == 0xD ? partial : 0x1u;  // remaining 2: E0, ED kept
    if (remaining == 2) return 0x40u;                                           // four bytes, two to come
    return partial == 0x0 || partial == 0x4 ? partial : 0x1u;                   // remaining 3: F0, F4 kept
}

}  // namespace

// One byte. A lead byte or continuation that leaves a character incomplete only checks that some stack can still
// match a character with that prefix; the character's last byte moves the stacks.
bool Matcher::step(State& s, uint8_t byte, bool canonical) {
    Utf8Partial u{s.partial, s.remaining, s.length};
    const Utf8Result r = utf8_step(u, byte);
    if (r.kind == Utf8Step::Reject) return false;
    if (r.kind == Utf8Step::Partial) {
        if (!any_match(s.set, r.lo, r.hi)) return false;
        if (canonical && non_ascii(s.set) == kNonAsciiAll)
            u.partial = canonical_partial(u.partial, u.remaining, u.length);
        s.partial = u.partial;
        s.remaining = u.remaining;
        s.length = u.length;
        return true;
    }
    // Most bytes a walk tries match no stack: refuse them without building (and memoising) a successor set.
    if (!any_match(s.set, r.cp, r.cp)) return false;
    const uint32_t next = next_set(s.set, r.cp);
    if (next == kDead) return false;
    s = State{next, 0, 0, 0};
    return true;
}

uint32_t Matcher::dfa_id(const State& s) {
    auto [it, fresh] = dfa_ids_.emplace(state_key(s), static_cast<uint32_t>(dfa_.size()));
    if (fresh) {
        dfa_.push_back(s);
        trans_.resize(trans_.size() + 256, kUnknown);
        loop_of_.push_back(kLoopUnknown);
        loop_budget_.push_back(0);
    }
    return it->second;
}

uint32_t Matcher::next_dfa(uint32_t id, uint8_t byte) {
    const size_t at = size_t{id} * 256 + byte;
    if (trans_[at] != kUnknown) return trans_[at];
    State s = dfa_[id];
    const uint32_t next = step(s, byte) ? dfa_id(s) : kDead;
    trans_[at] = next;  // (indexed after dfa_id, which may grow the table)
    return next;
}

// The class of a state is the bytes that share its most common live successor among the ASCII bytes, plus every
// non-ASCII character when its set takes them all alike (uniform) to that same successor. Following the class from
// successor to successor while every byte of it leads to one next state gives a chain: its length is the budget
// (the characters any token of the class may have and still be allowed); a state that leads back to itself makes
// the budget unbounded (kUnbounded), a loop. Only large classes are kept (below).
const LoopTokens* Matcher::loop_tokens(uint32_t id, uint32_t& budget) {
    if (loop_of_[id] == kLoopUnknown) {
        loop_of_[id] = kNoLoop;
        const State s = dfa_[id];
        if (s.remaining != 0) return nullptr;
        std::map<uint32_t, int> count;
        for (uint32_t b = 0; b < 0x80; ++b) {
            const uint32_t next = next_dfa(id, static_cast<uint8_t>(b));
            if (next != kDead) ++count[next];
        }
        if (count.empty()) return nullptr;
        uint32_t first = count.begin()->first;
        for (const auto& [next, n] : count) {
            if (n > count[first]) first = next;
        }
        LoopClass k;
        for (uint32_t b = 0; b < 0x80; ++b) {
            if (next_dfa(id, static_cast<uint8_t>(b)) == first) k.ascii[b >> 6] |= uint64_t{1} << (b & 63);
        }
        // Whether every non-ASCII character leads from the state `from` to `to` (a complete-character state).
        auto non_ascii_to = [&](uint32_t from, uint32_t to) {
            const uint32_t set = dfa_[from].set;
            return non_ascii(set) == kNonAsciiAll && dfa_[to].remaining == 0 && next_set(set, 0x80) == dfa_[to].set;
        };
        k.non_ascii = non_ascii_to(id, first);
        // Worth it for classes most of a vocabulary's pieces fall in (string contents): a small class (digits, a
        // punctuation mark) leaves little to skip, and each class costs a pass over the trie once.
        const int n_ascii = __builtin_popcountll(k.ascii[0]) + __builtin_popcountll(k.ascii[1]);
        if (!k.non_ascii && n_ascii < 48) return nullptr;
        uint32_t steps = 1;
        std::vector<uint32_t> path = {first};  // the chain's states after 1, 2, ... class characters
        for (uint32_t cur = first, prev = id; steps < kUnbounded - 1;) {  // longer chains: 254, conservative
            if (cur == prev) {
                steps = kUnbounded;
                break;
            }
            uint32_t next = kUnknown;
            bool same = true;
            for (uint32_t b = 0; b < 0x80 && same; ++b) {
                if (!k.has(static_cast<uint8_t>(b))) continue;
                const uint32_t n = next_dfa(cur, static_cast<uint8_t>(b));
                if (next == kUnknown) next = n;
                same = n == next;
            }
            if (!same || next == kDead || next == kUnknown) break;
            if (k.non_ascii && !non_ascii_to(cur, next)) break;
            prev = cur;
            cur = next;
            path.push_back(cur);
            ++steps;
        }
        if (steps < 2) return nullptr;  // a single step: nothing to gain
        loops_.push_back(LoopTokens::shared(trie_, k));
        const auto index = static_cast<int32_t>(loops_.size() - 1);
        loop_of_[id] = index;
        loop_budget_[id] = steps;
        // The chain's later states have the same class and what is left of the chain (a loop's: all of it), so
        // they are not worked out again when the walk gets there.
        for (size_t j = 0; j < path.size(); ++j) {
            const uint32_t at = path[j];
            const uint32_t left = steps == kUnbounded ? kUnbounded : steps - static_cast<uint32_t>(j + 1);
            if (at == id || loop_of_[at] != kLoopUnknown || left < 2) continue;
            loop_of_[at] = index;
            loop_budget_[at] = left;
        }
    }
    budget = loop_budget_[id];
    return loop_of_[id] < 0 ? nullptr : loops_[static_cast<size_t>(loop_of_[id])].get();
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
    uint32_t id = dfa_id(s);
    for (size_t i = 0; i < n; ++i) {
        id = next_dfa(id, bytes[i]);
        if (id == kDead) return false;
    }
    out = dfa_[id];
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

// The preorder walk over trie nodes [begin, end): level_[d] is the automaton state after the first d bytes of the
// current node's prefix (level_[depth[begin] - 1] set by the caller). From a loop state, the tokens that stay in its
// class are set already and their pure subtrees skipped.
void Matcher::walk_nodes(uint32_t begin, uint32_t end, const LoopTokens* loop, uint32_t budget, uint64_t* words) {
    const TokenTrie& t = *trie_;
    const uint8_t* byte = t.byte.data();
    const uint32_t* depth = t.depth.data();
    const uint32_t* skip = t.skip.data();
    const uint32_t* tok_begin = t.tok_begin.data();
    const int32_t* toks = t.toks.data();
    uint32_t* level = level_.data();
    for (uint32_t i = begin; i < end;) {
        if (loop != nullptr && loop->pure(i) && loop->max_chars[i] <= budget) {
            i = skip[i];
            continue;
        }
        const uint32_t d = depth[i];
        uint32_t next = trans_[size_t{level[d - 1]} * 256 + byte[i]];
        if (next == kUnknown) next = next_dfa(level[d - 1], byte[i]);
        if (next == kDead) {
            i = skip[i];
            continue;
        }
        level[d] = next;
        for (uint32_t k = tok_begin[i]; k < tok_begin[i + 1]; ++k) {
            const auto id = static_cast<uint32_t>(toks[k]);
            words[id >> 6] |= uint64_t{1} << (id & 63);
        }
        ++i;
    }
}

// Whether the loop tokens and the exits decide the mask from automaton state `root`; fills chain_ (the state after c
// class characters, c = 0 .. while it changes) when they do. Every token either stays in the class (allowed when it
// has at most `budget` characters: the loop tokens) or leaves it at an exit after c characters, in state chain_[c].
// For a chain the tokens with more class characters than the budget must all be refused: its last state takes no
// class character (a bounded string, whose end takes only the closing quote); otherwise the caller walks instead.
bool Matcher::exit_chain(uint32_t root, const LoopTokens& loop, uint32_t budget) {
    const LoopClass& k = loop.cls;
    uint32_t first = 0x80;  // a class byte to follow the chain by (every class character leads to the same state)
    for (uint32_t b = 0; b < 0x80 && first == 0x80; ++b) {
        if (k.has(static_cast<uint8_t>(b))) first = b;
    }
    if (first == 0x80) return false;
    chain_.assign(1, root);
    const uint32_t last = budget == kUnbounded ? kUnbounded : budget;
    bool looped = false;
    for (uint32_t c = 1; c <= last && !looped; ++c) {
        const uint32_t next = next_dfa(chain_.back(), static_cast<uint8_t>(first));
        if (next == kDead) return false;
        looped = next == chain_.back();
        if (!looped) chain_.push_back(next);
    }
    if (budget == kUnbounded) return looped;  // a loop reaches a state that leads back to itself
    const uint32_t end = chain_[std::min<size_t>(budget, chain_.size() - 1)];
    for (uint32_t b = 0; b < 0x80; ++b) {
        if (k.has(static_cast<uint8_t>(b)) && next_dfa(end, static_cast<uint8_t>(b)) != kDead) return false;
    }
    return !(k.non_ascii && any_match(dfa_[end].set, 0x80, 0x10FFFF));
}

// The mask of s: from a loop state, the loop tokens, then either the exits' subtrees the chain's states take or (when
// the exits do not decide it) the walk of every node outside the loop tokens' pure subtrees; otherwise the walk of
// the whole trie.
void Matcher::walk(const State& s, std::vector<uint64_t>& out, bool loop_fast_path) {
    const TokenTrie& t = *trie_;
    const uint32_t root = dfa_id(s);
    uint32_t budget = 0;
    const LoopTokens* loop = loop_fast_path ? loop_tokens(root, budget) : nullptr;
    if (loop != nullptr && budget == kUnbounded) {
        out = loop->tokens;
    } else if (loop != nullptr) {
        const auto key = (uint64_t{static_cast<uint32_t>(loop_of_[root])} << 32) | budget;
        auto it = chain_tokens_.find(key);
        if (it == chain_tokens_.end()) it = chain_tokens_.emplace(key, loop->tokens_within(budget)).first;
        out = it->second;
    } else {
        out.assign((t.n_vocab + 63) / 64, 0);
    }
    level_.resize(t.max_depth + 1);
    uint64_t* words = out.data();
    if (loop != nullptr && exit_chain(root, *loop, budget)) {
        for (const ExitGroup& g : loop->exit_groups) {
            if (budget != kUnbounded && g.chars > budget) break;  // sorted by characters
            const uint32_t from = chain_[std::min<size_t>(g.chars, chain_.size() - 1)];
            const uint32_t next = next_dfa(from, g.byte);
            if (next == kDead) continue;
            for (uint32_t e = g.begin; e < g.end; ++e) {
                const uint32_t node = loop->exit_nodes[e];
                for (uint32_t k = t.tok_begin[node]; k < t.tok_begin[node + 1]; ++k) {
                    const auto id = static_cast<uint32_t>(t.toks[k]);
                    words[id >> 6] |= uint64_t{1} << (id & 63);
                }
                level_[t.depth[node]] = next;
                walk_nodes(node + 1, t.skip[node], nullptr, 0, words);
            }
        }
    } else {
        level_[0] = root;
        walk_nodes(1, static_cast<uint32_t>(t.byte.size()), loop, budget, words);
    }
    if (can_end_locked(s)) {
        for (const int32_t e : t.eog) set_bit(out, static_cast<uint32_t>(e));
    }
}

const std::vector<uint64_t>& Matcher::mask_locked(const State& s) {
    const uint64_t key = state_key(s);
    if (const std::vector<uint64_t>* hit = masks_.find(key)) return *hit;
    std::vector<uint64_t> m;
    walk(s, m, true);
    return masks_.put(key, std::move(m));
}

size_t Matcher::compute_mask_uncached(const State& s, std::vector<uint64_t>& out, bool loop_fast_path) {
    const std::lock_guard<std::mutex> lock(mu_);
    walk(s, out, loop_fast_path);
    return popcount(out);
}

size_t Matcher::reference_mask(const State& s, std::vector<uint64_t>& out) {
    const std::lock_guard<std::mutex> lock(mu_);
    const TokenTrie& t = *trie_;
    out.assign((t.n_vocab + 63) / 64, 0);
    for (size_t id = 0; id < t.n_vocab; ++id) {
        bool ok = false;
        if (t.is_eog[id] != 0) {
            ok = can_end_locked(s);
        } else if (!t.texts[id].empty()) {
            State x = s;
            ok = true;
            for (const char c : t.texts[id]) {
                if (!step(x, static_cast<uint8_t>(c), false)) {
                    ok = false;
                    break;
                }
            }
        }
        if (ok) set_bit(out, static_cast<uint32_t>(id));
    }
    return popcount(out);
}

bool Matcher::has_loop_tokens(const State& s) {
    const std::lock_guard<std::mutex> lock(mu_);
    uint32_t budget = 0;
    return loop_tokens(dfa_id(s), budget) != nullptr;
}

bool Matcher::has_exit_walk(const State& s) {
    const std::lock_guard<std::mutex> lock(mu_);
    uint32_t budget = 0;
    const uint32_t id = dfa_id(s);
    const LoopTokens* loop = loop_tokens(id, budget);
    return loop != nullptr && exit_chain(id, *loop, budget);
}

void Matcher::clear_mask_cache() {
    const std::lock_guard<std::mutex> lock(mu_);
    masks_.clear();
}

size_t Matcher::cached_masks() {
    const std::lock_guard<std::mutex> lock(mu_);
    return masks_.size();
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
