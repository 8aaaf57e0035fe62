// basalt.hpp, the header-only C++ wrapper over the public C API: RAII handles (moves, empty handles, destruction
// order through OpenEngine), parameter builders (the C structs they build) and basalt::cpp::Error carrying the C
// status and message.
#include <basalt/basalt.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <type_traits>
#include <vector>

namespace cpp = basalt::cpp;

namespace {

const std::string kLlama = std::string(BASALT_TEST_GOLDEN_MODELS) + "/tiny-llama-f32.gguf";

void collect(basalt_request*, const int32_t*, size_t, const char* text, size_t len, int32_t, void* user) {
    static_cast<std::string*>(user)->append(text, len);
}

}  // namespace

TEST_CASE("a failed call throws Error with the C status and the library's message", "[cpp]") {
    try {
        cpp::Model missing("/nonexistent/no-such-model.gguf");
        FAIL("no exception");
    } catch (const cpp::Error& e) {
        CHECK(e.status() == BASALT_ERR_NOT_FOUND);
        CHECK(std::string(e.status_name()) == "BASALT_ERR_NOT_FOUND");
        CHECK(std::string(e.what()).find("no-such-model.gguf") != std::string::npos);
    }
    CHECK_NOTHROW(cpp::check(BASALT_OK));
    CHECK_THROWS_AS(cpp::check(BASALT_ERR_INVALID_ARGUMENT), cpp::Error);
}

TEST_CASE("handles are move-only owners, a moved-from handle is empty", "[cpp]") {
    STATIC_REQUIRE(!std::is_copy_constructible_v<cpp::Model>);
    STATIC_REQUIRE(!std::is_copy_assignable_v<cpp::Engine>);
    STATIC_REQUIRE(std::is_nothrow_move_constructible_v<cpp::Runtime>);
    STATIC_REQUIRE(!std::is_move_assignable_v<cpp::OpenEngine>);  // members would be freed runtime-first
    cpp::Runtime rt{cpp::RuntimeOptions{}};
    REQUIRE(rt);
    basalt_runtime* raw = rt.get();
    cpp::Runtime moved = std::move(rt);
    CHECK(moved.get() == raw);
    CHECK_FALSE(rt);  // NOLINT(bugprone-use-after-move): the state after a move is what is tested
    CHECK(moved.component_count() > 0);
    cpp::Model empty;
    CHECK(empty.get() == nullptr);  // destroying an empty handle frees nothing
}

TEST_CASE("Model reads, tokenizes and renders", "[cpp]") {
    const cpp::Model model(kLlama);
    const basalt_model_info info = model.info();
    CHECK(std::string(info.arch) == "llama");
    CHECK(model.decoder_layers() == 0);  // decoder-only
    CHECK(cpp::Model(std::string(BASALT_TEST_GOLDEN_MODELS) + "/tiny-t5-f32.gguf").decoder_layers() == 2);
    const std::vector<int32_t> ids = model.tokenize("Once upon a time", BASALT_TOKENIZE_ADD_SPECIAL);
    REQUIRE(ids.size() > 1);
    std::string text;
    for (size_t i = 1; i < ids.size(); ++i) text += model.piece(ids[i], false);
    CHECK(text.find("upon a time") != std::string::npos);
    CHECK(model.detokenize(ids, BASALT_DETOKENIZE_REMOVE_SPECIAL).find("Once upon a time") != std::string::npos);
    CHECK_FALSE(model.meta("no.such.key").has_value());
    CHECK(model.meta("general.architecture").value() == "llama");
}

TEST_CASE("parameter builders fill the C structs", "[cpp]") {
    cpp::EngineParams p;
    p.compute.device = 0;
    p.compute.backend_params.add("isa", "scalar");
    p.compute.kv_params.add("k_type", "f16");
    p.n_parallel = 3;
    const basalt_engine_params raw = p.raw();
    CHECK(raw.struct_size == sizeof(basalt_engine_params));
    CHECK(raw.n_parallel == 3);
    CHECK(std::string(raw.backend) == "cpu");
    REQUIRE(raw.backend_params != nullptr);
    REQUIRE(raw.backend_params->count == 2);  // the device first, then the others in order
    CHECK(std::string(raw.backend_params->keys[0]) == "device");
    CHECK(std::string(raw.backend_params->values[0]) == "0");
    CHECK(std::string(raw.backend_params->keys[1]) == "isa");
    CHECK(raw.kv_params->count == 1);
    CHECK(raw.moe_router == nullptr);
    CHECK(cpp::SessionParams{}.raw().backend_params == nullptr);

    cpp::RequestParams r;
    r.prompt = "hi";
    r.stop = {"a", "b"};
    const basalt_request_params rr = r.raw();
    CHECK(rr.prompt_len == 2);
    CHECK(rr.n_stop == 2);
    CHECK(std::string(rr.stop[1]) == "b");
    CHECK(rr.decoder == nullptr);
}

TEST_CASE("open_engine generates and a bad chain is an Error with BASALT_ERR_FORMAT", "[cpp]") {
    cpp::EngineOptions o;
    o.model = kLlama;
    bool prepared = false;
    o.prepare = [&](const cpp::Runtime& rt, const cpp::Model& model, cpp::EngineParams& p) {
        prepared = rt && model;
        p.n_ctx = 64;
    };
    cpp::OpenEngine e = cpp::open_engine(o);
    CHECK(prepared);
    CHECK_FALSE(e.second);
    cpp::RequestParams r;
    r.prompt = "Once upon a time";
    r.max_tokens = 4;
    r.flags = BASALT_REQUEST_IGNORE_EOG;
    std::string text;
    cpp::Request q = e.engine.submit(r, collect, &text);
    e.engine.run();
    CHECK(q.finish_reason() == BASALT_FINISH_LENGTH);
    CHECK(q.stats().generated_tokens == 4);
    CHECK(q.hypothesis(0).size() == 4);
    CHECK_FALSE(text.empty());

    r.samplers = "top_k:4";  // selects nothing
    try {
        (void)e.engine.submit(r);
        FAIL("no exception");
    } catch (const cpp::Error& err) {
        CHECK(err.status() == BASALT_ERR_FORMAT);
        CHECK(std::string(err.what()).find("top_k") != std::string::npos);
    }
}

TEST_CASE("open_engine keeps nothing when a step fails", "[cpp]") {
    cpp::EngineOptions o;
    o.model = kLlama;
    o.params.compute.backend = "no-such-backend";
    CHECK_THROWS_AS(cpp::open_engine(o), cpp::Error);
    o.params.compute.backend = "cpu";
    o.prepare = [](const cpp::Runtime&, const cpp::Model&, cpp::EngineParams&) { throw std::runtime_error("no"); };
    CHECK_THROWS_AS(cpp::open_engine(o), std::runtime_error);
}

TEST_CASE("Session decodes and SamplerChain picks the greedy token", "[cpp]") {
    const cpp::Runtime rt{cpp::RuntimeOptions{}};
    const cpp::Model model(kLlama, &rt);
    cpp::SessionParams sp;
    sp.n_ctx = 32;
    cpp::Session session(rt, model, sp);
    const std::vector<int32_t> ids = model.tokenize("Once upon", BASALT_TOKENIZE_ADD_SPECIAL);
    std::vector<int32_t> pos(ids.size()), seq(ids.size(), 0);
    for (size_t i = 0; i < ids.size(); ++i) pos[i] = static_cast<int32_t>(i);
    basalt_batch b{};
    b.struct_size = sizeof(b);
    b.n_tokens = ids.size();
    b.tokens = ids.data();
    b.positions = pos.data();
    b.seq_ids = seq.data();
    session.decode(b);
    REQUIRE(session.n_outputs() == 1);
    const float* logits = session.logits(0);
    size_t best = 0;
    for (size_t i = 1; i < session.n_vocab(); ++i)
        if (logits[i] > logits[best]) best = i;
    cpp::SamplerChain greedy(rt, "greedy");
    CHECK(greedy.size() == 1);
    CHECK(greedy.name(0) == "greedy");
    CHECK(greedy.sample(logits, session.n_vocab()) == static_cast<int32_t>(best));
    CHECK(session.seq_length(0) == ids.size());
    CHECK_THROWS_AS(cpp::SamplerChain(rt, "top_k:4"), cpp::Error);
    CHECK_THROWS_AS(session.logits(5), cpp::Error);
}
