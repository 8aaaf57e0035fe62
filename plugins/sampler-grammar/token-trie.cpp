// The preorder token trie (token-trie.hpp).
#include "token-trie.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <numeric>
#include <string_view>

namespace basalt::grammar {

std::shared_ptr<const TokenTrie> TokenTrie::build(const basalt_vocab_view& vocab) {
    auto t = std::make_shared<TokenTrie>();
    t->n_vocab = vocab.n_tokens;
    t->fingerprint = vocab.fingerprint;
    t->texts.resize(vocab.n_tokens);
    t->is_eog.assign(vocab.n_tokens, 0);
    std::vector<int32_t> order;
    for (size_t i = 0; i < vocab.n_tokens; ++i) {
        const uint32_t flags = vocab.token_flags != nullptr ? vocab.token_flags[i] : 0;
        const auto id = static_cast<int32_t>(i);
        if ((flags & BASALT_VOCAB_TOKEN_EOG) != 0) {
            t->eog.push_back(id);
            t->is_eog[i] = 1;
            continue;
        }
        if ((flags & BASALT_VOCAB_TOKEN_CONTROL) != 0 || vocab.text_lens[i] == 0) continue;
        t->texts[i].assign(vocab.texts[i], vocab.text_lens[i]);
        order.push_back(id);
    }
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
        const std::string& x = t->texts[static_cast<size_t>(a)];
        const std::string& y = t->texts[static_cast<size_t>(b)];
        return x != y ? x < y : a < b;
    });
    // Sorted texts visit the trie in preorder: each text shares its longest common prefix with the previous one.
    t->byte.push_back(0);
    t->depth.push_back(0);
    t->skip.push_back(0);
    std::vector<uint32_t> path = {0};  // node at each depth of the current text
    std::vector<std::pair<uint32_t, int32_t>> attached;
    std::string_view prev;
    for (const int32_t id : order) {
        const std::string& s = t->texts[static_cast<size_t>(id)];
        size_t lcp = 0;
        while (lcp < s.size() && lcp < prev.size() && s[lcp] == prev[lcp]) ++lcp;
        while (path.size() > lcp + 1) {
            t->skip[path.back()] = static_cast<uint32_t>(t->byte.size());
            path.pop_back();
        }
        for (size_t d = lcp; d < s.size(); ++d) {
            const auto node = static_cast<uint32_t>(t->byte.size());
            t->byte.push_back(static_cast<uint8_t>(s[d]));
            t->depth.push_back(static_cast<uint32_t>(d + 1));
            t->skip.push_back(0);
            path.push_back(node);
        }
        t->max_depth = std::max<uint32_t>(t->max_depth, static_cast<uint32_t>(s.size()));
        attached.emplace_back(path.back(), id);
        prev = s;
    }
    while (!path.empty()) {
        t->skip[path.back()] = static_cast<uint32_t>(t->byte.size());
        path.pop_back();
    }
    const size_t n = t->byte.size();
    t->tok_begin.assign(n + 1, 0);
    for (const auto& [node, id] : attached) ++t->tok_begin[node + 1];
    std::partial_sum(t->tok_begin.begin(), t->tok_begin.end(), t->tok_begin.begin());
    t->toks.resize(attached.size());
    for (size_t i = 0; i < attached.size(); ++i) t->toks[i] = attached[i].second;  // already in node order
    return t;
}

std::shared_ptr<const TokenTrie> TokenTrie::shared(const basalt_vocab_view& vocab) {
    static std::mutex mu;
    static std::map<uint64_t, std::weak_ptr<const TokenTrie>> cache;
    static std::shared_ptr<const TokenTrie> recent;  // the last vocabulary's trie outlives its requests
    const std::lock_guard<std::mutex> lock(mu);
    auto& slot = cache[vocab.fingerprint];
    if (auto live = slot.lock(); live && live->n_vocab == vocab.n_tokens) {
        recent = live;
        return live;
    }
    auto t = build(vocab);
    slot = t;
    recent = t;
    return t;
}

}  // namespace basalt::grammar
