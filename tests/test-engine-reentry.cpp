// The engine's C API misused from a request callback (re-entering step/run/destroy of the engine that is calling
// back, a wait that could never end) and the misuses submit and wait refuse by value (stop token ids outside the
// vocabulary, unknown flag bits, a negative timeout other than -1). Each is refused naming the call or the field.
#include <basalt/basalt.h>

#include <atomic>
#include <string>

#include "test-support.hpp"

using Catch::Matchers::Contains;
using test::Engine;
using test::last_error;
using test::Model;
using test::Request;

namespace {

basalt_engine_params engine_params(bool own_thread) {
    basalt_engine_params p{};
    p.struct_size = sizeof(p);
    p.n_parallel = 1;
    p.n_ctx = 64;
    p.flags = own_thread ? BASALT_ENGINE_OWN_THREAD : 0;
    return p;
}

basalt_request_params request(int32_t max_tokens) {
    basalt_request_params p{};
    p.struct_size = sizeof(p);
    p.prompt = "Once upon a time";
    p.prompt_len = SIZE_MAX;
    p.max_tokens = max_tokens;
    p.seed = -1;
    return p;
}

// What a callback tried on its own engine: the status of each call and the message it left on the callback's thread.
struct Probe {
    basalt_engine* engine = nullptr;
    enum class Call { step, run, destroy, wait_forever } call = Call::step;
    std::atomic<int> calls{0};
    basalt_status status = BASALT_OK;
    std::string message;
    std::atomic<int> finish{BASALT_FINISH_NONE};
};

void probe_callback(basalt_request* r, const int32_t*, size_t, const char*, size_t, int32_t finish, void* user) {
    auto* p = static_cast<Probe*>(user);
    if (p->calls.fetch_add(1) == 0) {  // the first call only: the rest of the request runs normally
        switch (p->call) {
            case Probe::Call::step:
                p->status = basalt_engine_step(p->engine, nullptr);
                break;
            case Probe::Call::run:
                p->status = basalt_engine_run(p->engine);
                break;
            case Probe::Call::destroy:
                basalt_engine_destroy(p->engine);  // refused: the engine goes on (the test destroys it later)
                p->status = BASALT_OK;
                break;
            case Probe::Call::wait_forever: {
                int32_t toks[16];
                char text[256];
                size_t n = 0, len = 0;
                basalt_request_read(r, toks, 16, &n, text, sizeof(text), &len);  // nothing unread is left
                p->status = basalt_request_wait(r, -1);  // nothing can change while this thread is in the step
                break;
            }
        }
        p->message = last_error();
    }
    if (finish != BASALT_FINISH_NONE) p->finish = finish;
}

// Runs one request whose first callback makes the probe's call; returns after the request finished.
void run_probe(basalt_runtime* rt, const basalt_model* m, bool own_thread, Probe& probe) {
    Engine e(rt, m, engine_params(own_thread));
    probe.engine = e.e;
    basalt_request_params q = request(4);
    q.callback = probe_callback;
    q.user_data = &probe;
    Request r;
    REQUIRE(basalt_engine_submit(e.e, &q, &r.r) == BASALT_OK);
    if (own_thread) {
        while (basalt_request_finish_reason(r.r) == BASALT_FINISH_NONE) {
            REQUIRE(basalt_request_wait(r.r, 1000) == BASALT_OK);
            basalt_request_read(r.r, nullptr, 0, nullptr, nullptr, 0, nullptr);
        }
    } else {
        REQUIRE(basalt_engine_run(e.e) == BASALT_OK);
    }
    // The misuse changed nothing: the request ran to its end and has its finish reason.
    CHECK(basalt_request_finish_reason(r.r) == BASALT_FINISH_LENGTH);
    CHECK(probe.finish == BASALT_FINISH_LENGTH);
}

}  // namespace

TEST_CASE("step and run from a request callback are refused naming the call", "[engine][reentry]") {
    test::Runtime rt(BASALT_RUNTIME_NO_ENV_PLUGINS);
    Model model(test::golden_model("tiny-llama-f32.gguf"));
    for (const bool own_thread : {false, true}) {
        for (const auto call : {Probe::Call::step, Probe::Call::run}) {
            const char* name = call == Probe::Call::step ? "basalt_engine_step" : "basalt_engine_run";
            INFO((own_thread ? "own thread, " : "caller-driven, ") << name);
            Probe probe;
            probe.call = call;
            run_probe(rt.rt, model.m, own_thread, probe);
            CHECK(probe.status == BASALT_ERR_INVALID_ARGUMENT);
            CHECK_THAT(probe.message, Contains(name) && Contains("request callback"));
        }
    }
}

TEST_CASE("destroying the engine from its own request callback is refused and the engine goes on",
          "[engine][reentry]") {
    test::Runtime rt(BASALT_RUNTIME_NO_ENV_PLUGINS);
    Model model(test::golden_model("tiny-llama-f32.gguf"));
    for (const bool own_thread : {false, true}) {
        INFO((own_thread ? "own thread" : "caller-driven"));
        Probe probe;
        probe.call = Probe::Call::destroy;
        run_probe(rt.rt, model.m, own_thread, probe);
        CHECK_THAT(probe.message, Contains("basalt_engine_destroy") && Contains("request callback"));
    }
}

TEST_CASE("a wait without limit from a callback of the request's engine is refused", "[engine][reentry]") {
    test::Runtime rt(BASALT_RUNTIME_NO_ENV_PLUGINS);
    Model model(test::golden_model("tiny-llama-f32.gguf"));
    for (const bool own_thread : {false, true}) {
        INFO((own_thread ? "own thread" : "caller-driven"));
        Probe probe;
        probe.call = Probe::Call::wait_forever;
        run_probe(rt.rt, model.m, own_thread, probe);
        CHECK(probe.status == BASALT_ERR_INVALID_ARGUMENT);
        CHECK_THAT(probe.message, Contains("basalt_request_wait") && Contains("request callback"));
    }
}

TEST_CASE("a negative timeout other than -1 is refused by basalt_request_wait", "[engine][reentry]") {
    test::Runtime rt(BASALT_RUNTIME_NO_ENV_PLUGINS);
    Model model(test::golden_model("tiny-llama-f32.gguf"));
    Engine e(rt.rt, model.m, engine_params(false));
    basalt_request_params q = request(2);
    Request r;
    REQUIRE(basalt_engine_submit(e.e, &q, &r.r) == BASALT_OK);
    for (const int32_t t : {-5, -2, INT32_MIN}) {
        CHECK(basalt_request_wait(r.r, t) == BASALT_ERR_INVALID_ARGUMENT);
        CHECK_THAT(last_error(), Contains("basalt_request_wait") && Contains("timeout_ms " + std::to_string(t)));
    }
    CHECK(basalt_request_wait(r.r, 0) == BASALT_OK);
    REQUIRE(basalt_engine_run(e.e) == BASALT_OK);
    CHECK(basalt_request_wait(r.r, -1) == BASALT_OK);  // finished: returns at once
}

TEST_CASE("stop token ids outside the vocabulary and unknown flag bits are refused at submit", "[engine][reentry]") {
    test::Runtime rt(BASALT_RUNTIME_NO_ENV_PLUGINS);
    Model model(test::golden_model("tiny-llama-f32.gguf"));
    Engine e(rt.rt, model.m, engine_params(false));
    Request r;
    for (const int32_t bad : {-5, 99999}) {
        const int32_t stops[2] = {2, bad};
        basalt_request_params q = request(2);
        q.stop_tokens = stops;
        q.n_stop_tokens = 2;
        CHECK(basalt_engine_submit(e.e, &q, &r.r) == BASALT_ERR_INVALID_ARGUMENT);
        CHECK_THAT(last_error(), Contains("stop_tokens[1] = " + std::to_string(bad)) && Contains("vocabulary"));
        CHECK(r.r == nullptr);
    }
    basalt_request_params q = request(2);
    q.flags = BASALT_REQUEST_IGNORE_EOG | (1u << 9);
    CHECK(basalt_engine_submit(e.e, &q, &r.r) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(last_error(), Contains("flags") && Contains("0x204") && Contains("0x200"));
    CHECK(r.r == nullptr);
    q.flags = BASALT_REQUEST_IGNORE_EOG | BASALT_REQUEST_NO_SPECIAL | BASALT_REQUEST_PARSE_SPECIAL;
    const int32_t good = 2;
    q.stop_tokens = &good;
    q.n_stop_tokens = 1;
    CHECK(basalt_engine_submit(e.e, &q, &r.r) == BASALT_OK);
}
