// Tokens that stay in a loop class (loop-tokens.hpp).
#include "loop-tokens.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <utility>

#include "utf8-step.hpp"

namespace basalt::grammar {

std::shared_ptr<const LoopTokens> LoopTokens::build(const TokenTrie& t, const LoopClass& k) {
    auto out = std::make_shared<LoopTokens>();
    const size_t n = t.byte.size();
    out->pure_nodes.assign((n + 63) / 64, 0);
    out->tokens.assign((t.n_vocab + 63) / 64, 0);
    out->token_chars.assign(t.n_vocab, 255);
    // ok[i]: the bytes from the root to node i all stay in the class (as the matcher's step decodes them);
    // chars[i]: how many characters they start (capped at 255).
    std::vector<uint8_t> ok(n, 0), chars(n, 0);
    std::vector<Utf8Partial> level(t.max_depth + 1);
    std::vector<uint8_t> level_chars(t.max_depth + 1, 0);
    for (size_t i = 1; i < n;) {
        const uint32_t d = t.depth[i];
        Utf8Partial u = level[d - 1];
        const Utf8Result r = utf8_step(u, t.byte[i]);
        const bool stays = r.kind == Utf8Step::Ascii ? k.has(t.byte[i]) : r.kind != Utf8Step::Reject && k.non_ascii;
        if (!stays) {
            i = t.skip[i];
            continue;
        }
        ok[i] = 1;
        level[d] = u;
        const bool starts_char = (t.byte[i] & 0xC0) != 0x80;
        chars[i] = static_cast<uint8_t>(std::min(255, level_chars[d - 1] + (starts_char ? 1 : 0)));
        level_chars[d] = chars[i];
        for (uint32_t j = t.tok_begin[i]; j < t.tok_begin[i + 1]; ++j) {
            const auto id = static_cast<uint32_t>(t.toks[j]);
            out->tokens[id >> 6] |= uint64_t{1} << (id & 63);
            out->token_chars[id] = chars[i];
        }
        ++i;
    }
    // A subtree is pure when no node in [i, skip[i]) failed: scan backwards keeping the nearest failed node. In the
    // same reverse preorder, acc[d + 1] holds the most characters among node i's children's subtrees (reset as
    // each node at depth d consumes it).
    out->max_chars.assign(n, 255);
    std::vector<uint8_t> acc(t.max_depth + 2, 0);
    size_t next_bad = n;
    for (size_t i = n; i-- > 1;) {
        if (ok[i] == 0) next_bad = i;
        if (next_bad >= t.skip[i]) out->pure_nodes[i >> 6] |= uint64_t{1} << (i & 63);
        const uint32_t d = t.depth[i];
        const uint8_t most = std::max(chars[i], acc[d + 1]);
        acc[d + 1] = 0;
        out->max_chars[i] = most;
        acc[d] = std::max(acc[d], most);
    }
    return out;
}

std::vector<uint64_t> LoopTokens::tokens_within(uint32_t budget) const {
    std::vector<uint64_t> out(tokens.size(), 0);
    for (size_t id = 0; id < token_chars.size(); ++id) {
        if (token_chars[id] <= budget) out[id >> 6] |= uint64_t{1} << (id & 63);
    }
    return out;
}

std::shared_ptr<const LoopTokens> LoopTokens::shared(const std::shared_ptr<const TokenTrie>& trie, const LoopClass& k) {
    struct Entry {
        std::weak_ptr<const TokenTrie> trie;
        std::weak_ptr<const LoopTokens> tokens;
    };
    static std::mutex mu;
    static std::map<std::pair<const TokenTrie*, LoopClass>, Entry> cache;
    const std::lock_guard<std::mutex> lock(mu);
    for (auto it = cache.begin(); it != cache.end();) {  // forget dead entries
        it = it->second.tokens.expired() || it->second.trie.expired() ? cache.erase(it) : std::next(it);
    }
    Entry& slot = cache[{trie.get(), k}];
    if (auto live = slot.tokens.lock(); live && slot.trie.lock() == trie) return live;
    auto built = build(*trie, k);
    slot = Entry{trie, built};
    return built;
}

}  // namespace basalt::grammar
