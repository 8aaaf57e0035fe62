// The vocabulary's token texts as a byte trie laid out in preorder, so a walk can skip a whole subtree (every
// token sharing a rejected prefix) by jumping to its end. Built once per vocabulary and shared (cached by the
// host's fingerprint) by every grammar instance of every request, and kept for the next request of the last
// vocabulary asked for. Immutable after construction; thread-safe.
#pragma once

#include <basalt/plugin_sampler.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace basalt::grammar {

struct TokenTrie {
    // Node 0 is the root (the empty prefix); node i > 0 adds byte[i] to its parent's prefix at depth[i].
    std::vector<uint8_t> byte;
    std::vector<uint32_t> depth;
    std::vector<uint32_t> skip;       // the first node after node i's subtree
    std::vector<uint32_t> tok_begin;  // tokens whose text ends at node i: toks[tok_begin[i] .. tok_begin[i + 1])
    std::vector<int32_t> toks;
    std::vector<int32_t> eog;        // end-of-generation tokens (never in the trie)
    std::vector<std::string> texts;  // every token's bytes (empty for control and EOG tokens)
    std::vector<uint8_t> is_eog;     // per token
    size_t n_vocab = 0;
    uint32_t max_depth = 0;
    uint64_t fingerprint = 0;

    // Builds the trie of a vocabulary view (texts copied). Control tokens and empty texts never match text.
    static std::shared_ptr<const TokenTrie> build(const basalt_vocab_view& vocab);
    // The trie of this vocabulary, shared with every other user of the same fingerprint while one lives; the last
    // vocabulary asked for is kept even when none does (a server's model: its next grammar request does not build
    // the trie again).
    static std::shared_ptr<const TokenTrie> shared(const basalt_vocab_view& vocab);
};

}  // namespace basalt::grammar
