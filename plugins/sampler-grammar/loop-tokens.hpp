// The tokens that keep a grammar in a "loop" state: inside a JSON string, for example, every character but `"`,
// `\` and control characters leads back to the same parse position, so every token made only of such characters is
// allowed there whatever the grammar around the string is. A bounded repetition (a string with maxLength) is a chain
// of states instead, each leading to the next on the same characters: there a token made only of them is allowed
// when it has no more characters than the chain has steps left. A LoopClass names the bytes that loop (ASCII bytes one
// by one, non-ASCII characters all or none); LoopTokens precomputes, once per vocabulary and class, which tokens
// stay inside it and which trie subtrees do entirely, so a mask walk from a loop state sets those tokens with word
// operations and walks only the rest. Immutable once built; shared (cached per trie and class) and thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "token-trie.hpp"

namespace basalt::grammar {

// Bytes that keep a loop state: ascii[b / 64] bit b % 64 for ASCII byte b, and whether every valid non-ASCII
// character does (as complete characters; a token may end inside one).
struct LoopClass {
    std::array<uint64_t, 2> ascii{};
    bool non_ascii = false;

    bool has(uint8_t b) const { return b < 0x80 && ((ascii[b >> 6] >> (b & 63)) & 1u) != 0; }
    bool empty() const { return ascii[0] == 0 && ascii[1] == 0 && !non_ascii; }
    bool operator<(const LoopClass& o) const { return ascii != o.ascii ? ascii < o.ascii : non_ascii < o.non_ascii; }
};

// The exits (trie nodes) after `chars` class characters (255: 255 or more) through byte `byte`:
// LoopTokens::exit_nodes[begin .. end), in preorder.
struct ExitGroup {
    uint8_t chars = 0;
    uint8_t byte = 0;
    uint32_t begin = 0, end = 0;
};

struct LoopTokens {
    LoopClass cls;                     // the class the tokens stay in
    std::vector<uint64_t> pure_nodes;  // bit i: every node of trie node i's subtree (i included) stays in the class
    std::vector<uint64_t> tokens;      // bit t: token t's whole text stays in the class (one bit per vocabulary id)
    std::vector<uint8_t> max_chars;    // pure node i: the most characters (from the root) of a token under it
    std::vector<uint8_t> token_chars;  // token t in the class: its characters (a split one counts); 255 otherwise
    // Exits: the nodes where a run of class characters from the root (the empty run included) meets a byte outside
    // the class at a character boundary (bytes UTF-8 refuses there are left out: no state takes them), grouped and
    // sorted by (characters before, byte).
    std::vector<uint32_t> exit_nodes;
    std::vector<ExitGroup> exit_groups;

    bool pure(uint32_t node) const { return ((pure_nodes[node >> 6] >> (node & 63)) & 1u) != 0; }
    // The bitset of the tokens in the class with at most `budget` characters.
    std::vector<uint64_t> tokens_within(uint32_t budget) const;

    // Computes the tokens of `trie` that stay in `k` (one walk of the trie).
    static std::shared_ptr<const LoopTokens> build(const TokenTrie& trie, const LoopClass& k);
    // The same, shared with every other user of this trie and class, and kept while the trie lives (a bounded
    // number of classes). Thread-safe.
    static std::shared_ptr<const LoopTokens> shared(const std::shared_ptr<const TokenTrie>& trie, const LoopClass& k);
};

}  // namespace basalt::grammar
