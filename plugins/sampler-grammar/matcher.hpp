// The grammar's matcher over bytes, and the token masks it derives from the vocabulary trie.
//
// A parse position is a set of pushdown stacks (llama.cpp's representation): each stack's top is a character
// element still to match, the rest is where to continue when its rule ends; the empty stack means the grammar
// has matched a complete output. Stacks are hash-consed (a node is (element, parent)), so a stack is an id, a
// right-recursive repetition stays one node deep, and a set of stacks is interned too: a State is that set id
// plus a partial UTF-8 character (the bytes of a character that a token split). States are interned once more as
// the states of a lazily built byte automaton: a flat table gives each (state, byte) its successor, so walking a
// token costs one load per byte once its transitions are known.
//
// The mask of the tokens allowed in a state is one preorder walk of the token trie that skips every subtree whose
// prefix dies. In a loop state (inside a JSON string, say: most characters lead back to the same state) the tokens
// made only of looping bytes are precomputed per vocabulary and byte class (loop-tokens.hpp) and set with word
// operations; the rest of the mask is then the subtrees of the class's exits (the first byte outside the class after a
// run of class characters) that the loop's or chain's states take, so the trie's long runs of class characters are
// never walked. Where the exits do not decide the mask (a chain whose last state still takes class characters), the
// walk skips the pure subtrees instead. Masks are cached per state (an LRU bounded in bytes). One Matcher
// serves every sequence and request with the same grammar and vocabulary; its public calls lock an internal mutex,
// so instances on different threads may share it.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "grammar.hpp"
#include "loop-tokens.hpp"
#include "mask-cache.hpp"
#include "token-trie.hpp"

namespace basalt::grammar {

// A parse position: an interned stack set and a partial UTF-8 character (value so far, continuation bytes left).
struct State {
    uint32_t set = 0;
    uint32_t partial = 0;
    uint32_t remaining = 0;
    uint32_t length = 0;  // bytes of the partial character's encoding (2..4), to refuse overlong forms
    bool operator==(const State& o) const {
        return set == o.set && partial == o.partial && remaining == o.remaining && length == o.length;
    }
};

class Matcher {
  public:
    Matcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> trie);

    // The position before any output.
    State initial() const { return initial_; }
    // The position after `token` (an id of the vocabulary); false when the grammar does not allow it (EOG tokens:
    // allowed where the grammar may end, the state unchanged).
    bool accept_token(const State& s, int32_t token, State& out);
    // The position after bytes; false when they cannot continue the grammar.
    bool accept_bytes(const State& s, const uint8_t* bytes, size_t n, State& out);
    // Whether the output may end here (a complete match, no partial character).
    bool can_end(const State& s);
    // Calls fn(words) with the bitset (one bit per token id, 64 per word) of the tokens allowed in s: those whose
    // text continues the grammar, and the EOG tokens where it may end. The words are valid during the call.
    template <typename Fn>
    void with_mask(const State& s, Fn&& fn) {
        const std::lock_guard<std::mutex> lock(mu_);
        fn(mask_locked(s));
    }
    // Computes the mask of s without the mask cache (for the benchmark's cold figures and the tests); returns the
    // allowed count. loop_fast_path = false walks every live subtree (no precomputed loop tokens).
    size_t compute_mask_uncached(const State& s, std::vector<uint64_t>& out, bool loop_fast_path = true);
    // The mask of s by the definition, token by token through the byte matcher (no trie, automaton table or
    // cache): the tests' reference. Returns the allowed count.
    size_t reference_mask(const State& s, std::vector<uint64_t>& out);
    // Whether s is a loop or chain state whose masks start from precomputed loop tokens (for the tests).
    bool has_loop_tokens(const State& s);
    // Whether the mask of s is computed from its loop tokens and the class's exits alone (for the tests).
    bool has_exit_walk(const State& s);
    // Drops the cached masks (for the benchmark).
    void clear_mask_cache();
    // How many masks the cache holds now.
    size_t cached_masks();

    const TokenTrie& trie() const { return *trie_; }
    const Grammar& grammar() const { return *g_; }

  private:
    static constexpr uint32_t kEmptyStack = 0;
    static constexpr uint32_t kDead = UINT32_MAX;
    static constexpr uint32_t kUnknown = UINT32_MAX - 1;
    static constexpr int32_t kLoopUnknown = -2;
    static constexpr int32_t kNoLoop = -1;
    static constexpr uint32_t kUnbounded = 255;  // a loop's budget (LoopTokens counts characters up to 255)
    // A set whose every stack's character set holds all non-ASCII code points or none is uniform: every non-ASCII
    // character has the same successor, and every partial one the same fate.
    static constexpr int8_t kNonAsciiUnknown = -1, kNonAsciiMixed = 0, kNonAsciiNone = 1, kNonAsciiAll = 2;

    struct Node {
        uint32_t pos;     // element index (UINT32_MAX for the empty stack)
        uint32_t parent;  // node id
    };

    std::shared_ptr<const Grammar> g_;
    std::shared_ptr<const TokenTrie> trie_;
    std::mutex mu_;
    std::vector<Node> nodes_;
    std::unordered_map<uint64_t, uint32_t> node_ids_;
    std::vector<std::vector<uint32_t>> sets_;  // set id -> sorted stack ids
    std::vector<int8_t> non_ascii_;            // set id -> how its stacks take non-ASCII characters (kNonAscii*)
    std::unordered_map<uint64_t, std::vector<uint32_t>> set_ids_;  // hash -> candidate set ids
    std::unordered_map<uint64_t, uint32_t> cp_next_;               // (set, code point) -> next set
    std::unordered_map<uint32_t, std::vector<uint32_t>> after_;    // stack -> stacks once its top matched
    // set -> (which of its stacks match, as bits) -> next set, for sets of up to 64 stacks
    std::unordered_map<uint32_t, std::vector<std::pair<uint64_t, uint32_t>>> pattern_next_;
    // The byte automaton: automaton state id -> State, its successor per byte (kUnknown until computed), and the
    // loop tokens of the state (an index into loops_, kNoLoop, or kLoopUnknown until asked).
    std::vector<State> dfa_;
    std::unordered_map<uint64_t, uint32_t> dfa_ids_;
    std::vector<uint32_t> trans_;  // id * 256 + byte
    std::vector<int32_t> loop_of_;
    std::vector<uint32_t> loop_budget_;  // id -> characters its chain allows (kUnbounded: a loop)
    std::vector<std::shared_ptr<const LoopTokens>> loops_;
    std::unordered_map<uint64_t, std::vector<uint64_t>> chain_tokens_;  // (loop index, budget) -> tokens within
    std::vector<uint32_t> level_;                                       // the walk's automaton state per trie depth
    std::vector<uint32_t> chain_;  // exit walk: the automaton state after c class characters
    MaskCache masks_;
    State initial_;
    uint32_t dead_set_ = 0;

    uint32_t intern_node(uint32_t pos, uint32_t parent);
    uint32_t intern_set(std::vector<uint32_t>& stacks);
    void normalise(uint32_t pos, uint32_t parent, std::vector<uint32_t>& out, std::vector<uint64_t>& seen);
    const std::vector<uint32_t>& after_match(uint32_t stack);
    uint32_t next_set(uint32_t set, uint32_t cp);
    int8_t non_ascii(uint32_t set);
    bool any_match(uint32_t set, uint32_t lo, uint32_t hi);
    bool step(State& s, uint8_t byte, bool canonical = true);
    uint32_t dfa_id(const State& s);
    uint32_t next_dfa(uint32_t id, uint8_t byte);
    const LoopTokens* loop_tokens(uint32_t id, uint32_t& budget);
    bool can_end_locked(const State& s) const;
    const std::vector<uint64_t>& mask_locked(const State& s);
    void walk(const State& s, std::vector<uint64_t>& out, bool loop_fast_path);
    void walk_nodes(uint32_t begin, uint32_t end, const LoopTokens* loop, uint32_t budget, uint64_t* words);
    bool exit_chain(uint32_t root, const LoopTokens& loop, uint32_t budget);
};

// The Matcher for a grammar (by its cache key, e.g. the kind and text) and vocabulary, shared with every other
// user of the same pair while one lives. Thread-safe.
std::shared_ptr<Matcher> shared_matcher(const std::string& key, const std::shared_ptr<const Grammar>& grammar,
                                        const std::shared_ptr<const TokenTrie>& trie);

}  // namespace basalt::grammar
