// The streaming KV cache with attention sinks (kv_cache 'sink'): a sequence runs past the context with memory that
// does not grow, the engine does not finish a sink-cache request at the context, bad specs are refused naming the
// problem, and models the policy cannot serve are refused. Logits against a float64 reference: tests/kv-sink.
#include <basalt/basalt.h>

#include <string>
#include <vector>

#include "test-support.hpp"

using Catch::Matchers::Contains;

namespace {

basalt_status make_session(basalt_runtime* rt, const basalt_model* m, uint32_t n_ctx, const char* kv,
                           basalt_session** out, uint32_t n_seq = 1) {
    basalt_session_params p{};
    p.struct_size = sizeof(p);
    p.n_ctx = n_ctx;
    p.n_seq_max = n_seq;
    p.n_threads = 2;
    p.kv_cache = kv;
    return basalt_session_create(rt, m, &p, out);
}

basalt_memory_plan memory(const basalt_session* s) {
    basalt_memory_plan m{};
    m.struct_size = sizeof(m);
    REQUIRE(basalt_session_memory(s, &m) == BASALT_OK);
    return m;
}

std::vector<int32_t> tokens(size_t n) {
    std::vector<int32_t> t(n);
    for (size_t i = 0; i < n; ++i) t[i] = 1 + static_cast<int32_t>((i * 37 + 11) % 250);
    return t;
}

}  // namespace

TEST_CASE("a sink cache runs a sequence to three times the context with memory that does not grow", "[kv-sink]") {
    test::Runtime rt{BASALT_RUNTIME_NO_ENV_PLUGINS};
    test::Model model(test::golden_model("tiny-llama-f32.gguf"));
    basalt_session* s = nullptr;
    REQUIRE(make_session(rt.rt, model.m, 64, "sink:n_sink=4,window=28", &s) == BASALT_OK);
    const basalt_memory_plan before = memory(s);
    CHECK(before.n_ctx == 64);
    const std::vector<int32_t> toks = tokens(3 * 64 + 5);
    // Pieces of 20 tokens (the ring of 60 rows takes up to 33 per step), then one by one.
    // The memory after the first piece (the IO buffer exists from then on) is the memory of every later step.
    size_t at = 0;
    basalt_memory_plan first{};
    for (; at < 120; at += 20) {
        const std::vector<int32_t> piece(toks.begin() + static_cast<std::ptrdiff_t>(at),
                                         toks.begin() + static_cast<std::ptrdiff_t>(at + 20));
        test::decode_rows(s, piece, static_cast<int32_t>(at), 0);
        const basalt_memory_plan m = memory(s);
        if (at == 0) first = m;
        CHECK(m.kv_bytes == before.kv_bytes);
        CHECK(m.total_bytes == first.total_bytes);
    }
    for (; at < toks.size(); ++at) {
        test::decode_rows(s, {toks[at]}, static_cast<int32_t>(at), 0);
        CHECK(memory(s).total_bytes <= first.total_bytes);
    }
    uint32_t len = 0;
    REQUIRE(basalt_session_seq_length(s, 0, &len) == BASALT_OK);
    CHECK(len == toks.size());
    CHECK(memory(s).kv_bytes == before.kv_bytes);
    // A whole batch past the context in one call: split by the session into ring-sized steps.
    REQUIRE(basalt_session_seq_drop(s, 0) == BASALT_OK);
    const std::vector<float> rows = test::decode_rows(s, toks, 0, 0);
    CHECK(rows.size() == toks.size() * basalt_session_n_vocab(s));
    basalt_session_free(s);

    // The plain cache refuses the same sequence at the context.
    REQUIRE(make_session(rt.rt, model.m, 64, "paged", &s) == BASALT_OK);
    std::vector<int32_t> pos(65), seq(65, 0);
    for (size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<int32_t>(i);
    basalt_batch b{};
    b.struct_size = sizeof(b);
    b.n_tokens = 65;
    b.tokens = toks.data();
    b.positions = pos.data();
    b.seq_ids = seq.data();
    CHECK(basalt_session_decode(s, &b) == BASALT_ERR_CAPACITY);
    basalt_session_free(s);
}

TEST_CASE("sink cache specs: bad ones are refused naming the problem", "[kv-sink]") {
    test::Runtime rt{BASALT_RUNTIME_NO_ENV_PLUGINS};
    test::Model model(test::golden_model("tiny-llama-f32.gguf"));
    struct Case {
        const char* spec;
        const char* message;
    };
    const Case cases[] = {
        {"sink:n_sink=4,window=61", "n_sink 4 + window 61 = 65 exceeds the 64 cache rows"},
        {"sink:n_sink=4,windw=8", "unknown parameter 'windw'"},
        {"sink:n_sink=-1", "parameter 'n_sink' = '-1'"},
        {"sink:window=0", "parameter 'window' = '0'"},
        {"sink:window=ten", "parameter 'window' = 'ten' is not an integer"},
        {"sink:4", "bad KV cache spec 'sink:4': the value '4' has no key: write key=value"},  // issue 28
        {"sink:n_sink=4;paged", "names 2 managers"},
        {"sink:k_type=q3", "parameter 'k_type' = 'q3'"},
        {"nosuch:n_sink=4", "no KV cache manager named 'nosuch'"},
    };
    for (const Case& c : cases) {
        INFO(c.spec);
        basalt_session* s = nullptr;
        CHECK(make_session(rt.rt, model.m, 64, c.spec, &s) != BASALT_OK);
        CHECK(s == nullptr);
        CHECK_THAT(test::last_error(), Contains(c.message));
    }
    // Two sequences share the slots: each has 32 rows.
    basalt_session* s = nullptr;
    CHECK(make_session(rt.rt, model.m, 64, "sink:n_sink=4,window=30", &s, 2) != BASALT_OK);
    CHECK_THAT(test::last_error(), Contains("exceeds the 32 cache rows of a sequence"));
    REQUIRE(make_session(rt.rt, model.m, 64, "sink:n_sink=4,window=28", &s, 2) == BASALT_OK);
    basalt_session_free(s);
}

TEST_CASE("a sink cache is refused on models without rotary positions or with their own windows", "[kv-sink]") {
    test::Runtime rt{BASALT_RUNTIME_NO_ENV_PLUGINS};
    {
        test::Model model(test::golden_model("tiny-gpt2-f32.gguf"));
        basalt_session* s = nullptr;
        CHECK(make_session(rt.rt, model.m, 32, "sink", &s) != BASALT_OK);
        CHECK_THAT(test::last_error(), Contains("needs rotary positions, but gpt2 has none"));
    }
    {
        test::Model model(test::golden_model("tiny-gemma3-f32.gguf"));
        basalt_session* s = nullptr;
        CHECK(make_session(rt.rt, model.m, 32, "sink", &s) != BASALT_OK);
        CHECK_THAT(test::last_error(), Contains("sliding window"));
    }
}

TEST_CASE("the engine runs a sink-cache request past the context and finishes it by length", "[kv-sink]") {
    test::Runtime rt{BASALT_RUNTIME_NO_ENV_PLUGINS};
    test::Model model(test::golden_model("tiny-llama-f32.gguf"));
    basalt_engine_params ep{};
    ep.n_parallel = 2;
    ep.n_ctx = 32;
    ep.kv_cache = "sink:n_sink=4,window=24";
    test::Engine e(rt.rt, model.m, ep);
    std::vector<test::Request> r(2);
    for (int i = 0; i < 2; ++i) {
        basalt_request_params p{};
        p.struct_size = sizeof(p);
        p.prompt = i == 0 ? "Once upon a time" : "The quick brown fox";
        p.prompt_len = SIZE_MAX;
        p.samplers = "greedy";
        p.max_tokens = 3 * 32;
        p.seed = -1;
        p.flags = BASALT_REQUEST_IGNORE_EOG;
        REQUIRE(basalt_engine_submit(e.e, &p, &r[static_cast<size_t>(i)].r) == BASALT_OK);
    }
    REQUIRE(basalt_engine_run(e.e) == BASALT_OK);
    for (auto& q : r) {
        CHECK(basalt_request_finish_reason(q.r) == BASALT_FINISH_LENGTH);
        basalt_request_stats st{};
        st.struct_size = sizeof(st);
        REQUIRE(basalt_request_stats_get(q.r, &st) == BASALT_OK);
        CHECK(st.generated_tokens == 3 * 32);
    }
    // A prompt longer than the context is accepted too (it streams through).
    basalt_request_params p{};
    p.struct_size = sizeof(p);
    const std::vector<int32_t> long_prompt = tokens(50);
    p.tokens = long_prompt.data();
    p.n_tokens = long_prompt.size();
    p.samplers = "greedy";
    p.max_tokens = 4;
    p.seed = -1;
    p.flags = BASALT_REQUEST_IGNORE_EOG;
    test::Request q;
    REQUIRE(basalt_engine_submit(e.e, &p, &q.r) == BASALT_OK);
    REQUIRE(basalt_engine_run(e.e) == BASALT_OK);
    CHECK(basalt_request_finish_reason(q.r) == BASALT_FINISH_LENGTH);
}

TEST_CASE("a forked sink-cache sequence continues exactly as its source, past the context", "[kv-sink]") {
    test::Runtime rt{BASALT_RUNTIME_NO_ENV_PLUGINS};
    test::Model model(test::golden_model("tiny-llama-f32.gguf"));
    basalt_session* s = nullptr;
    // Two sequences of 32 rows each: 2 sinks + a window of 20 (batches of up to 11 tokens).
    REQUIRE(make_session(rt.rt, model.m, 64, "sink:n_sink=2,window=20", &s, 2) == BASALT_OK);
    const std::vector<int32_t> toks = tokens(90);
    for (size_t at = 0; at < 80; at += 10) {
        test::decode_rows(s,
                          std::vector<int32_t>(toks.begin() + static_cast<std::ptrdiff_t>(at),
                                               toks.begin() + static_cast<std::ptrdiff_t>(at + 10)),
                          static_cast<int32_t>(at), 0);
    }
    REQUIRE(basalt_session_seq_fork(s, 0, 1) == BASALT_OK);
    // Both sequences take the same 10 tokens in one batch: sequence 1 reads the region copied from sequence 0.
    std::vector<int32_t> both, pos, seq;
    std::vector<int8_t> want;
    for (int32_t q = 0; q < 2; ++q) {
        for (size_t i = 80; i < 90; ++i) {
            both.push_back(toks[i]);
            pos.push_back(static_cast<int32_t>(i));
            seq.push_back(q);
            want.push_back(1);
        }
    }
    basalt_batch b{};
    b.struct_size = sizeof(b);
    b.n_tokens = both.size();
    b.tokens = both.data();
    b.positions = pos.data();
    b.seq_ids = seq.data();
    b.want_logits = want.data();
    REQUIRE(basalt_session_decode(s, &b) == BASALT_OK);
    const size_t n_vocab = basalt_session_n_vocab(s);
    for (size_t r = 0; r < 10; ++r) {
        const float* a = nullptr;
        const float* c = nullptr;
        REQUIRE(basalt_session_logits(s, r, &a) == BASALT_OK);
        REQUIRE(basalt_session_logits(s, r + 10, &c) == BASALT_OK);
        CHECK(std::vector<float>(a, a + n_vocab) == std::vector<float>(c, c + n_vocab));
    }
    // A cut back within the ring's slack works; past it, it is refused naming the positions.
    REQUIRE(basalt_session_seq_truncate(s, 1, 85) == BASALT_OK);
    CHECK(basalt_session_seq_truncate(s, 1, 40) == BASALT_ERR_UNSUPPORTED);
    CHECK_THAT(test::last_error(), Contains("overwritten already"));
    basalt_session_free(s);
}
