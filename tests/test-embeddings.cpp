// Embedding models (docs/embeddings.md): tiny-bert's per-token embeddings and mean-pooled sequence embedding against
// llama.cpp's goldens (../shared/testdata/golden, README "Embedding goldens"), through basalt_session_embed and
// embedding requests of the engine (ragged batches of several inputs, pooling, normalisation, dimensions), and the
// refusals (a decoder model, a generation request on an embedding model, rank pooling without a head).
#include <basalt/basalt.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "test-support.hpp"

namespace fs = std::filesystem;

namespace {

// "Once upon a time, the stranger opened the wooden box." as llama.cpp's WPM tokenizer gives it ([CLS] ... [SEP]).
const std::vector<int32_t> kBertPrompt = {101, 224, 282, 331, 220, 128, 166, 414, 106, 181,
                                          271, 156, 472, 181, 333, 187, 311, 108, 102};
constexpr size_t kEmbd = 64;

fs::path golden(const std::string& file) {
    return fs::path(BASALT_TEST_DATA_DIR) / "golden" / file;
}

std::vector<float> read_f32(const fs::path& p) {
    std::ifstream is(p, std::ios::binary);
    REQUIRE(is.good());
    is.seekg(0, std::ios::end);
    const auto n = static_cast<size_t>(is.tellg()) / sizeof(float);
    is.seekg(0);
    std::vector<float> v(n);
    is.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(n * sizeof(float)));
    return v;
}

double max_abs(const std::vector<float>& a, const std::vector<float>& b) {
    REQUIRE(a.size() == b.size());
    double m = 0;
    for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(static_cast<double>(a[i]) - b[i]));
    return m;
}

struct Model {
    test::Runtime rt{BASALT_RUNTIME_NO_ENV_PLUGINS};
    basalt_model* model = nullptr;
    explicit Model(const std::string& name) {
        const fs::path p = golden("models/" + name + ".gguf");
        REQUIRE(basalt_model_load(rt.rt, p.string().c_str(), nullptr, &model) == BASALT_OK);
    }
    ~Model() { basalt_model_free(model); }
};

// Per-token embeddings of inputs (each its own sequence, packed into one batch) through basalt_session_embed.
std::vector<float> session_embed(Model& m, const std::vector<std::vector<int32_t>>& inputs, const char* backend,
                                 uint32_t n_batch = 0) {
    basalt_session_params p{};
    p.struct_size = sizeof(p);
    p.n_ctx = 128;
    p.n_batch = n_batch;
    p.n_threads = 2;
    p.backend = backend;
    basalt_session* s = nullptr;
    const basalt_status st = basalt_session_create(m.rt.rt, m.model, &p, &s);
    INFO(basalt_last_error());
    REQUIRE(st == BASALT_OK);
    std::vector<int32_t> toks, pos, seqs;
    for (size_t k = 0; k < inputs.size(); ++k) {
        for (size_t i = 0; i < inputs[k].size(); ++i) {
            toks.push_back(inputs[k][i]);
            pos.push_back(static_cast<int32_t>(i));
            seqs.push_back(static_cast<int32_t>(k));
        }
    }
    basalt_batch b{};
    b.struct_size = sizeof(b);
    b.n_tokens = toks.size();
    b.tokens = toks.data();
    b.positions = pos.data();
    b.seq_ids = seqs.data();
    std::vector<float> out(toks.size() * kEmbd);
    const basalt_status est = basalt_session_embed(s, &b, out.data(), out.size());
    INFO(basalt_last_error());
    CHECK(est == BASALT_OK);
    basalt_session_free(s);
    return out;
}

struct Engine {
    basalt_engine* e = nullptr;
    Engine(Model& m, const char* backend, uint32_t max_batch = 512) {
        basalt_engine_params p{};
        p.struct_size = sizeof(p);
        p.n_ctx = 128;
        p.n_parallel = 1;
        p.max_batch_tokens = max_batch;
        p.n_threads = 2;
        p.backend = backend;
        const basalt_status st = basalt_engine_create(m.rt.rt, m.model, &p, &e);
        INFO(basalt_last_error());
        REQUIRE(st == BASALT_OK);
    }
    ~Engine() { basalt_engine_destroy(e); }
};

basalt_request_params embed_params(const std::vector<int32_t>& tokens, int32_t pooling, int32_t normalize,
                                   uint32_t dimensions = 0) {
    basalt_request_params p{};
    p.struct_size = sizeof(p);
    p.flags = BASALT_REQUEST_EMBED;
    p.tokens = tokens.data();
    p.n_tokens = tokens.size();
    p.max_tokens = -1;
    p.seed = -1;
    p.pooling = pooling;
    p.normalize = normalize;
    p.dimensions = dimensions;
    return p;
}

std::vector<float> result(basalt_request* r) {
    size_t n = 0;
    REQUIRE(basalt_request_embedding(r, nullptr, 0, &n) == BASALT_OK);
    std::vector<float> v(n);
    REQUIRE(basalt_request_embedding(r, v.data(), v.size(), &n) == BASALT_OK);
    return v;
}

// Mean pooling of the golden per-token rows through one engine request, against the pooled golden.
void check_golden(const std::string& model, const std::string& config, double tol, const char* backend) {
    Model m(model);
    const auto want_embd = read_f32(golden("logits/" + model + "." + config + ".embd.f32"));
    const auto want_pooled = read_f32(golden("logits/" + model + "." + config + ".pooled.f32"));
    const auto got = session_embed(m, {kBertPrompt}, backend);
    const double d_embd = max_abs(got, want_embd);
    Engine eng(m, backend);
    const auto p = embed_params(kBertPrompt, BASALT_POOLING_MODEL, BASALT_NORMALIZE_NONE);
    basalt_request* r = nullptr;
    REQUIRE(basalt_engine_submit(eng.e, &p, &r) == BASALT_OK);
    REQUIRE(basalt_engine_run(eng.e) == BASALT_OK);
    REQUIRE(basalt_request_finish_reason(r) == BASALT_FINISH_STOP);
    const double d_pooled = max_abs(result(r), want_pooled);
    basalt_request_free(r);
    std::printf("[embeddings] %s %s (%s): per-token max abs %.3g, pooled %.3g (tolerance %g)\n", model.c_str(),
                config.c_str(), backend, d_embd, d_pooled, tol);
    CHECK(d_embd < tol);
    CHECK(d_pooled < tol);
}

}  // namespace

// Tolerances: llama.cpp computes GELU from an fp16 table, Basalt exactly (README: 0.0012 on these embeddings); the
// quantized variants add their activation effect (README: f16 0.0018, q8_0 0.047, q4_0 0.038), each about 2x.
TEST_CASE("embeddings golden: bert f32", "[embeddings][golden]") {
    check_golden("tiny-bert-f32", "ref", 3e-3, "cpu");
}
TEST_CASE("embeddings golden: bert f16", "[embeddings][golden]") {
    check_golden("tiny-bert-f16", "ref", 6e-3, "cpu");
}
TEST_CASE("embeddings golden: bert q8_0", "[embeddings][golden]") {
    check_golden("tiny-bert-q8_0", "ref", 0.1, "cpu");
}
TEST_CASE("embeddings golden: bert q4_0", "[embeddings][golden]") {
    check_golden("tiny-bert-q4_0", "ref", 0.1, "cpu");
}
