// Helpers shared by the unit tests: an owning runtime, paths of the mock plugins, and a log capture.
#pragma once

#include <basalt/basalt.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

namespace test {

inline std::string mock(const std::string& variant) {
    return std::string(BASALT_TEST_MOCK_DIR) + "/mock-" + variant + ".so";
}
inline std::string greedy_plugin() {
    return std::string(BASALT_TEST_PLUGIN_DIR) + "/basalt-sampler-greedy.so";
}

// A runtime owned by the test; flags default to "load nothing implicitly".
struct Runtime {
    basalt_runtime* rt = nullptr;
    explicit Runtime(uint32_t flags = BASALT_RUNTIME_NO_DEFAULT_PLUGINS | BASALT_RUNTIME_NO_ENV_PLUGINS) {
        basalt_runtime_params p{};
        p.struct_size = sizeof(p);
        p.flags = flags;
        REQUIRE(basalt_runtime_create(&p, &rt) == BASALT_OK);
    }
    ~Runtime() { basalt_runtime_destroy(rt); }
    Runtime(const Runtime&) = delete;
    Runtime& operator=(const Runtime&) = delete;

    basalt_status load(const std::string& path) { return basalt_runtime_load_plugin(rt, path.c_str()); }
    size_t count() const { return basalt_runtime_component_count(rt); }
    bool has(basalt_component_kind kind, const std::string& name) const {
        size_t i = 0;
        return basalt_runtime_find_component(rt, kind, name.c_str(), &i) == BASALT_OK;
    }
};

// Collects log lines while alive (restores stderr logging afterwards).
struct LogCapture {
    std::mutex mutex;
    std::vector<std::string> lines;
    basalt_log_level saved;
    explicit LogCapture(basalt_log_level level = BASALT_LOG_WARN) : saved(basalt_log_get_level()) {
        basalt_log_set_level(level);
        basalt_log_set_callback(
            [](basalt_log_level, const char* component, const char* message, void* user) {
                auto* self = static_cast<LogCapture*>(user);
                std::lock_guard lock(self->mutex);
                self->lines.push_back(std::string(component != nullptr ? component : "") + "|" + message);
            },
            this);
    }
    ~LogCapture() {
        basalt_log_set_callback(nullptr, nullptr);
        basalt_log_set_level(saved);
    }
    bool contains(const std::string& a, const std::string& b = "") {
        std::lock_guard lock(mutex);
        for (const auto& l : lines) {
            if (l.find(a) != std::string::npos && l.find(b) != std::string::npos) return true;
        }
        return false;
    }
};

// An owned candidate array and its basalt_candidates view (selected = -1, unsorted).
struct Cands {
    std::vector<basalt_token_data> data;
    basalt_candidates c{};
    explicit Cands(std::vector<basalt_token_data> d, int32_t seq = 0) : data(std::move(d)) {
        c.struct_size = sizeof(c);
        c.seq_id = seq;
        c.data = data.data();
        c.size = data.size();
        c.selected = -1;
    }
    int32_t chosen() const { return c.selected < 0 ? -1 : data[static_cast<size_t>(c.selected)].id; }
    std::vector<int32_t> ids() const {
        std::vector<int32_t> out;
        for (size_t i = 0; i < c.size; ++i) out.push_back(data[i].id);
        return out;
    }
    float logit_of(int32_t id) const {
        for (size_t i = 0; i < c.size; ++i) {
            if (data[i].id == id) return data[i].logit;
        }
        return std::numeric_limits<float>::quiet_NaN();
    }
};

// The whole file as raw little-endian F32 values (golden logits and embeddings); REQUIREs it opens.
inline std::vector<float> read_f32(const std::filesystem::path& p) {
    std::ifstream is(p, std::ios::binary);
    REQUIRE(is.good());
    is.seekg(0, std::ios::end);
    const auto n = static_cast<size_t>(is.tellg()) / sizeof(float);
    is.seekg(0);
    std::vector<float> v(n);
    is.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(n * sizeof(float)));
    return v;
}

// The largest absolute difference of two equally long vectors (REQUIREs equal sizes).
inline double max_abs(const std::vector<float>& a, const std::vector<float>& b) {
    REQUIRE(a.size() == b.size());
    double m = 0;
    for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(static_cast<double>(a[i]) - b[i]));
    return m;
}

inline std::string last_error() {
    return basalt_last_error();
}

#ifdef BASALT_TEST_DATA_DIR
// Path of a golden test model (../shared/testdata/golden/models).
inline std::string golden_model(const std::string& name) {
    return std::string(BASALT_TEST_DATA_DIR) + "/golden/models/" + name;
}
#endif

#ifdef BASALT_TEST_MODELS_DIR
// Path of a shipped model (models/basalt-fortunes-<name>.gguf: "target" or "draft").
inline std::string shipped(const std::string& name) {
    return std::string(BASALT_TEST_MODELS_DIR) + "/basalt-fortunes-" + name + ".gguf";
}
#endif

// A model loaded for the test (no runtime), freed at scope exit.
struct Model {
    basalt_model* m = nullptr;
    explicit Model(const std::string& path) {
        INFO(path);
        REQUIRE(basalt_model_load(nullptr, path.c_str(), nullptr, &m) == BASALT_OK);
    }
    ~Model() { basalt_model_free(m); }
    Model(const Model&) = delete;
    Model& operator=(const Model&) = delete;
};

// Whether Basalt runs the model at path: true, or false once it is checked that the file is refused as it must be
// (UNSUPPORTED, naming its architecture or the key whose math no builder implements). The golden set also holds the
// models of architectures still to come; a test that walks it runs the rest and counts these refusals.
inline bool golden_runs(const std::string& path) {
    Model model(path);
    const basalt_status st = basalt_model_check_runnable(model.m);
    if (st == BASALT_OK) return true;
    const std::string message = basalt_last_error();
    INFO(path << ": " << message);
    CHECK(st == BASALT_ERR_UNSUPPORTED);
    const bool named = message.find("is not supported") != std::string::npos ||
                       message.find("is not implemented") != std::string::npos;
    CHECK(named);
    return false;
}

// Decodes toks as one batch of sequence seq from position pos, logits on every row; returns them concatenated.
inline std::vector<float> decode_rows(basalt_session* session, const std::vector<int32_t>& toks, int32_t pos,
                                      int32_t seq) {
    std::vector<int32_t> positions(toks.size()), seqs(toks.size(), seq);
    std::vector<int8_t> want(toks.size(), 1);
    for (size_t i = 0; i < toks.size(); ++i) positions[i] = pos + static_cast<int32_t>(i);
    basalt_batch b{};
    b.struct_size = sizeof(b);
    b.n_tokens = toks.size();
    b.tokens = toks.data();
    b.positions = positions.data();
    b.seq_ids = seqs.data();
    b.want_logits = want.data();
    const basalt_status st = basalt_session_decode(session, &b);
    INFO(basalt_last_error());
    REQUIRE(st == BASALT_OK);
    const size_t n_vocab = basalt_session_n_vocab(session);
    std::vector<float> out;
    for (size_t r = 0; r < basalt_session_n_outputs(session); ++r) {
        const float* l = nullptr;
        REQUIRE(basalt_session_logits(session, r, &l) == BASALT_OK);
        out.insert(out.end(), l, l + n_vocab);
    }
    return out;
}

// An engine owned by the test (created with p; struct_size is set here), destroyed at scope exit.
struct Engine {
    basalt_engine* e = nullptr;
    Engine(basalt_runtime* rt, const basalt_model* m, basalt_engine_params p) {
        p.struct_size = sizeof(p);
        const basalt_status st = basalt_engine_create(rt, m, &p, &e);
        INFO(last_error());
        REQUIRE(st == BASALT_OK);
    }
    ~Engine() { basalt_engine_destroy(e); }
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;
};

// A request handle owned by the test (movable, so vectors of them work), freed at scope exit.
struct Request {
    basalt_request* r = nullptr;
    Request() = default;
    Request(const Request&) = delete;
    Request& operator=(const Request&) = delete;
    Request(Request&& o) noexcept : r(o.r) { o.r = nullptr; }
    ~Request() { basalt_request_free(r); }
};

// The tokens of hypothesis i of a request (hypothesis 0: its output); empty when it has none yet.
inline std::vector<int32_t> hypothesis_tokens(basalt_request* r, size_t i = 0) {
    if (basalt_request_n_hypotheses(r) <= i) return {};
    size_t n = 0;
    REQUIRE(basalt_request_hypothesis(r, i, nullptr, 0, &n, nullptr) == BASALT_OK);
    std::vector<int32_t> t(n);
    REQUIRE(basalt_request_hypothesis(r, i, t.data(), t.size(), &n, nullptr) == BASALT_OK);
    return t;
}

}  // namespace test
