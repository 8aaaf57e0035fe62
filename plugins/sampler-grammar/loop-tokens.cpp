// Tokens that stay in a loop class (loop-tokens.hpp).
#include "loop-tokens.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <utility>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "utf8-step.hpp"

namespace basalt::grammar {

std::shared_ptr<const LoopTokens> LoopTokens::build(const TokenTrie& t, const LoopClass& k) {
    auto out = std::make_shared<LoopTokens>();
    out->cls = k;
    const size_t n = t.byte.size();
    out->pure_nodes.assign((n + 63) / 64, 0);
    out->tokens.assign((t.n_vocab + 63) / 64, 0);
    out->token_chars.assign(t.n_vocab, 255);
    // ok[i]: the bytes from the root to node i all stay in the class (as the matcher's step decodes them);
    // chars[i]: how many characters they start (capped at 255).
    std::vector<uint8_t> ok(n, 0), chars(n, 0);
    std::vector<Utf8Partial> level(t.max_depth + 1);
    std::vector<uint8_t> level_chars(t.max_depth + 1, 0);
    struct Exit {
        uint8_t chars, byte;
        uint32_t node;
    };
    std::vector<Exit> exits;
    for (size_t i = 1; i < n;) {
        const uint32_t d = t.depth[i];
        Utf8Partial u = level[d - 1];
        const bool boundary = u.remaining == 0;
        const Utf8Result r = utf8_step(u, t.byte[i]);
        const bool stays = r.kind == Utf8Step::Ascii ? k.has(t.byte[i]) : r.kind != Utf8Step::Reject && k.non_ascii;
        if (!stays) {
            // Reached only through class characters (a subtree that left the class is skipped whole).
            if (boundary && r.kind != Utf8Step::Reject)
                exits.push_back(Exit{level_chars[d - 1], t.byte[i], static_cast<uint32_t>(i)});
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
    std::stable_sort(exits.begin(), exits.end(), [](const Exit& a, const Exit& b) {
        return a.chars != b.chars ? a.chars < b.chars : a.byte < b.byte;
    });
    out->exit_nodes.reserve(exits.size());
    for (const Exit& e : exits) {
        const auto at = static_cast<uint32_t>(out->exit_nodes.size());
        if (out->exit_groups.empty() || out->exit_groups.back().chars != e.chars ||
            out->exit_groups.back().byte != e.byte)
            out->exit_groups.push_back(ExitGroup{e.chars, e.byte, at, at});
        out->exit_nodes.push_back(e.node);
        out->exit_groups.back().end = at + 1;
    }
    return out;
}

std::vector<uint64_t> LoopTokens::tokens_within(uint32_t budget) const {
    std::vector<uint64_t> out(tokens.size(), 0);
    const size_t n = token_chars.size();
    const uint8_t* c = token_chars.data();
    const auto b = static_cast<uint8_t>(std::min<uint32_t>(budget, 255));
    size_t id = 0;
#if defined(__SSE2__)
    // 16 tokens per compare: c <= b exactly where min(c, b) == c (unsigned bytes).
    const __m128i vb = _mm_set1_epi8(static_cast<char>(b));
    for (; id + 64 <= n; id += 64) {
        uint64_t bits = 0;
        for (size_t q = 0; q < 64; q += 16) {
            const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(c + id + q));
            const auto m = static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(v, vb), v)));
            bits |= uint64_t{m & 0xFFFFu} << q;
        }
        out[id >> 6] = bits;
    }
#endif
    for (; id < n; ++id) {
        if (c[id] <= b) out[id >> 6] |= uint64_t{1} << (id & 63);
    }
    return out;
}

std::shared_ptr<const LoopTokens> LoopTokens::shared(const std::shared_ptr<const TokenTrie>& trie, const LoopClass& k) {
    // Kept while the trie lives (the trie outlives requests: token-trie.hpp), so each class's pass over the trie is
    // made once per vocabulary, not once per grammar or request; at most kKept entries (the oldest goes first).
    constexpr size_t kKept = 32;
    struct Entry {
        std::weak_ptr<const TokenTrie> trie;
        std::shared_ptr<const LoopTokens> tokens;
        uint64_t made = 0;
    };
    static std::mutex mu;
    static std::map<std::pair<const TokenTrie*, LoopClass>, Entry> cache;
    static uint64_t made = 0;
    const std::lock_guard<std::mutex> lock(mu);
    for (auto it = cache.begin(); it != cache.end();) {  // forget the classes of dead tries
        it = it->second.trie.expired() ? cache.erase(it) : std::next(it);
    }
    auto found = cache.find({trie.get(), k});
    if (found != cache.end() && found->second.trie.lock() == trie) return found->second.tokens;
    while (cache.size() >= kKept) {
        auto oldest = cache.begin();
        for (auto it = cache.begin(); it != cache.end(); ++it) {
            if (it->second.made < oldest->second.made) oldest = it;
        }
        cache.erase(oldest);
    }
    auto built = build(*trie, k);
    cache[{trie.get(), k}] = Entry{trie, built, ++made};
    return built;
}

}  // namespace basalt::grammar
