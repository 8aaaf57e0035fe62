// The engine through the C API: requests alone and together, stop conditions, cancel, admission under a full
// cache, its own thread, statistics, the errors a bad request or engine gets, and the prompt as the chain's history.
#include <basalt/basalt.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "test-support.hpp"

using Catch::Matchers::Contains;
using test::last_error;

namespace {

std::string golden(const std::string& name) {
    return test::golden_model(name);
}

using test::Model;

using test::Engine;
using test::Request;

basalt_engine_params params(uint32_t parallel = 1, uint32_t ctx = 128) {
    basalt_engine_params p{};
    p.struct_size = sizeof(p);
    p.n_parallel = parallel;
    p.n_ctx = ctx;
    return p;
}

basalt_request_params request(const char* prompt, int32_t max_tokens, const char* samplers = "greedy") {
    basalt_request_params p{};
    p.struct_size = sizeof(p);
    p.prompt = prompt;
    p.prompt_len = SIZE_MAX;
    p.samplers = samplers;
    p.max_tokens = max_tokens;
    p.seed = -1;
    return p;
}

basalt_status submit(basalt_engine* e, const basalt_request_params& p, basalt_request** out) {
    return basalt_engine_submit(e, &p, out);
}

// Everything unread: tokens and text.
std::pair<std::vector<int32_t>, std::string> drain(basalt_request* r) {
    std::vector<int32_t> toks;
    std::string text;
    for (;;) {
        int32_t t[64];
        char c[256];
        size_t nt = 0, nc = 0;
        REQUIRE(basalt_request_read(r, t, 64, &nt, c, sizeof c, &nc) == BASALT_OK);
        toks.insert(toks.end(), t, t + nt);
        text.append(c, nc);
        if (nt == 0 && nc == 0) return {toks, text};
    }
}

// One request alone in its own engine.
std::pair<std::vector<int32_t>, std::string> solo(basalt_runtime* rt, const basalt_model* m,
                                                  const basalt_request_params& p, uint32_t ctx = 128) {
    Engine e(rt, m, params(1, ctx));
    Request r;
    REQUIRE(basalt_engine_submit(e.e, &p, &r.r) == BASALT_OK);
    REQUIRE(basalt_engine_run(e.e) == BASALT_OK);
    REQUIRE(basalt_request_finish_reason(r.r) != BASALT_FINISH_NONE);
    return drain(r.r);
}

}  // namespace

TEST_CASE("requests sharing the engine's batches get what each gets alone", "[engine]") {
    test::Runtime rt(BASALT_RUNTIME_NO_ENV_PLUGINS);
    Model model(golden("tiny-llama-f32.gguf"));
    const char* prompts[] = {"Once upon a time", "The stranger opened the wooden box and", "A", "Hello there, friend"};
    const char* chains[] = {"greedy", "top_k:40;temp:0.8;dist:seed=3", "penalties:repeat=1.2;greedy",
                            "min_p:0.1;dist:seed=9"};
    std::vector<std::pair<std::vector<int32_t>, std::string>> want;
    for (int i = 0; i < 4; ++i) want.push_back(solo(rt.rt, model.m, request(prompts[i], 12 + 5 * i, chains[i])));

    for (uint32_t chunk : {0u, 3u}) {
        basalt_engine_params p = params(4);
        p.prefill_chunk = chunk;
        p.max_batch_tokens = 8;
        Engine e(rt.rt, model.m, p);
        Request r[4];
        for (int i = 0; i < 4; ++i) {
            REQUIRE(submit(e.e, request(prompts[i], 12 + 5 * i, chains[i]), &r[i].r) == BASALT_OK);
        }
        size_t active = 1, steps = 0;
        while (active > 0) {
            REQUIRE(basalt_engine_step(e.e, &active) == BASALT_OK);
            ++steps;
        }
        for (int i = 0; i < 4; ++i) {
            CAPTURE(chunk, i);
            CHECK(basalt_request_finish_reason(r[i].r) == BASALT_FINISH_LENGTH);
            CHECK(drain(r[i].r) == want[i]);
        }
        basalt_engine_stats s{};
        s.struct_size = sizeof(s);
        REQUIRE(basalt_engine_stats_get(e.e, &s) == BASALT_OK);
        CHECK(s.finished == 4);
        CHECK(s.running == 0);
        CHECK(s.batch_tokens_max <= 8 + (chunk == 0 ? 8 : 0));  // chunk 0 lets one whole prompt past the budget
        CHECK(s.generated_tokens == 12 + 17 + 22 + 27);
    }
}

TEST_CASE("prompts arriving while requests decode, cut by the step-time budget, get what each gets alone",
          "[engine][step-budget]") {
    test::Runtime rt(BASALT_RUNTIME_NO_ENV_PLUGINS);
    Model model(golden("tiny-llama-f32.gguf"));
    const char* prompts[] = {"Once upon a time", "Hello there, friend",
                             "The stranger opened the wooden box and found a letter folded twice",
                             "A small boat drifted across the quiet lake while the sun went down"};
    const char* chains[] = {"greedy", "top_k:40;temp:0.8;dist:seed=3", "greedy", "min_p:0.1;dist:seed=9"};
    const int32_t max_tokens[] = {120, 120, 10, 12};
    std::vector<std::pair<std::vector<int32_t>, std::string>> want;
    for (int i = 0; i < 4; ++i)
        want.push_back(solo(rt.rt, model.m, request(prompts[i], max_tokens[i], chains[i]), 256));

    // 1e-6 ms: every step is over budget, so an arriving prompt moves one token a step; 0: the default (2x the
    // decode rows' predicted time: pieces depend on the machine's timing, the output must not); -1: no budget.
    for (const double max_step : {1e-6, 0.0, -1.0}) {
        CAPTURE(max_step);
        basalt_engine_params p = params(4, 256);
        p.max_batch_tokens = 64;
        p.max_step_ms = max_step;
        Engine e(rt.rt, model.m, p);
        Request r[4];
        for (int i = 0; i < 2; ++i)
            REQUIRE(submit(e.e, request(prompts[i], max_tokens[i], chains[i]), &r[i].r) == BASALT_OK);
        size_t active = 1, steps = 0;
        for (; steps < 3; ++steps) REQUIRE(basalt_engine_step(e.e, &active) == BASALT_OK);  // the first two decode
        for (int i = 2; i < 4; ++i)
            REQUIRE(submit(e.e, request(prompts[i], max_tokens[i], chains[i]), &r[i].r) == BASALT_OK);
        auto stats = [](basalt_request* q) {
            basalt_request_stats st{};
            st.struct_size = sizeof(st);
            REQUIRE(basalt_request_stats_get(q, &st) == BASALT_OK);
            return st;
        };
        size_t to_first = 0;  // steps until both arriving requests have their first token
        while (active > 0) {
            REQUIRE(basalt_engine_step(e.e, &active) == BASALT_OK);
            if (to_first == 0 && stats(r[2].r).generated_tokens > 0 && stats(r[3].r).generated_tokens > 0)
                to_first = steps - 2;
            ++steps;
        }
        for (int i = 0; i < 4; ++i) {
            CAPTURE(i);
            CHECK(basalt_request_finish_reason(r[i].r) == BASALT_FINISH_LENGTH);
            CHECK(drain(r[i].r) == want[i]);
        }
        const uint64_t arriving = stats(r[2].r).prompt_tokens + stats(r[3].r).prompt_tokens;
        CAPTURE(arriving, to_first);
        // One prompt token a step while the first two decode (their 120 tokens outlast both prompts); without a
        // budget the whole prompts join the first steps after their arrival (two: 64 tokens a step).
        if (max_step > 0) CHECK(to_first >= arriving);
        if (max_step < 0) CHECK(to_first <= 2);
    }
}

TEST_CASE("step-time budgets that are not numbers, and factors below 1, are refused naming the field",
          "[engine][step-budget]") {
    test::Runtime rt(BASALT_RUNTIME_NO_ENV_PLUGINS);
    Model model(golden("tiny-llama-f32.gguf"));
    basalt_engine* e = nullptr;
    basalt_engine_params p = params();
    p.max_step_ms = std::nan("");
    CHECK(basalt_engine_create(rt.rt, model.m, &p, &e) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(last_error(), Contains("max_step_ms nan is not a finite number"));
    p = params();
    p.max_step_factor = 0.5;
    CHECK(basalt_engine_create(rt.rt, model.m, &p, &e) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(last_error(), Contains("max_step_factor 0.5 is neither 0"));
    CHECK(e == nullptr);
    // A 1.6 struct (without the budget's fields) gets the default budget.
    p = params();
    p.struct_size = offsetof(basalt_engine_params, max_step_ms);
    REQUIRE(basalt_engine_create(rt.rt, model.m, &p, &e) == BASALT_OK);
    basalt_engine_destroy(e);
}

TEST_CASE("stop strings end the text before them, end tokens, max_tokens and the context end requests", "[engine]") {
    test::Runtime rt(BASALT_RUNTIME_NO_ENV_PLUGINS);
    Model model(golden("tiny-llama-f32.gguf"));
    const auto full = solo(rt.rt, model.m, request("Once upon a time", 40));
    REQUIRE(full.second.size() > 10);
    // A stop string taken from the middle of the solo text: the text ends right before it.
    const std::string stop = full.second.substr(6, 3);
    const char* stops[] = {stop.c_str()};
    basalt_request_params p = request("Once upon a time", 40);
    p.stop = stops;
    p.n_stop = 1;
    Engine e(rt.rt, model.m, params());
    Request r;
    REQUIRE(basalt_engine_submit(e.e, &p, &r.r) == BASALT_OK);
    REQUIRE(basalt_engine_run(e.e) == BASALT_OK);
    CHECK(basalt_request_finish_reason(r.r) == BASALT_FINISH_STOP);
    CHECK(std::string(basalt_finish_reason_name(BASALT_FINISH_STOP)) == "stop");
    const auto got = drain(r.r);
    CHECK(got.second == full.second.substr(0, full.second.find(stop)));
    CHECK(got.first.size() < full.first.size());

    // A stop token: the first generated token of the solo run ends the request at once, emitting nothing.
    basalt_request_params t = request("Once upon a time", 40);
    t.stop_tokens = &full.first[0];
    t.n_stop_tokens = 1;
    Request rt2;
    REQUIRE(basalt_engine_submit(e.e, &t, &rt2.r) == BASALT_OK);
    REQUIRE(basalt_engine_run(e.e) == BASALT_OK);
    CHECK(basalt_request_finish_reason(rt2.r) == BASALT_FINISH_STOP);
    CHECK(drain(rt2.r).first.empty());

    // max_tokens 0: nothing; -1: until the context (16 positions) is full.
    Request r0;
    REQUIRE(submit(e.e, request("Once upon a time", 0), &r0.r) == BASALT_OK);
    Engine small(rt.rt, model.m, params(1, 16));
    Request rc;
    basalt_request_params pc = request("Once upon a time", -1);
    pc.flags = BASALT_REQUEST_IGNORE_EOG;
    REQUIRE(basalt_engine_submit(small.e, &pc, &rc.r) == BASALT_OK);
    REQUIRE(basalt_engine_run(e.e) == BASALT_OK);
    REQUIRE(basalt_engine_run(small.e) == BASALT_OK);
    CHECK(basalt_request_finish_reason(r0.r) == BASALT_FINISH_LENGTH);
    CHECK(drain(r0.r).first.empty());
    CHECK(basalt_request_finish_reason(rc.r) == BASALT_FINISH_CONTEXT);
    basalt_request_stats st{};
    st.struct_size = sizeof(st);
    REQUIRE(basalt_request_stats_get(rc.r, &st) == BASALT_OK);
    CHECK(st.prompt_tokens + st.generated_tokens == 16 + 1);  // the last token is emitted, not fed
}

TEST_CASE("a full cache queues new requests, cancel ends one and spares the others", "[engine]") {
    test::Runtime rt(BASALT_RUNTIME_NO_ENV_PLUGINS);
    Model model(golden("tiny-llama-f32.gguf"));
    const auto want = solo(rt.rt, model.m, request("Once upon a time", 40));
    basalt_engine_params p = params(4, 64);
    p.n_kv_slots = 64;  // room for one request's worst case at a time: 10 prompt + 40 tokens, 64 slots in blocks
    p.flags = BASALT_ENGINE_ADMIT_RESERVE;  // admission by worst case (on demand, all three would start)
    Engine e(rt.rt, model.m, p);
    Request a, b, c;
    REQUIRE(submit(e.e, request("Once upon a time", 40), &a.r) == BASALT_OK);
    REQUIRE(submit(e.e, request("Once upon a time", 40), &b.r) == BASALT_OK);
    REQUIRE(submit(e.e, request("Once upon a time", 40), &c.r) == BASALT_OK);
    size_t active = 0;
    REQUIRE(basalt_engine_step(e.e, &active) == BASALT_OK);
    basalt_engine_stats s{};
    s.struct_size = sizeof(s);
    REQUIRE(basalt_engine_stats_get(e.e, &s) == BASALT_OK);
    CHECK(s.running == 1);
    CHECK(s.queued == 2);
    REQUIRE(basalt_request_cancel(c.r) == BASALT_OK);
    REQUIRE(basalt_engine_run(e.e) == BASALT_OK);
    CHECK(basalt_request_finish_reason(a.r) == BASALT_FINISH_LENGTH);
    CHECK(basalt_request_finish_reason(b.r) == BASALT_FINISH_LENGTH);
    CHECK(basalt_request_finish_reason(c.r) == BASALT_FINISH_CANCELLED);
    CHECK(drain(a.r) == want);
    CHECK(drain(b.r) == want);
    basalt_request_stats st{};
    st.struct_size = sizeof(st);
    REQUIRE(basalt_request_stats_get(b.r, &st) == BASALT_OK);
    CHECK(st.queue_ms > 0);
    CHECK(st.generated_tokens == 40);
    CHECK(st.ttft_ms >= st.queue_ms);
    size_t n_itl = 0;
    REQUIRE(basalt_request_itl(b.r, nullptr, 0, &n_itl) == BASALT_OK);
    CHECK(n_itl == 39);
    CHECK(st.itl_p99_ms >= st.itl_p50_ms);
    CHECK(st.tokens_per_s > 0);
}

TEST_CASE("an engine on its own thread takes requests from several threads", "[engine]") {
    test::Runtime rt(BASALT_RUNTIME_NO_ENV_PLUGINS);
    Model model(golden("tiny-llama-f32.gguf"));
    const auto want = solo(rt.rt, model.m, request("Once upon a time", 16, "top_k:20;dist:seed=4"));
    basalt_engine_params p = params(3);
    p.flags = BASALT_ENGINE_OWN_THREAD;
    Engine e(rt.rt, model.m, p);
    struct Seen {
        std::mutex m;
        std::string text;
        std::atomic<int> finished{0};
    } seen[6];
    std::vector<std::thread> threads;
    Request r[6];
    for (int i = 0; i < 6; ++i) {
        threads.emplace_back([&, i] {
            basalt_request_params q = request("Once upon a time", 16, "top_k:20;dist:seed=4");
            q.callback = [](basalt_request*, const int32_t*, size_t, const char* text, size_t len, int32_t finish,
                            void* user) {
                auto* s = static_cast<Seen*>(user);
                std::lock_guard lock(s->m);
                s->text.append(text, len);
                if (finish != BASALT_FINISH_NONE) s->finished += 1;
            };
            q.user_data = &seen[i];
            REQUIRE(basalt_engine_submit(e.e, &q, &r[i].r) == BASALT_OK);
        });
    }
    for (auto& t : threads) t.join();
    CHECK(basalt_engine_step(e.e, nullptr) == BASALT_ERR_INVALID_ARGUMENT);
    for (int i = 0; i < 6; ++i) {
        while (basalt_request_finish_reason(r[i].r) == BASALT_FINISH_NONE) {
            REQUIRE(basalt_request_wait(r[i].r, 1000) == BASALT_OK);
            drain(r[i].r);
        }
    }
    REQUIRE(basalt_engine_run(e.e) == BASALT_OK);  // waits for idle
    for (int i = 0; i < 6; ++i) {
        CHECK(seen[i].finished == 1);
        CHECK(seen[i].text == want.second);
    }
}

TEST_CASE("bad requests and engines are refused naming the problem", "[engine]") {
    test::Runtime rt(BASALT_RUNTIME_NO_ENV_PLUGINS);
    Model model(golden("tiny-llama-f32.gguf"));
    Engine e(rt.rt, model.m, params(1, 32));
    Request r;
    basalt_request_params empty = request("", 4);
    empty.flags = BASALT_REQUEST_NO_SPECIAL;
    CHECK(basalt_engine_submit(e.e, &empty, &r.r) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(last_error(), Contains("the prompt is empty"));
    basalt_request_params p = request("hi", 4);
    p.decoder = "beamish:width=2";
    CHECK(basalt_engine_submit(e.e, &p, &r.r) == BASALT_ERR_NOT_FOUND);
    CHECK_THAT(last_error(), Contains("no decoder named 'beamish'") && Contains("sample"));
    p.decoder = "sample:width=2";
    CHECK(basalt_engine_submit(e.e, &p, &r.r) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(last_error(), Contains("decoder 'sample'") && Contains("width"));
    CHECK(submit(e.e, request("hi", 4, "top_k:4"), &r.r) == BASALT_ERR_FORMAT);
    CHECK_THAT(last_error(), Contains("does not select a token"));
    const std::string long_prompt(400, 'x');
    CHECK(submit(e.e, request(long_prompt.c_str(), 4), &r.r) == BASALT_ERR_CAPACITY);
    CHECK_THAT(last_error(), Contains("more than the context of 32"));
    int32_t bad = 100000;
    basalt_request_params t = request(nullptr, 4);
    t.tokens = &bad;
    t.n_tokens = 1;
    CHECK(basalt_engine_submit(e.e, &t, &r.r) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(last_error(), Contains("not in the vocabulary"));
    CHECK(r.r == nullptr);

    basalt_engine_params small = params(1, 64);
    small.n_kv_slots = 16;
    Engine tiny(rt.rt, model.m, small);
    CHECK(submit(tiny.e, request("hi", 60), &r.r) == BASALT_ERR_CAPACITY);
    CHECK_THAT(last_error(), Contains("KV slots") && Contains("more than the cache's 16"));

    Model other(golden("tiny-qwen2-f32.gguf"));
    basalt_engine_params two = params();
    two.second_model = other.m;
    basalt_engine* none = nullptr;
    CHECK(basalt_engine_create(rt.rt, model.m, &two, &none) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(last_error(), Contains("515 tokens") && Contains("vocabulary"));
    CHECK(none == nullptr);
}

TEST_CASE("destroying an engine finishes its requests as cancelled", "[engine]") {
    test::Runtime rt(BASALT_RUNTIME_NO_ENV_PLUGINS);
    Model model(golden("tiny-llama-f32.gguf"));
    Request a, b;
    {
        Engine e(rt.rt, model.m, params(1));
        REQUIRE(submit(e.e, request("Once upon a time", 30), &a.r) == BASALT_OK);
        REQUIRE(submit(e.e, request("Once upon a time", 30), &b.r) == BASALT_OK);
        REQUIRE(basalt_engine_step(e.e, nullptr) == BASALT_OK);
    }
    CHECK(basalt_request_finish_reason(a.r) == BASALT_FINISH_CANCELLED);
    CHECK(basalt_request_finish_reason(b.r) == BASALT_FINISH_CANCELLED);
    CHECK(basalt_request_cancel(a.r) == BASALT_OK);  // idempotent, and the handle still works
}

TEST_CASE("greedy requests through the engine give llama.cpp's golden continuations", "[engine][golden]") {
    // The shared golden set and the one made in this tree (tests/golden: granite, olmo2, mistral3).
    std::vector<std::pair<std::string, nlohmann::json>> runs;
    for (const std::string& dir :
         {std::string(BASALT_TEST_DATA_DIR) + "/golden/", std::string(BASALT_TEST_GOLDEN_LOCAL_DIR) + "/"}) {
        std::ifstream in(dir + "index.json");
        REQUIRE(in.good());  // the golden data must be there (../shared/testdata, tests/golden)
        const auto index = nlohmann::json::parse(in);
        for (const auto& run : index["runs"]) runs.emplace_back(dir, run);
    }
    test::Runtime rt(BASALT_RUNTIME_NO_ENV_PLUGINS);
    size_t checked = 0;
    for (const auto& [dir, run] : runs) {
        // f32 weights: our logits are within 1e-4 of the golden and every margin is far larger, so a free-running
        // greedy continuation must be the golden one token for token (quantized variants drift within their
        // tolerances: test-golden checks them step by step).
        if (run["config"] != "ref" || run["variant"] != "f32" || !run.contains("greedy_tokens")) continue;
        const std::string file = run["model"].get<std::string>() + "-" + run["variant"].get<std::string>() + ".gguf";
        if (!std::filesystem::exists(dir + "models/" + file)) continue;  // golden logits of a variant not shipped
        CAPTURE(file);
        if (!test::golden_runs(dir + "models/" + file)) continue;  // an architecture still to come: refused by name
        const auto prompt = run["prompt_tokens"].get<std::vector<int32_t>>();
        // Encoder-decoder (t5): the source goes to the encoder; the prompt is the teacher-forced decoder prefix.
        std::vector<int32_t> source;
        if (run["model"] == "tiny-t5") {
            std::ifstream js(dir + "logits/" + run["json"].get<std::string>());
            REQUIRE(js.good());
            source = nlohmann::json::parse(js)["encoder_tokens"].get<std::vector<int32_t>>();
        }
        const auto want = run["greedy_tokens"].get<std::vector<int32_t>>();
        Model model(dir + "models/" + file);
        // Three copies in one engine, prefill in pieces of 5 tokens: batching must not change a token.
        basalt_engine_params p = params(3, 128);
        p.prefill_chunk = 5;
        Engine e(rt.rt, model.m, p);
        Request r[3];
        for (auto& q : r) {
            basalt_request_params rp = request(nullptr, static_cast<int32_t>(want.size()));
            rp.tokens = prompt.data();
            rp.n_tokens = prompt.size();
            rp.flags = BASALT_REQUEST_IGNORE_EOG;
            if (!source.empty()) {
                rp.source_tokens = source.data();
                rp.n_source_tokens = source.size();
            }
            REQUIRE(basalt_engine_submit(e.e, &rp, &q.r) == BASALT_OK);
        }
        REQUIRE(basalt_engine_run(e.e) == BASALT_OK);
        for (auto& q : r) {
            const auto got = drain(q.r).first;
            CHECK(got == want);
        }
        ++checked;
    }
    CHECK(checked >= 8);
}

TEST_CASE("encoder-decoder requests batched together get what each gets alone", "[engine][t5]") {
    // Sources of different lengths, encoded together in one ragged encoder batch at admission; their decoder steps
    // share the decode batches (budget 8 tokens: prompts and steps of several requests mix).
    test::Runtime rt(BASALT_RUNTIME_NO_ENV_PLUGINS);
    Model model(golden("tiny-t5-f32.gguf"));
    const char* sources[] = {"Once upon a time, the stranger opened the wooden box.", "The box",
                             "A stranger came to town, and nobody knew his name or where he was from.", "Hello"};
    const char* chains[] = {"greedy", "top_k:40;temp:0.8;dist:seed=3", "penalties:repeat=1.2;greedy", "greedy"};
    std::vector<std::pair<std::vector<int32_t>, std::string>> want;
    for (int i = 0; i < 4; ++i) {
        basalt_request_params p = request(sources[i], 10 + 3 * i, chains[i]);
        p.flags = BASALT_REQUEST_IGNORE_EOG;
        want.push_back(solo(rt.rt, model.m, p));
        CHECK(want.back().first.size() == static_cast<size_t>(10 + 3 * i));
    }
    // The same source given as a source with an explicit decoder start: the same output as the prompt-as-source.
    {
        const std::vector<int32_t> start = {0};
        basalt_request_params p = request(nullptr, 10, "greedy");
        p.flags = BASALT_REQUEST_IGNORE_EOG;
        p.source = sources[0];
        p.tokens = start.data();
        p.n_tokens = start.size();
        CHECK(solo(rt.rt, model.m, p) == want[0]);
    }
    basalt_engine_params ep = params(4);
    ep.max_batch_tokens = 8;
    Engine e(rt.rt, model.m, ep);
    Request r[4];
    for (int i = 0; i < 4; ++i) {
        basalt_request_params p = request(sources[i], 10 + 3 * i, chains[i]);
        p.flags = BASALT_REQUEST_IGNORE_EOG;
        REQUIRE(submit(e.e, p, &r[i].r) == BASALT_OK);
    }
    REQUIRE(basalt_engine_run(e.e) == BASALT_OK);
    for (int i = 0; i < 4; ++i) {
        CAPTURE(i);
        CHECK(basalt_request_finish_reason(r[i].r) == BASALT_FINISH_LENGTH);
        CHECK(drain(r[i].r) == want[i]);
    }
    // A decoder-only model refuses a source; an encoder-decoder one an empty source.
    Model llama(golden("tiny-llama-f32.gguf"));
    Engine le(rt.rt, llama.m, params());
    basalt_request_params bad = request("Hello", 4);
    bad.source = "Bonjour";
    Request q;
    CHECK(submit(le.e, bad, &q.r) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(last_error(), Contains("decoder-only model"));
    const int32_t none = 0;
    basalt_request_params empty = request(nullptr, 4);
    empty.source_tokens = &none;
    empty.n_source_tokens = 0;
    std::vector<int32_t> start = {0};
    empty.tokens = start.data();
    empty.n_tokens = 1;
    CHECK(submit(e.e, empty, &q.r) == BASALT_ERR_INVALID_ARGUMENT);
}

namespace {

// The tokens of one request given as ids, run alone with the chain, end tokens ignored.
std::vector<int32_t> run_ids(basalt_runtime* rt, const basalt_model* m, const std::vector<int32_t>& prompt,
                             int32_t max_tokens, const char* chain) {
    basalt_request_params p = request(nullptr, max_tokens, chain);
    p.tokens = prompt.data();
    p.n_tokens = prompt.size();
    p.flags = BASALT_REQUEST_IGNORE_EOG;
    return solo(rt, m, p).first;
}

// How many n-grams of seq occur earlier in seq.
size_t repeated_ngrams(const std::vector<int32_t>& seq, size_t n) {
    size_t repeats = 0;
    for (size_t i = 0; i + n <= seq.size(); ++i) {
        for (size_t j = 0; j < i; ++j) {
            if (std::equal(seq.begin() + static_cast<std::ptrdiff_t>(i),
                           seq.begin() + static_cast<std::ptrdiff_t>(i + n),
                           seq.begin() + static_cast<std::ptrdiff_t>(j))) {
                ++repeats;
                break;
            }
        }
    }
    return repeats;
}

}  // namespace

TEST_CASE("the prompt is the chain's history before the first draw", "[engine][samplers]") {
    test::Runtime rt(BASALT_RUNTIME_NO_ENV_PLUGINS);
    Model model(golden("tiny-llama-f32.gguf"));
    const std::vector<int32_t> prompt = {1, 472, 294, 373, 501, 360, 310};
    const std::vector<int32_t> plain = run_ids(rt.rt, model.m, prompt, 24, "greedy");
    // n = 1 bans every token already in the sequence: none of the prompt's comes out, and none twice
    const std::vector<int32_t> once = run_ids(rt.rt, model.m, prompt, 24, "no_repeat_ngram:n=1;greedy");
    REQUIRE(once.size() == 24);
    for (size_t i = 0; i < once.size(); ++i) {
        CAPTURE(i);
        CHECK(std::find(prompt.begin(), prompt.end(), once[i]) == prompt.end());
        CHECK(std::find(once.begin(), once.begin() + static_cast<std::ptrdiff_t>(i), once[i]) ==
              once.begin() + static_cast<std::ptrdiff_t>(i));
    }
    CHECK(once != plain);
    // penalties count the prompt too (llama.cpp's loop accepts it): a huge presence penalty keeps its tokens out
    const std::vector<int32_t> pen = run_ids(rt.rt, model.m, prompt, 12, "penalties:present=1000,last_n=-1;greedy");
    for (int32_t t : pen) CHECK(std::find(prompt.begin(), prompt.end(), t) == prompt.end());
}

TEST_CASE("a text generated with no_repeat_ngram has no repeated n-gram, the prompt's included", "[engine][samplers]") {
    test::Runtime rt(BASALT_RUNTIME_NO_ENV_PLUGINS);
    Model model("target");
    std::vector<int32_t> prompt(64);
    size_t n = 0;
    const std::string text = "The best way to";
    REQUIRE(basalt_tokenize(model.m, text.data(), text.size(), BASALT_TOKENIZE_ADD_SPECIAL, prompt.data(),
                            prompt.size(), &n) == BASALT_OK);
    prompt.resize(n);
    auto whole = [&](const std::vector<int32_t>& out) {
        std::vector<int32_t> all = prompt;
        all.insert(all.end(), out.begin(), out.end());
        return all;
    };
    // greedy alone repeats itself (and the prompt's " best way to"), so the check below has teeth
    CHECK(repeated_ngrams(whole(run_ids(rt.rt, model.m, prompt, 96, "greedy")), 3) > 0);
    for (size_t k : {2u, 3u, 4u}) {
        CAPTURE(k);
        const std::string chain = "no_repeat_ngram:n=" + std::to_string(k) + ";greedy";
        const std::vector<int32_t> out = run_ids(rt.rt, model.m, prompt, 96, chain.c_str());
        CHECK(out.size() == 96);
        CHECK(repeated_ngrams(whole(out), k) == 0);
    }
}
