// Prefix caching across requests: a prompt attached to cached blocks gives the logits an uncached run gives, an
// edit reuses blocks only up to the first differing token, salts isolate, a small cache evicts least recently
// used blocks and still computes correctly, and the engine reports cached tokens per request and in its stats.
#include <basalt/basalt.h>

#include <cstring>
#include <string>
#include <vector>

#include "test-support.hpp"

using Catch::Matchers::Contains;

namespace {

struct Session {
    test::Runtime rt{BASALT_RUNTIME_NO_ENV_PLUGINS};
    basalt_model* model = nullptr;
    basalt_session* s = nullptr;
    size_t n_vocab = 0;
    explicit Session(uint32_t n_ctx, uint32_t n_seq = 2) {
        REQUIRE(basalt_model_load(rt.rt, test::golden_model("tiny-llama-f32.gguf").c_str(), nullptr, &model) ==
                BASALT_OK);
        basalt_session_params p{};
        p.struct_size = sizeof(p);
        p.n_ctx = n_ctx;
        p.n_seq_max = n_seq;
        p.n_threads = 2;
        REQUIRE(basalt_session_create(rt.rt, model, &p, &s) == BASALT_OK);
        n_vocab = basalt_session_n_vocab(s);
    }
    ~Session() {
        basalt_session_free(s);
        basalt_model_free(model);
    }
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    size_t attach(int32_t seq, const std::vector<int32_t>& toks) {
        size_t n = 0;
        REQUIRE(basalt_session_prefix_attach(s, seq, toks.data(), toks.size(), &n) == BASALT_OK);
        return n;
    }
    // Decodes toks[from..] continuing seq; returns the last row's logits.
    std::vector<float> finish(int32_t seq, const std::vector<int32_t>& toks, size_t from) {
        const std::vector<int32_t> rest(toks.begin() + static_cast<std::ptrdiff_t>(from), toks.end());
        const std::vector<float> rows = test::decode_rows(s, rest, static_cast<int32_t>(from), seq);
        return {rows.end() - static_cast<std::ptrdiff_t>(n_vocab), rows.end()};
    }
};

std::vector<int32_t> tokens(size_t n, int32_t seed) {
    std::vector<int32_t> t(n);
    for (size_t i = 0; i < n; ++i) t[i] = 1 + static_cast<int32_t>((i * 37 + static_cast<size_t>(seed) * 101) % 250);
    return t;
}

// The last logits of toks computed from scratch in a fresh session.
std::vector<float> uncached(const std::vector<int32_t>& toks) {
    Session fresh(256, 1);
    return fresh.finish(0, toks, 0);
}

}  // namespace

TEST_CASE("a prompt attached to cached blocks gives the logits an uncached run gives", "[prefix-cache]") {
    Session c(256);
    const std::vector<int32_t> prefix = tokens(53, 1);  // 3 full blocks of 16 and a partial one
    c.finish(0, prefix, 0);
    REQUIRE(basalt_session_seq_drop(c.s, 0) == BASALT_OK);  // its blocks stay cached

    std::vector<int32_t> prompt = prefix;
    for (int32_t t : tokens(9, 7)) prompt.push_back(t);
    const size_t hit = c.attach(1, prompt);
    CHECK(hit == 48);  // the full blocks; the partial one was never registered
    uint32_t len = 0;
    REQUIRE(basalt_session_seq_length(c.s, 1, &len) == BASALT_OK);
    CHECK(len == 48);
    const std::vector<float> got = c.finish(1, prompt, hit);
    const std::vector<float> want = uncached(prompt);
    REQUIRE(got.size() == want.size());
    CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);  // bit for bit

    // A sequence still running shares its full blocks too.
    const size_t shared = c.attach(0, prompt);
    CHECK(shared == 48);
    CHECK(c.finish(0, prompt, shared) == want);
}

TEST_CASE("an edited prompt reuses cached blocks up to the first differing token, no further", "[prefix-cache]") {
    Session c(512);
    const std::vector<int32_t> prompt = tokens(70, 2);
    c.finish(0, prompt, 0);
    REQUIRE(basalt_session_seq_drop(c.s, 0) == BASALT_OK);
    for (size_t at : {size_t{0}, size_t{15}, size_t{16}, size_t{37}, size_t{63}, size_t{64}}) {
        std::vector<int32_t> edited = prompt;
        edited[at] = edited[at] == 5 ? 6 : 5;
        CAPTURE(at);
        const size_t hit = c.attach(1, edited);
        CHECK(hit == at / 16 * 16);  // the blocks before the edit's block
        CHECK(c.finish(1, edited, hit) == uncached(edited));
        REQUIRE(basalt_session_seq_drop(c.s, 1) == BASALT_OK);
    }
    CHECK(c.attach(1, prompt) == 64);  // the original is still there
}

TEST_CASE("prefix-cache salts isolate sequences, forks keep the salt, drop clears it", "[prefix-cache]") {
    Session c(256, 3);
    const std::vector<int32_t> prompt = tokens(40, 3);
    REQUIRE(basalt_session_seq_set_salt(c.s, 0, 0xA11CE) == BASALT_OK);
    c.finish(0, prompt, 0);
    REQUIRE(basalt_session_seq_fork(c.s, 0, 2) == BASALT_OK);
    REQUIRE(basalt_session_seq_drop(c.s, 0) == BASALT_OK);
    CHECK(c.attach(1, prompt) == 0);  // no salt: sees nothing of tenant A
    REQUIRE(basalt_session_seq_drop(c.s, 1) == BASALT_OK);
    REQUIRE(basalt_session_seq_set_salt(c.s, 1, 0xB0B) == BASALT_OK);
    CHECK(c.attach(1, prompt) == 0);
    REQUIRE(basalt_session_seq_drop(c.s, 1) == BASALT_OK);  // clears the salt
    REQUIRE(basalt_session_seq_set_salt(c.s, 1, 0xA11CE) == BASALT_OK);
    CHECK(c.attach(1, prompt) == 32);
    // A salt can only be set on an empty sequence.
    CHECK(basalt_session_seq_set_salt(c.s, 1, 7) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(test::last_error(), Contains("not empty"));
}

TEST_CASE("a small cache evicts the least recently used blocks and still computes correctly", "[prefix-cache]") {
    Session c(64, 2);  // 4 blocks of 16
    const std::vector<int32_t> a = tokens(33, 4), b = tokens(48, 5);
    c.finish(0, a, 0);  // 3 blocks, 2 of them full
    REQUIRE(basalt_session_seq_drop(c.s, 0) == BASALT_OK);
    c.finish(0, b, 0);  // 3 blocks: the free one, then the cached ones are evicted tail first
    const std::vector<float> want_b = uncached(b);
    REQUIRE(basalt_session_seq_drop(c.s, 0) == BASALT_OK);
    const size_t hit_a = c.attach(1, a);
    CHECK(hit_a == 16);  // a's second block was the least recently used: b took it
    CHECK(c.finish(1, a, hit_a) == uncached(a));
    REQUIRE(basalt_session_seq_drop(c.s, 1) == BASALT_OK);
    const size_t hit_b = c.attach(0, b);
    CHECK(hit_b == 16);  // a's recompute took b's last two blocks (tail first)
    CHECK(c.finish(0, b, hit_b) == want_b);
}

namespace {

basalt_engine_params engine_params(uint32_t flags = 0) {
    basalt_engine_params p{};
    p.struct_size = sizeof(p);
    p.flags = flags;
    p.n_ctx = 256;
    p.n_parallel = 2;
    p.n_threads = 2;
    return p;
}

struct Result {
    std::vector<int32_t> tokens;
    uint64_t cached = 0;
};

Result run(basalt_engine* e, const std::vector<int32_t>& prompt, const char* salt = nullptr) {
    basalt_request_params p{};
    p.struct_size = sizeof(p);
    p.tokens = prompt.data();
    p.n_tokens = prompt.size();
    p.max_tokens = 12;
    p.seed = -1;
    p.cache_salt = salt;
    basalt_request* r = nullptr;
    REQUIRE(basalt_engine_submit(e, &p, &r) == BASALT_OK);
    REQUIRE(basalt_engine_run(e) == BASALT_OK);
    Result out;
    out.tokens = test::hypothesis_tokens(r);
    basalt_request_stats st{};
    st.struct_size = sizeof(st);
    REQUIRE(basalt_request_stats_get(r, &st) == BASALT_OK);
    out.cached = st.cached_tokens;
    basalt_request_free(r);
    return out;
}

}  // namespace

TEST_CASE("engine requests reuse cached prompt blocks, counted per request and engine-wide", "[prefix-cache]") {
    test::Runtime rt(BASALT_RUNTIME_NO_ENV_PLUGINS);
    test::Model model(test::golden_model("tiny-llama-f32.gguf"));
    std::vector<int32_t> prompt = tokens(100, 6);
    test::Engine off(rt.rt, model.m, engine_params(BASALT_ENGINE_NO_PREFIX_CACHE));
    const Result want = run(off.e, prompt);
    CHECK(run(off.e, prompt).cached == 0);

    test::Engine e(rt.rt, model.m, engine_params());
    const Result first = run(e.e, prompt);
    CHECK(first.cached == 0);
    CHECK(first.tokens == want.tokens);
    const Result again = run(e.e, prompt);
    CHECK(again.cached == 96);  // 6 full blocks; the last token is always computed
    CHECK(again.tokens == want.tokens);
    // A prompt that is a block-aligned prefix plus one token: everything but that token is reused.
    const std::vector<int32_t> aligned(prompt.begin(), prompt.begin() + 65);
    const Result a = run(e.e, aligned);
    CHECK(a.cached == 64);
    CHECK(a.tokens == run(off.e, aligned).tokens);
    // Another tenant's salt sees nothing; its own second request hits.
    CHECK(run(e.e, prompt, "tenant-b").cached == 0);
    CHECK(run(e.e, prompt, "tenant-b").cached == 96);
    CHECK(run(e.e, prompt, "tenant-c").cached == 0);

    basalt_engine_stats s{};
    s.struct_size = sizeof(s);
    REQUIRE(basalt_engine_stats_get(e.e, &s) == BASALT_OK);
    CHECK(s.cached_tokens == 96 + 64 + 96);
    CHECK(s.prompt_tokens == 100 + 4 + 1 + 100 + 4 + 100);
}

namespace {

// A session over tiny-llama256-q6_k (head dim 64) storing K/V in the given types (residual: kv-paged's window).
struct QuantSession {
    test::Runtime rt{BASALT_RUNTIME_NO_ENV_PLUGINS};
    basalt_model* model = nullptr;
    basalt_session* s = nullptr;
    size_t n_vocab = 0;
    QuantSession(const char* k, const char* v, const char* residual, uint32_t n_seq) {
        REQUIRE(basalt_model_load(rt.rt, test::golden_model("tiny-llama256-q6_k.gguf").c_str(), nullptr, &model) ==
                BASALT_OK);
        basalt_session_params p{};
        p.struct_size = sizeof(p);
        p.n_ctx = 256;
        p.n_seq_max = n_seq;
        p.n_threads = 2;
        const char* keys[] = {"k_type", "v_type", "residual"};
        const char* values[] = {k, v, residual};
        basalt_params kvp{};
        kvp.struct_size = sizeof(kvp);
        kvp.count = residual != nullptr ? 3 : 2;
        kvp.keys = keys;
        kvp.values = values;
        p.kv_params = &kvp;
        const basalt_status st = basalt_session_create(rt.rt, model, &p, &s);
        INFO(basalt_last_error());
        REQUIRE(st == BASALT_OK);
        n_vocab = basalt_session_n_vocab(s);
    }
    ~QuantSession() {
        basalt_session_free(s);
        basalt_model_free(model);
    }
    QuantSession(const QuantSession&) = delete;
    QuantSession& operator=(const QuantSession&) = delete;
    std::vector<float> finish(int32_t seq, const std::vector<int32_t>& toks, size_t from) {
        const std::vector<int32_t> rest(toks.begin() + static_cast<std::ptrdiff_t>(from), toks.end());
        const std::vector<float> rows = test::decode_rows(s, rest, static_cast<int32_t>(from), seq);
        return {rows.end() - static_cast<std::ptrdiff_t>(n_vocab), rows.end()};
    }
};

}  // namespace

TEST_CASE("prefix caching with quantized K/V: a hit gives the logits of an uncached run", "[prefix-cache][kv-quant]") {
    struct Types {
        const char* k;
        const char* v;
        const char* residual;
        size_t block;  // the block size kv-paged picks: 16 (a divisor of 256), or the residual window
    };
    for (const Types& t : {Types{"q8_0", "q8_0", nullptr, 16}, Types{"q4_0", "kivi_t2", nullptr, 16},
                           Types{"kivi_c2", "kivi_t2", "32", 32}, Types{"kivi_c4", "q8_0", "64", 64}}) {
        INFO("K " << t.k << " V " << t.v << " residual " << (t.residual != nullptr ? t.residual : "0"));
        QuantSession c(t.k, t.v, t.residual, 2);
        const std::vector<int32_t> prefix = tokens(141, 3);
        c.finish(0, prefix, 0);
        REQUIRE(basalt_session_seq_drop(c.s, 0) == BASALT_OK);
        std::vector<int32_t> prompt = prefix;
        for (int32_t x : tokens(21, 9)) prompt.push_back(x);
        size_t hit = 0;
        REQUIRE(basalt_session_prefix_attach(c.s, 1, prompt.data(), prompt.size(), &hit) == BASALT_OK);
        CHECK(hit == prefix.size() / t.block * t.block);
        const std::vector<float> got = c.finish(1, prompt, hit);
        QuantSession fresh(t.k, t.v, t.residual, 1);
        const std::vector<float> want = fresh.finish(0, prompt, 0);
        REQUIRE(got.size() == want.size());
        CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);  // bit for bit
        // A one-token edit inside the last cached block reuses only the blocks before it.
        std::vector<int32_t> edited = prompt;
        edited[t.block + 3] += 1;
        REQUIRE(basalt_session_seq_drop(c.s, 1) == BASALT_OK);
        REQUIRE(basalt_session_prefix_attach(c.s, 1, edited.data(), edited.size(), &hit) == BASALT_OK);
        CHECK(hit == t.block);
        const std::vector<float> got_edit = c.finish(1, edited, hit);
        QuantSession fresh_edit(t.k, t.v, t.residual, 1);
        CHECK(got_edit == fresh_edit.finish(0, edited, 0));
    }
}
