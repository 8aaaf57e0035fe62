// The grammar matcher's token masks against their definition: over seeded random walks through JSON Schema, GBNF
// and regex grammars, on the shipped target's vocabulary and a synthetic one rich in JSON punctuation and split
// UTF-8 characters, the mask the sampler sees (cached per state, LRU), the uncached walk with and without the loop
// fast path (precomputed loop tokens) all equal the reference (each token's text run through the byte matcher),
// both when a state is first met and when it is met again; the exit walk (loop tokens plus the class's exits) is
// taken in loop and bounded-string states. The LRU mask cache's eviction order. Applying a mask with word operations
// (candidates in id order) equals applying it candidate by candidate. The grammar sampler outside an engine through
// basalt_sampler_set_vocab.
#include <basalt/basalt.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "grammar-source.hpp"
#include "mask-apply.hpp"
#include "mask-cache.hpp"
#include "matcher.hpp"
#include "test-support.hpp"
#include "token-trie.hpp"

namespace g = basalt::grammar;

namespace {

struct Vocab {
    std::vector<std::string> texts;
    std::vector<const char*> ptrs;
    std::vector<size_t> lens;
    std::vector<uint32_t> flags;
    basalt_vocab_view view{};

    void finish(uint64_t fingerprint) {
        for (const auto& t : texts) {
            ptrs.push_back(t.data());
            lens.push_back(t.size());
        }
        view.struct_size = sizeof(view);
        view.n_tokens = texts.size();
        view.texts = ptrs.data();
        view.text_lens = lens.data();
        view.token_flags = flags.data();
        view.fingerprint = fingerprint;
    }
};

void shipped_vocab(Vocab& v) {
    basalt_model* m = nullptr;
    REQUIRE(basalt_model_load(nullptr, test::shipped("target").c_str(), nullptr, &m) == BASALT_OK);
    basalt_special_tokens sp{};
    sp.struct_size = sizeof(sp);
    REQUIRE(basalt_model_special_tokens(m, &sp) == BASALT_OK);
    basalt_model_info info{};
    info.struct_size = sizeof(info);
    REQUIRE(basalt_model_describe(m, &info) == BASALT_OK);
    for (int32_t i = 0; i < static_cast<int32_t>(info.n_vocab); ++i) {
        char buf[256];
        size_t len = 0;
        REQUIRE(basalt_token_to_piece(m, i, 0, buf, sizeof(buf), &len) == BASALT_OK);
        v.texts.emplace_back(buf, len);
        v.flags.push_back(i == sp.eos ? BASALT_VOCAB_TOKEN_EOG : 0);
    }
    basalt_model_free(m);
    v.finish(0x5eed0001);
}

// Every byte, then pieces of JSON punctuation, letters, digits, escapes, whole and split multi-byte characters.
void synthetic_vocab(size_t n, Vocab& v) {
    std::mt19937_64 rng(3);
    const std::vector<std::string> parts = {"a",
                                            "b",
                                            "e",
                                            "n",
                                            "r",
                                            "t",
                                            "u",
                                            " ",
                                            "\"",
                                            "\\",
                                            ":",
                                            ",",
                                            "{",
                                            "}",
                                            "[",
                                            "]",
                                            "0",
                                            "1",
                                            "9",
                                            "-",
                                            ".",
                                            "\n",
                                            "E",
                                            "T",
                                            "Z",
                                            "f",
                                            "\xc3",
                                            "\xa9",
                                            "\xc3\xa9",
                                            "\xe4\xb8",
                                            "\xad",
                                            "\xe4\xb8\xad",
                                            "\xf0\x9f\x98\x80",
                                            "\xed\xa0\x80",
                                            "\xc0\xaf",
                                            "true",
                                            "null",
                                            "false"};
    v.texts.push_back("");
    v.flags.push_back(BASALT_VOCAB_TOKEN_EOG);
    for (int b = 0; b < 256; ++b) {
        v.texts.emplace_back(1, static_cast<char>(b));
        v.flags.push_back(0);
    }
    while (v.texts.size() < n) {
        std::string s;
        const size_t len = 1 + rng() % 6;
        for (size_t i = 0; i < len; ++i) s += parts[rng() % parts.size()];
        v.texts.push_back(s);
        v.flags.push_back(0);
    }
    v.finish(0x5eed0002);
}

struct PathCounts {
    int loops = 0;  // states with loop tokens
    int exits = 0;  // states whose mask is the loop tokens and the exits' subtrees
};

// Walks `steps` random tokens through the grammar (restarting when it is complete), checking every mask; counts
// the states that took the fast paths.
PathCounts check_masks(const Vocab& v, const std::string& kind, const std::string& text, int steps, uint64_t seed) {
    INFO(kind << ": " << text);
    auto grammar = std::make_shared<const g::Grammar>(g::compile_source(kind, text));
    g::Matcher m(grammar, g::TokenTrie::build(v.view));
    std::mt19937_64 rng(seed);
    std::vector<g::State> seen;
    std::vector<uint64_t> ref, fast, plain, cached;
    PathCounts counts;
    g::State s = m.initial();
    for (int i = 0; i < steps; ++i) {
        INFO("step " << i);
        const size_t n_ref = m.reference_mask(s, ref);
        m.with_mask(s, [&](const std::vector<uint64_t>& w) { cached = w; });
        CHECK(m.compute_mask_uncached(s, fast, true) == n_ref);
        CHECK(m.compute_mask_uncached(s, plain, false) == n_ref);
        REQUIRE(cached == ref);
        REQUIRE(fast == ref);
        REQUIRE(plain == ref);
        counts.loops += m.has_loop_tokens(s) ? 1 : 0;
        counts.exits += m.has_exit_walk(s) ? 1 : 0;
        seen.push_back(s);
        std::vector<int32_t> text_tokens;
        for (size_t w = 0; w < ref.size(); ++w) {
            for (uint64_t bits = ref[w]; bits != 0; bits &= bits - 1) {
                const auto id = static_cast<int32_t>(w * 64 + static_cast<size_t>(__builtin_ctzll(bits)));
                if (v.flags[static_cast<size_t>(id)] == 0) text_tokens.push_back(id);
            }
        }
        if (text_tokens.empty()) {
            s = m.initial();
            continue;
        }
        g::State next;
        REQUIRE(m.accept_token(s, text_tokens[rng() % text_tokens.size()], next));
        s = next;
    }
    // States met again: the cached masks still equal the reference.
    for (size_t i = 0; i < seen.size(); i += 3) {
        m.reference_mask(seen[i], ref);
        m.with_mask(seen[i], [&](const std::vector<uint64_t>& w) { cached = w; });
        REQUIRE(cached == ref);
    }
    return counts;
}

const char* const kSchemas[] = {
    R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},"required":["name","age"]})",
    R"({"type":"object","properties":{"items":{"type":"array","items":{"type":"object","properties":{"id":{"type":"integer","minimum":0,"maximum":999},"tags":{"type":"array","items":{"type":"string","maxLength":4},"maxItems":3}},"required":["id","tags"]}}},"required":["items"]})",
    R"({"type":"object","properties":{"kind":{"enum":["alpha","beta"]},"when":{"type":"string","format":"date-time"},"uid":{"type":"string","format":"uuid"}},"required":["kind","when","uid"]})",
    R"({})",
    R"({"type":"array","items":{"type":"string","minLength":2,"maxLength":12},"maxItems":3})",
    R"({"type":"object","properties":{"a":{"type":"array","items":{"type":"string","maxLength":3},"maxItems":2},"b":{"type":"string","pattern":"^[a-z]{2}[a-m]*$"}},"required":["a","b"]})",
};

}  // namespace

TEST_CASE("grammar masks (cached, loop fast path, plain walk) equal the reference mask", "[grammar][mask]") {
    Vocab shipped, synthetic;
    shipped_vocab(shipped);
    synthetic_vocab(6000, synthetic);
    for (const Vocab* v : {&shipped, &synthetic}) {
        uint64_t seed = 1;
        PathCounts all;
        auto add = [&](const PathCounts& c) {
            all.loops += c.loops;
            all.exits += c.exits;
        };
        for (const char* schema : kSchemas) add(check_masks(*v, "json_schema", schema, 120, seed++));
        add(check_masks(*v, "json", "", 120, seed++));
        add(check_masks(*v, "gbnf", "root ::= \"<\" [^<>\"]* \">\" ([^\\n]{0,3} \"!\")?\n", 60, seed++));
        add(check_masks(*v, "regex", "[a-z\\u00e9\\u4e2d]+(, [^,]{1,5})*\\.", 60, seed++));
        // A chain whose last state still takes class characters (the exits do not decide it: the walk instead).
        add(check_masks(*v, "regex", "[ -~]{3}[a-z]*;", 60, seed++));
        CHECK(all.loops > 50);  // the fast paths were taken (inside strings, the regex's repetition)
        CHECK(all.exits > 30);
        CHECK(all.exits < all.loops);
    }
}

TEST_CASE("a mask applied with word operations equals the mask applied candidate by candidate", "[grammar][mask]") {
    const size_t n_vocab = 1000;
    std::mt19937_64 rng(5);
    std::vector<uint64_t> words((n_vocab + 63) / 64);
    for (uint64_t& w : words) w = rng() & rng();  // about a quarter allowed
    words[3] = ~uint64_t{0};
    words[4] = 0;
    auto allowed = [&](int32_t id) {
        return id >= 0 && static_cast<size_t>(id) < n_vocab &&
               ((words[static_cast<size_t>(id) >> 6] >> (id & 63)) & 1u) != 0;
    };
    for (int layout = 0; layout < 4; ++layout) {
        INFO("layout " << layout);
        std::vector<basalt_token_data> d;
        for (int32_t i = 0; i < static_cast<int32_t>(n_vocab); ++i) d.push_back({i, static_cast<float>(i % 7), 0.5f});
        if (layout == 1) std::shuffle(d.begin(), d.end(), rng);       // no block in order
        if (layout == 2) std::swap(d[130], d[131]);                   // one block out of order
        if (layout == 3) d.erase(d.begin(), d.begin() + 10);          // shifted: blocks not aligned
        d[200].logit = -INFINITY;                                     // already masked
        d.push_back({static_cast<int32_t>(n_vocab) + 5, 1.f, 0.5f});  // outside the vocabulary
        d.push_back({-3, 1.f, 0.5f});
        std::vector<basalt_token_data> before = d;
        test::Cands c(d);
        const bool changed = g::apply_mask(words, n_vocab, c.c);
        CHECK(changed);
        for (size_t i = 0; i < before.size(); ++i) {
            INFO("candidate " << i << " id " << before[i].id);
            REQUIRE(c.data[i].id == before[i].id);
            if (allowed(before[i].id)) {
                CHECK(c.data[i].logit == before[i].logit);
                CHECK(c.data[i].p == before[i].p);
            } else {
                CHECK((std::isinf(c.data[i].logit) && c.data[i].logit < 0));
                CHECK((c.data[i].p == 0.f || std::isinf(before[i].logit)));
            }
        }
    }
    std::vector<basalt_token_data> none = {{64 * 3, 1.f, 0.f}};  // an allowed one: nothing changes
    test::Cands c(none);
    CHECK_FALSE(g::apply_mask(words, n_vocab, c.c));
}

TEST_CASE("the grammar sampler runs outside an engine with basalt_sampler_set_vocab", "[grammar][api]") {
    test::Runtime rt;
    REQUIRE(rt.load(std::string(BASALT_TEST_PLUGIN_DIR) + "/basalt-sampler-grammar.so") == BASALT_OK);
    basalt_model* m = nullptr;
    REQUIRE(basalt_model_load(nullptr, test::shipped("target").c_str(), nullptr, &m) == BASALT_OK);
    const char* keys[] = {"kind", "text"};
    const char* values[] = {"regex", "ab+"};
    basalt_params p{};
    p.struct_size = sizeof(p);
    p.count = 2;
    p.keys = keys;
    p.values = values;
    basalt_sampler* s = nullptr;
    REQUIRE(basalt_sampler_create(rt.rt, "grammar", &p, &s) == BASALT_OK);
    CHECK(basalt_sampler_set_vocab(nullptr, m) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK(basalt_sampler_set_vocab(s, nullptr) == BASALT_ERR_INVALID_ARGUMENT);
    REQUIRE(basalt_sampler_set_vocab(s, m) == BASALT_OK);
    basalt_model_info info{};
    info.struct_size = sizeof(info);
    REQUIRE(basalt_model_describe(m, &info) == BASALT_OK);
    std::vector<basalt_token_data> d;
    for (int32_t i = 0; i < static_cast<int32_t>(info.n_vocab); ++i) d.push_back({i, 0.f, 0.f});
    test::Cands c(d);
    REQUIRE(basalt_sampler_apply(s, &c.c) == BASALT_OK);
    size_t n_allowed = 0;
    for (const basalt_token_data& x : c.data) {
        if (std::isinf(x.logit)) continue;
        ++n_allowed;
        char buf[256];
        size_t len = 0;
        REQUIRE(basalt_token_to_piece(m, x.id, 0, buf, sizeof(buf), &len) == BASALT_OK);
        const std::string piece(buf, len);
        INFO("allowed piece '" << piece << "'");
        CHECK((piece.rfind('a', 0) == 0 && piece.find_first_not_of('b', 1) == std::string::npos));
    }
    CHECK(n_allowed > 0);
    basalt_sampler_destroy(s);
    basalt_model_free(m);
}

TEST_CASE("the mask cache evicts the least recently used masks past its budget", "[grammar][mask]") {
    g::MaskCache c(3 * 2 * sizeof(uint64_t));  // three masks of two words
    c.put(1, {1, 1});
    c.put(2, {2, 2});
    c.put(3, {3, 3});
    REQUIRE(c.find(1) != nullptr);  // 1 is now the most recently used
    c.put(4, {4, 4});               // evicts 2
    CHECK(c.find(2) == nullptr);
    REQUIRE(c.find(1) != nullptr);
    CHECK((*c.find(1))[0] == 1);
    CHECK(c.find(3) != nullptr);
    CHECK(c.find(4) != nullptr);
    CHECK(c.size() == 3);
    c.put(5, {5, 5});  // evicts 1 (3 and 4 were used after it)
    CHECK(c.find(1) == nullptr);
    c.clear();
    CHECK(c.size() == 0);
    CHECK(c.find(5) == nullptr);
}
