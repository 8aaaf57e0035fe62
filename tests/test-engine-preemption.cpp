// Admission by real KV use with preemption (docs/engine.md "Admission and preemption"), through the C API: a KV
// budget far below what the requests would reserve forces the engine to preempt running requests and recompute
// them later; every request's streamed tokens, text, hypotheses and finish reason must equal its run alone (greedy,
// seeded sampling, penalties, a grammar, beam search, speculative decoding with a draft), on a pure-attention model
// and on a hybrid recurrent one (whose per-sequence state is dropped and recomputed too). No timing is asserted.
#include <basalt/basalt.h>

#include <string>
#include <vector>

#include "test-support.hpp"

using test::Engine;
using test::Model;
using test::Request;

namespace {

struct Spec {
    const char* prompt;
    int32_t max_tokens;
    const char* samplers;
    const char* decoder;  // NULL: sample
    int32_t grammar_kind = BASALT_GRAMMAR_NONE;
};

basalt_request_params request(const Spec& s) {
    basalt_request_params p{};
    p.struct_size = sizeof(p);
    p.prompt = s.prompt;
    p.prompt_len = SIZE_MAX;
    p.samplers = s.samplers;
    p.decoder = s.decoder;
    p.max_tokens = s.max_tokens;
    p.seed = -1;
    p.grammar_kind = s.grammar_kind;
    return p;
}

// What a finished request gave: its finish reason, streamed tokens and text, every hypothesis.
struct Outcome {
    int32_t finish = BASALT_FINISH_NONE;
    std::vector<int32_t> tokens;
    std::string text;
    std::vector<std::vector<int32_t>> hyps;
    bool operator==(const Outcome& o) const {
        return finish == o.finish && tokens == o.tokens && text == o.text && hyps == o.hyps;
    }
};

Outcome outcome(basalt_request* r) {
    Outcome o;
    o.finish = basalt_request_finish_reason(r);
    INFO(basalt_request_error(r));
    REQUIRE(o.finish != BASALT_FINISH_ERROR);
    for (;;) {
        int32_t t[64];
        char c[256];
        size_t nt = 0, nc = 0;
        REQUIRE(basalt_request_read(r, t, 64, &nt, c, sizeof c, &nc) == BASALT_OK);
        o.tokens.insert(o.tokens.end(), t, t + nt);
        o.text.append(c, nc);
        if (nt == 0 && nc == 0) break;
    }
    for (size_t h = 0; h < basalt_request_n_hypotheses(r); ++h) o.hyps.push_back(test::hypothesis_tokens(r, h));
    return o;
}

basalt_engine_params params(uint32_t parallel, uint32_t ctx, uint32_t kv_slots, const basalt_model* second) {
    basalt_engine_params p{};
    p.struct_size = sizeof(p);
    p.n_parallel = parallel;
    p.n_seq_max = parallel * 2;  // beams and forks need more sequences than requests
    p.n_ctx = ctx;
    p.n_kv_slots = kv_slots;
    p.second_model = second;
    return p;
}

Outcome solo(basalt_runtime* rt, const basalt_model* m, const basalt_model* second, const Spec& s) {
    Engine e(rt, m, params(1, 128, 0, second));
    Request r;
    const basalt_request_params p = request(s);
    REQUIRE(basalt_engine_submit(e.e, &p, &r.r) == BASALT_OK);
    REQUIRE(basalt_engine_run(e.e) == BASALT_OK);
    return outcome(r.r);
}

basalt_engine_stats stats(basalt_engine* e) {
    basalt_engine_stats s{};
    s.struct_size = sizeof(s);
    REQUIRE(basalt_engine_stats_get(e, &s) == BASALT_OK);
    return s;
}

// Runs every spec together in an engine of `kv_slots` slots, stepping by hand; returns each outcome and the stats.
std::vector<Outcome> together(basalt_runtime* rt, const basalt_model* m, const std::vector<Spec>& specs,
                              basalt_engine_params p, basalt_engine_stats& st) {
    Engine e(rt, m, p);
    std::vector<Request> reqs(specs.size());
    for (size_t i = 0; i < specs.size(); ++i) {
        const basalt_request_params rp = request(specs[i]);
        INFO(i);
        REQUIRE(basalt_engine_submit(e.e, &rp, &reqs[i].r) == BASALT_OK);
    }
    size_t active = 1;
    for (int steps = 0; active > 0; ++steps) {
        REQUIRE(steps < 20000);
        REQUIRE(basalt_engine_step(e.e, &active) == BASALT_OK);
        const basalt_engine_stats now = stats(e.e);
        CHECK(now.kv_slots_free <= now.kv_slots);
    }
    std::vector<Outcome> out;
    for (auto& r : reqs) out.push_back(outcome(r.r));
    st = stats(e.e);
    return out;
}

void check_identity(const char* model_name, const char* draft_name, const std::vector<Spec>& specs, uint32_t ctx,
                    uint32_t kv_slots) {
    test::Runtime rt(BASALT_RUNTIME_NO_ENV_PLUGINS);
    Model model(test::golden_model(model_name));
    const std::string draft_path = draft_name != nullptr ? test::golden_model(draft_name) : std::string();
    Model draft(draft_name != nullptr ? draft_path : test::golden_model(model_name));
    const basalt_model* second = draft_name != nullptr ? draft.m : nullptr;
    std::vector<Outcome> want;
    for (const Spec& s : specs) want.push_back(solo(rt.rt, model.m, second, s));
    for (uint32_t chunk : {0u, 5u}) {
        for (bool reserve : {false, true}) {
            basalt_engine_params p = params(static_cast<uint32_t>(specs.size()), ctx, kv_slots, second);
            p.prefill_chunk = chunk;
            p.max_batch_tokens = 32;
            if (reserve) p.flags |= BASALT_ENGINE_ADMIT_RESERVE;
            basalt_engine_stats st{};
            const std::vector<Outcome> got = together(rt.rt, model.m, specs, p, st);
            CAPTURE(model_name, chunk, reserve, st.preemptions);
            if (reserve) {
                CHECK(st.preemptions == 0);
            } else {
                CHECK(st.preemptions > 0);  // the budget holds far fewer tokens than the requests grow to
            }
            CHECK(st.finished == specs.size());
            CHECK(st.kv_slots_free == st.kv_slots);
            for (size_t i = 0; i < specs.size(); ++i) {
                CAPTURE(i, specs[i].prompt, specs[i].samplers, specs[i].decoder ? specs[i].decoder : "sample");
                CHECK(got[i] == want[i]);
            }
        }
    }
}

}  // namespace

TEST_CASE("preempted requests give what they give alone: pure attention, every decoder kind", "[engine][preempt]") {
    // 8 requests of 3-9 prompt tokens growing to 40-56 positions each (and beams and drafts on top) in 112 slots.
    const std::vector<Spec> specs = {
        {"Once upon a time", 40, "greedy", nullptr},
        {"The stranger opened the wooden box and", 36, "top_k:40;temp:0.8;dist:seed=3", nullptr},
        {"A", 44, "penalties:repeat=1.2;greedy", nullptr},
        {"Hello there, friend", 40, "min_p:0.1;dist:seed=9", nullptr},
        {"In the morning the", 30, "greedy", "beam:width=2,n_best=2"},
        {"She said that", 40, "greedy", "speculative:k=3,adaptive=0"},
        {"Numbers:", 38, "temp:0.9;dist:seed=21", nullptr, BASALT_GRAMMAR_JSON},
        {"Far away", 42, "top_p:0.9;dist:seed=5", "speculative:k=2,adaptive=0"},
    };
    check_identity("tiny-llama-f32.gguf", "tiny-llama-q8_0.gguf", specs, 64, 112);
}

TEST_CASE("preempted requests give what they give alone: hybrid recurrent state recomputed", "[engine][preempt]") {
    if (!test::golden_runs(test::golden_model("tiny-qwen35-f32.gguf"))) {
        WARN("tiny-qwen35 golden model not present: skipped");
        return;
    }
    // Beams fork the state; speculative requests (a hybrid draft too) snapshot it and restore the snapshot when
    // drafts are rejected: a preemption recomputes the snapshot sequences like any other.
    const std::vector<Spec> specs = {
        {"Once upon a time", 40, "greedy", nullptr},
        {"The stranger opened the wooden box and", 36, "top_k:40;temp:0.8;dist:seed=3", nullptr},
        {"A", 44, "penalties:repeat=1.2;greedy", nullptr},
        {"Hello there, friend", 40, "min_p:0.1;dist:seed=9", nullptr},
        {"In the morning the", 30, "greedy", "beam:width=2,n_best=2"},
        {"She said that", 40, "greedy", "speculative:k=3,adaptive=0"},
        {"Far away", 42, "top_p:0.9;dist:seed=5", "speculative:k=2,adaptive=0"},
        {"The wooden box and the wooden box", 40, "greedy", "speculative:source=ngram,k=3,adaptive=0"},
    };
    check_identity("tiny-qwen35-f32.gguf", "tiny-qwen35-q8_0.gguf", specs, 64, 112);
}

TEST_CASE(
    "on-demand admission: more requests run than reservation allows, a cancelled waiter leaves, a request "
    "larger than the cache is refused",
    "[engine][preempt]") {
    test::Runtime rt(BASALT_RUNTIME_NO_ENV_PLUGINS);
    Model model(test::golden_model("tiny-llama-f32.gguf"));
    // 4 requests that may each grow to 64 positions in 128 slots: reservation runs 2 at a time, on demand all 4
    // start (their prompts are a few blocks).
    for (bool reserve : {false, true}) {
        basalt_engine_params p = params(4, 64, 128, nullptr);
        if (reserve) p.flags |= BASALT_ENGINE_ADMIT_RESERVE;
        Engine e(rt.rt, model.m, p);
        std::vector<Request> reqs(4);
        for (auto& r : reqs) {
            const basalt_request_params rp = request({"Once upon a time", -1, "greedy", nullptr});
            REQUIRE(basalt_engine_submit(e.e, &rp, &r.r) == BASALT_OK);
        }
        size_t active = 0;
        REQUIRE(basalt_engine_step(e.e, &active) == BASALT_OK);
        CHECK(stats(e.e).running == (reserve ? 2u : 4u));
        REQUIRE(basalt_request_cancel(reqs[3].r) == BASALT_OK);
        REQUIRE(basalt_engine_run(e.e) == BASALT_OK);
        for (int i = 0; i < 3; ++i) CHECK(basalt_request_finish_reason(reqs[i].r) == BASALT_FINISH_CONTEXT);
        CHECK(basalt_request_finish_reason(reqs[3].r) == BASALT_FINISH_CANCELLED);
        const basalt_engine_stats st = stats(e.e);
        CHECK(st.running == 0);
        CHECK(st.queued == 0);
        CHECK(st.kv_slots_free == st.kv_slots);
        if (reserve) CHECK(st.preemptions == 0);
        // A request that alone may need more than the whole cache is refused as before (both policies).
        basalt_engine_params small = params(2, 64, 48, nullptr);
        if (reserve) small.flags |= BASALT_ENGINE_ADMIT_RESERVE;
        Engine e2(rt.rt, model.m, small);
        Request big;
        const basalt_request_params bp = request({"Once upon a time", -1, "greedy", nullptr});
        CHECK(basalt_engine_submit(e2.e, &bp, &big.r) == BASALT_ERR_CAPACITY);
        CHECK_THAT(test::last_error(), Catch::Matchers::Contains("more than the cache's 48"));
    }
}
