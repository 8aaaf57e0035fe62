// Sessions through the C API: sequence truncation (speculative decoding drops rejected draft tokens) against
// uncut runs, with forks sharing the cut block; sliding-window layers kept in rings (window + batch rows per
// sequence) against full-size storage, bit for bit; and what sessions allocate against the memory plan.
#include <unistd.h>

#include <basalt/basalt.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "test-support.hpp"

using Catch::Matchers::Contains;

namespace {

using test::golden_model;

// The golden prompt of tiny-llama (README of the golden data).
const std::vector<int32_t> kPrompt = {1,   472, 294, 373, 501, 360, 310, 308, 289, 347, 260,
                                      312, 424, 321, 296, 334, 323, 312, 504, 334, 484, 261};

struct SessionOptions {
    uint32_t n_ctx = 128;
    uint32_t n_batch = 0;
    uint32_t n_seq = 1;
    const char* kv_type = nullptr;   // k_type and v_type of kv-paged; NULL: its default
    const char* v_type = nullptr;    // v_type alone (k_type: kv_type)
    const char* residual = nullptr;  // kv-paged's residual window
};

struct Run {
    test::Runtime rt{BASALT_RUNTIME_NO_ENV_PLUGINS};
    basalt_model* model = nullptr;
    basalt_session* session = nullptr;
    size_t n_vocab = 0;

    explicit Run(const std::string& path, const SessionOptions& o = {}) {
        REQUIRE(basalt_model_load(rt.rt, path.c_str(), nullptr, &model) == BASALT_OK);
        basalt_session_params p{};
        p.struct_size = sizeof(p);
        p.n_ctx = o.n_ctx;
        p.n_batch = o.n_batch;
        p.n_seq_max = o.n_seq;
        p.n_threads = 2;
        const char* keys[] = {"k_type", "v_type", "residual"};
        const char* values[] = {o.kv_type, o.v_type != nullptr ? o.v_type : o.kv_type, o.residual};
        basalt_params kvp{};
        kvp.struct_size = sizeof(kvp);
        kvp.count = o.residual != nullptr ? 3 : 2;
        kvp.keys = keys;
        kvp.values = values;
        if (o.kv_type != nullptr) p.kv_params = &kvp;
        const basalt_status st = basalt_session_create(rt.rt, model, &p, &session);
        INFO(basalt_last_error());
        REQUIRE(st == BASALT_OK);
        n_vocab = basalt_session_n_vocab(session);
    }
    ~Run() {
        basalt_session_free(session);
        basalt_model_free(model);
    }
    Run(const Run&) = delete;
    Run& operator=(const Run&) = delete;

    uint32_t length(int32_t seq) const {
        uint32_t n = 0;
        REQUIRE(basalt_session_seq_length(session, seq, &n) == BASALT_OK);
        return n;
    }
    // Decodes toks as one batch continuing sequence seq; returns the logits of every row.
    std::vector<float> decode(const std::vector<int32_t>& toks, int32_t seq = 0) {
        return test::decode_rows(session, toks, static_cast<int32_t>(length(seq)), seq);
    }
    // One decode per token; the logits of every step, concatenated.
    std::vector<float> step(const std::vector<int32_t>& toks, int32_t seq = 0) {
        std::vector<float> out;
        for (int32_t t : toks) {
            const auto row = decode({t}, seq);
            out.insert(out.end(), row.begin(), row.end());
        }
        return out;
    }
    basalt_memory_plan memory() const {
        basalt_memory_plan m{};
        m.struct_size = sizeof(m);
        REQUIRE(basalt_session_memory(session, &m) == BASALT_OK);
        return m;
    }
    // Decodes toks into seq in batches of at most `chunk` tokens (one decode call each); all logits.
    std::vector<float> chunks(const std::vector<int32_t>& toks, size_t chunk, int32_t seq = 0) {
        std::vector<float> out;
        for (size_t i = 0; i < toks.size(); i += chunk) {
            const std::vector<int32_t> part(
                toks.begin() + static_cast<std::ptrdiff_t>(i),
                toks.begin() + static_cast<std::ptrdiff_t>(std::min(toks.size(), i + chunk)));
            const auto rows = decode(part, seq);
            out.insert(out.end(), rows.begin(), rows.end());
        }
        return out;
    }
    void truncate(int32_t seq, uint32_t n_keep) {
        const basalt_status st = basalt_session_seq_truncate(session, seq, n_keep);
        INFO(basalt_last_error());
        REQUIRE(st == BASALT_OK);
        REQUIRE(length(seq) == n_keep);
    }
};

double max_abs(const std::vector<float>& a, const std::vector<float>& b) {
    REQUIRE(a.size() == b.size());
    double m = 0;
    for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(static_cast<double>(a[i]) - b[i]));
    return m;
}

}  // namespace

TEST_CASE("session: truncating rejected tokens and decoding on equals an uncut run", "[session]") {
    const std::string path = golden_model("tiny-llama-f32.gguf");
    const std::vector<int32_t> accepted = {300, 301}, rejected = {302, 303, 304}, next = {305, 306, 307};

    SECTION("token by token: the logits are bit-identical") {
        Run uncut(path);
        uncut.decode(kPrompt);
        uncut.step(accepted);
        const auto want = uncut.step(next);

        Run cut(path);
        cut.decode(kPrompt);
        cut.step(accepted);
        cut.step(rejected);
        cut.truncate(0, static_cast<uint32_t>(kPrompt.size() + accepted.size()));
        const auto got = cut.step(next);
        CHECK(max_abs(got, want) == 0.0);
    }
    SECTION("a verified draft batch cut back (as speculative decoding does), then a batch") {
        Run uncut(path);
        uncut.decode(kPrompt);
        uncut.decode(accepted);
        const auto want = uncut.decode(next);

        Run cut(path);
        cut.decode(kPrompt);
        std::vector<int32_t> draft = accepted;
        draft.insert(draft.end(), rejected.begin(), rejected.end());
        cut.decode(draft);
        cut.truncate(0, static_cast<uint32_t>(kPrompt.size() + accepted.size()));
        const auto got = cut.decode(next);
        // the accepted tokens' K/V came from a batch of 5 rather than 2 (kernels may block rows differently)
        CHECK(max_abs(got, want) <= 1e-5);
    }
    SECTION("cut into the prompt, deep, and to nothing") {
        for (uint32_t keep : {0u, 5u, 16u, 21u}) {
            Run uncut(path);
            const std::vector<int32_t> head(kPrompt.begin(), kPrompt.begin() + keep);
            if (!head.empty()) uncut.step(head);
            const auto want = uncut.step(next);

            Run cut(path);
            cut.decode(kPrompt);
            cut.step(accepted);
            cut.truncate(0, keep);
            const auto got = cut.step(next);
            INFO("kept " << keep);
            CHECK(max_abs(got, want) <= 1e-5);  // the prompt was one batch in `cut`, single steps in `uncut`
        }
    }
}

TEST_CASE("session: a fork cut back into the block it shares copies it, the original is untouched", "[session]") {
    const std::string path = golden_model("tiny-llama-f32.gguf");
    SessionOptions o;
    o.n_seq = 2;
    const std::vector<int32_t> tail = {300, 301, 302}, other = {400, 401};
    auto fresh = [&](const std::vector<int32_t>& prefix, const std::vector<int32_t>& then) {
        Run r(path);
        r.step(prefix);
        return r.step(then);
    };
    std::vector<int32_t> full = kPrompt;
    full.insert(full.end(), tail.begin(), tail.end());  // 25 tokens: a partial last block
    const std::vector<int32_t> kept(full.begin(), full.begin() + 19);
    const auto want_fork = fresh(kept, other);
    const auto want_orig = fresh(full, other);

    Run r(path, o);
    r.step(full, 0);
    REQUIRE(basalt_session_seq_fork(r.session, 0, 1) == BASALT_OK);
    r.truncate(1, 19);  // inside a block both sequences hold
    const auto got_fork = r.step(other, 1);
    const auto got_orig = r.step(other, 0);
    CHECK(max_abs(got_fork, want_fork) == 0.0);
    CHECK(max_abs(got_orig, want_orig) == 0.0);
}

TEST_CASE("session: truncation errors name the sequence and both lengths", "[session]") {
    Run r(golden_model("tiny-llama-f32.gguf"));
    r.decode({1, 2, 3, 4});
    CHECK(basalt_session_seq_truncate(r.session, 0, 5) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(basalt_last_error(), Contains("cannot truncate sequence 0 to 5 tokens: it holds only 4"));
    CHECK(r.length(0) == 4);
    CHECK(basalt_session_seq_truncate(r.session, 3, 0) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(basalt_last_error(), Contains("sequence id 3 out of range"));
    CHECK(basalt_session_seq_truncate(nullptr, 0, 0) == BASALT_ERR_INVALID_ARGUMENT);
    r.truncate(0, 4);  // no-op
    r.decode({5});
    CHECK(r.length(0) == 5);
}

namespace {

const std::vector<int32_t> kGemmaPrompt = {2,   280, 297, 376, 504, 363, 313, 311, 292, 350, 263,
                                           315, 427, 324, 299, 337, 326, 315, 507, 337, 487, 264};

}  // namespace

TEST_CASE("session: sliding-window rings give the logits of full-size window storage, bit for bit", "[session]") {
    // tiny-gemma3: window 8 on layers 0-4. With batches of 4 those layers keep 8 + 4 rows per sequence; with
    // batches of 128 (= the context) they keep all 128. Both are fed the same decode calls of at most 4 tokens.
    const std::string path = golden_model("tiny-gemma3-f32.gguf");
    SessionOptions ring_opts, flat_opts;
    ring_opts.n_batch = 4;
    flat_opts.n_batch = 128;
    std::vector<int32_t> tail;
    for (int32_t t = 0; t < 30; ++t) tail.push_back(100 + (t * 37) % 400);

    SECTION("one sequence, a prompt in batches and a long continuation past several windows") {
        Run ring(path, ring_opts), flat(path, flat_opts);
        CHECK(ring.memory().kv_cells_window == 12);
        CHECK(flat.memory().kv_cells_window == 128);
        CHECK(ring.memory().kv_bytes < flat.memory().kv_bytes);
        std::vector<float> a = ring.chunks(kGemmaPrompt, 4), b = flat.chunks(kGemmaPrompt, 4);
        CHECK(max_abs(a, b) == 0.0);
        a = ring.step(tail);
        b = flat.step(tail);
        CHECK(max_abs(a, b) == 0.0);
        a = ring.chunks(tail, 3);
        b = flat.chunks(tail, 3);
        CHECK(max_abs(a, b) == 0.0);
    }
    SECTION("two sequences: a fork copies the ring, both continue, each in ragged batches") {
        ring_opts.n_seq = flat_opts.n_seq = 2;
        Run ring(path, ring_opts), flat(path, flat_opts);
        CHECK(ring.memory().kv_cells_window == 24);
        for (Run* r : {&ring, &flat}) {
            r->chunks(kGemmaPrompt, 4, 0);
            REQUIRE(basalt_session_seq_fork(r->session, 0, 1) == BASALT_OK);
        }
        const std::vector<int32_t> a(tail.begin(), tail.begin() + 10), b(tail.begin() + 10, tail.begin() + 20);
        CHECK(max_abs(ring.chunks(a, 3, 1), flat.chunks(a, 3, 1)) == 0.0);
        CHECK(max_abs(ring.chunks(b, 4, 0), flat.chunks(b, 4, 0)) == 0.0);
        CHECK(max_abs(ring.step(b, 1), flat.step(b, 1)) == 0.0);
    }
    SECTION("a draft batch cut back and continued") {
        Run ring(path, ring_opts), flat(path, flat_opts);
        for (Run* r : {&ring, &flat}) {
            r->chunks(kGemmaPrompt, 4);
            r->decode({tail[0], tail[1], tail[2], tail[3]});
            r->truncate(0, static_cast<uint32_t>(kGemmaPrompt.size() + 1));
        }
        CHECK(max_abs(ring.chunks(tail, 4), flat.chunks(tail, 4)) == 0.0);
        // a cut deeper than the ring remembers is refused, naming what it holds; the full-size storage allows it
        const uint32_t len = ring.length(0);
        CHECK(basalt_session_seq_truncate(ring.session, 0, 5) == BASALT_ERR_UNSUPPORTED);
        CHECK_THAT(basalt_last_error(), Contains("ring of 12 rows") && Contains("keeping 5 tokens"));
        CHECK(ring.length(0) == len);
        flat.truncate(0, 5);
    }
}

TEST_CASE("session: every golden model allocates the KV cache its memory plan states", "[session]") {
    namespace fs = std::filesystem;
    // The shared golden set and the one made in this tree (tests/golden: granite, olmo2, mistral3).
    std::vector<fs::directory_entry> entries;
    for (const fs::path& dir :
         {fs::path(BASALT_TEST_DATA_DIR) / "golden" / "models", fs::path(BASALT_TEST_GOLDEN_LOCAL_DIR) / "models"}) {
        for (const auto& entry : fs::directory_iterator(dir)) entries.push_back(entry);
    }
    size_t models = 0;
    for (const auto& entry : entries) {
        const std::string name = entry.path().filename().string();
        if (entry.path().extension() != ".gguf") continue;
        const bool t5 = name.rfind("tiny-t5", 0) == 0;            // encoder-decoder: a source is encoded first
        if (!test::golden_runs(entry.path().string())) continue;  // an architecture still to come: refused by name
        basalt_model* probe = nullptr;
        REQUIRE(basalt_model_load(nullptr, entry.path().string().c_str(), nullptr, &probe) == BASALT_OK);
        basalt_model_info info{};
        info.struct_size = sizeof(info);
        REQUIRE(basalt_model_describe(probe, &info) == BASALT_OK);
        // Sliding-window layers with their own head size (gemma4): the smallest head decides which K/V types fit.
        uint32_t head_dim = info.head_dim_k;
        const char* arch = nullptr;
        const char* swa_dim = nullptr;
        if (basalt_model_meta(probe, "general.architecture", &arch) == BASALT_OK &&
            basalt_model_meta(probe, (std::string(arch) + ".attention.key_length_swa").c_str(), &swa_dim) ==
                BASALT_OK) {
            head_dim = std::min<uint32_t>(head_dim, static_cast<uint32_t>(std::stoul(swa_dim)));
        }
        basalt_model_free(probe);
        if (info.pooling != BASALT_POOLING_MODEL) continue;  // an embedding model decodes nothing: test-embeddings
        ++models;
        struct Shape {
            uint32_t n_ctx, n_batch, n_seq;
            const char* kv_type;
            const char* v_type = nullptr;
            uint32_t residual = 0;
        };
        for (const Shape& sh :
             {Shape{128, 0, 1, nullptr}, Shape{96, 4, 1, "f32"}, Shape{128, 8, 3, "q8_0"}, Shape{64, 64, 2, "f16"},
              Shape{100, 16, 7, nullptr}, Shape{128, 8, 2, "q4_0", "q8_0"}, Shape{100, 16, 3, "kivi_t4", "kivi_t2"},
              Shape{100, 16, 2, "kivi_c2", "kivi_t2", 32}, Shape{128, 0, 1, "f16", "kivi_t8", 64}}) {
            INFO(name << ": ctx " << sh.n_ctx << ", batch " << sh.n_batch << ", " << sh.n_seq << " sequences, KV "
                      << (sh.kv_type != nullptr ? sh.kv_type : "default") << "/"
                      << (sh.v_type != nullptr ? sh.v_type : "-") << ", residual " << sh.residual);
            SessionOptions o;
            o.n_ctx = sh.n_ctx;
            o.n_batch = sh.n_batch;
            o.n_seq = sh.n_seq;
            o.kv_type = sh.kv_type;
            o.v_type = sh.v_type;
            const std::string residual = std::to_string(sh.residual);
            if (sh.residual != 0) o.residual = residual.c_str();
            const bool quantized =
                sh.kv_type != nullptr && std::string(sh.kv_type) != "f32" && std::string(sh.kv_type) != "f16";
            if ((quantized || sh.v_type != nullptr) && head_dim % 32 != 0) continue;
            // a residual window does not compose with capped sliding-window storage (tested below)
            if (sh.residual != 0 && info.sliding_window != 0) continue;
            Run r(entry.path().string(), o);
            const basalt_memory_plan got = r.memory();
            basalt_plan_params pp{};
            pp.struct_size = sizeof(pp);
            pp.n_ctx = sh.n_ctx;
            pp.n_batch = sh.n_batch;
            pp.n_seq_max = sh.n_seq;
            pp.k_type = got.k_type;  // as the cache manager chose them
            pp.v_type = got.v_type;
            pp.kv_residual = sh.residual;
            basalt_memory_plan plan{};
            plan.struct_size = sizeof(plan);
            REQUIRE(basalt_model_plan(r.model, &pp, &plan) == BASALT_OK);
            CHECK(got.n_ctx == plan.n_ctx);
            CHECK(got.n_batch == plan.n_batch);
            CHECK(got.n_seq_max == plan.n_seq_max);
            CHECK(got.kv_bytes_per_token == plan.kv_bytes_per_token);
            CHECK(got.kv_cells_full == plan.kv_cells_full);
            CHECK(got.kv_cells_window == plan.kv_cells_window);
            CHECK(got.kv_bytes == plan.kv_bytes);
            // weights: the wrapped file holds the tensors plus the header and alignment padding
            CHECK(got.weight_bytes >= plan.weight_bytes);
            CHECK(got.weight_bytes <= fs::file_size(entry.path()));
            if (info.sliding_window == 0) CHECK(plan.kv_cells_window == 0);
            // a full batch with logits on every row: the logits take exactly what the plan gives them, and the
            // session's IO buffer and host copy stay within the plan's scratch
            const uint32_t full_batch = plan.n_batch;
            std::vector<int32_t> toks(full_batch);
            for (uint32_t i = 0; i < full_batch; ++i) toks[i] = static_cast<int32_t>(1 + i % 50);
            if (t5) {
                // The largest encoder pass: a source filling the cross-attention storage (n_ctx rows).
                std::vector<int32_t> src(plan.n_ctx), pos(plan.n_ctx), seq(plan.n_ctx, 0);
                for (uint32_t i = 0; i < plan.n_ctx; ++i) {
                    src[i] = static_cast<int32_t>(2 + i % 50);
                    pos[i] = static_cast<int32_t>(i);
                }
                basalt_batch eb{};
                eb.struct_size = sizeof(eb);
                eb.n_tokens = src.size();
                eb.tokens = src.data();
                eb.positions = pos.data();
                eb.seq_ids = seq.data();
                REQUIRE(basalt_session_encode(r.session, &eb) == BASALT_OK);
                CHECK(r.memory().scratch_bytes <= plan.scratch_bytes);
            }
            // a generation (logits on one row per step): the plan's logits and scratch are what it holds
            {
                std::vector<int32_t> pos(full_batch), seq(full_batch, 0);
                std::vector<int8_t> want(full_batch, 0);
                for (uint32_t i = 0; i < full_batch; ++i) pos[i] = static_cast<int32_t>(i);
                want.back() = 1;
                basalt_batch gb{};
                gb.struct_size = sizeof(gb);
                gb.n_tokens = full_batch;
                gb.tokens = toks.data();
                gb.positions = pos.data();
                gb.seq_ids = seq.data();
                gb.want_logits = want.data();
                REQUIRE(basalt_session_decode(r.session, &gb) == BASALT_OK);
                const basalt_memory_plan gen = r.memory();
                if (plan.n_seq_max == 1) CHECK(gen.logits_bytes == plan.logits_bytes);
                CHECK(gen.logits_bytes <= plan.logits_bytes);
                CHECK(gen.scratch_bytes <= plan.scratch_bytes);
                r.truncate(0, 0);
            }
            r.decode({1, 2, 3});
            r.truncate(0, 0);
            r.decode(toks);
            // a step with logits on every row (perplexity): the logits of all rows, twice, beyond the plan's
            // generation figure by exactly the rows it adds
            const basalt_memory_plan after = r.memory();
            const uint64_t all_rows = 2ull * 4 * full_batch * r.n_vocab;
            CHECK(after.logits_bytes == all_rows);
            CHECK(after.scratch_bytes <= plan.scratch_bytes - plan.logits_bytes + all_rows);
            CHECK(after.kv_bytes == plan.kv_bytes);
        }
    }
    CHECK(models == 88);  // 26 before issues 29/32, + qwen3, qwen3moe, gemma2, smollm3, llama3rope, gemma3scaled, phi3,
                          // qwen35, gpt-oss, gemma4 x 4 variants; gpt-oss mxfp4; tests/golden: granite, olmo2,
                          // mistral3, qwen35moe x 4, granite-norope f32; gemma4e x 4
}

TEST_CASE("session: a context the machine cannot hold is refused before anything is allocated", "[session]") {
    test::Runtime rt;  // no plugins at all: the refusal comes before the backend is even looked up
    basalt_model* model = nullptr;
    REQUIRE(basalt_model_load(rt.rt, golden_model("tiny-llama-f32.gguf").c_str(), nullptr, &model) == BASALT_OK);
    basalt_session_params p{};
    p.struct_size = sizeof(p);
    p.n_ctx = 2000000000u;  // 512 B of K/V per token: ~1 TB
    basalt_session* s = nullptr;
    CHECK(basalt_session_create(rt.rt, model, &p, &s) == BASALT_ERR_OUT_OF_MEMORY);
    CHECK_THAT(basalt_last_error(), Contains("the memory plan for ctx 2000000000") &&
                                        Contains("KV cache 1024000000000 B") && Contains("available (MemAvailable"));
    CHECK(s == nullptr);
    basalt_model_free(model);
}

namespace {

// Progress reports collected by basalt_progress_set_callback while alive.
struct ProgressLog {
    struct Report {
        std::string what;
        uint64_t done, total;
    };
    std::vector<Report> reports;
    ProgressLog() {
        basalt_progress_set_callback(
            [](const char* what, uint64_t done, uint64_t total, void* user) {
                static_cast<ProgressLog*>(user)->reports.push_back({what, done, total});
            },
            this);
    }
    ~ProgressLog() { basalt_progress_set_callback(nullptr, nullptr); }
    ProgressLog(const ProgressLog&) = delete;
    ProgressLog& operator=(const ProgressLog&) = delete;
};

}  // namespace

TEST_CASE("a decode longer than one forward pass and a quantization report their progress", "[session]") {
    Run run(golden_model("tiny-llama-f32.gguf"), SessionOptions{128, 8});
    {
        ProgressLog log;
        test::decode_rows(run.session, kPrompt, 0, 0);  // 22 tokens in passes of 8: 0, 8, 16, 22
        REQUIRE(log.reports.size() == 4);
        for (const auto& r : log.reports) {
            CHECK(r.what == "prefill");
            CHECK(r.total == kPrompt.size());
        }
        CHECK(log.reports[0].done == 0);
        CHECK(log.reports[1].done == 8);
        CHECK(log.reports[3].done == kPrompt.size());
        // One forward pass is not long work: no report.
        log.reports.clear();
        test::decode_rows(run.session, {5}, static_cast<int32_t>(kPrompt.size()), 0);
        CHECK(log.reports.empty());

        const std::string out =
            (std::filesystem::temp_directory_path() / ("basalt-progress-" + std::to_string(::getpid()) + ".gguf"))
                .string();
        REQUIRE(basalt_model_quantize(golden_model("tiny-llama-f32.gguf").c_str(), out.c_str(), BASALT_DTYPE_Q8_0,
                                      nullptr) == BASALT_OK);
        std::filesystem::remove(out);
        REQUIRE(log.reports.size() >= 2);
        CHECK(log.reports.front().what == "quantize");
        CHECK(log.reports.front().done == 0);
        CHECK(log.reports.back().done == log.reports.back().total);
        for (size_t i = 1; i < log.reports.size(); ++i) CHECK(log.reports[i].done >= log.reports[i - 1].done);
    }
    // Without a callback the same decode runs as before.
    REQUIRE(basalt_session_seq_drop(run.session, 0) == BASALT_OK);
    CHECK(test::decode_rows(run.session, kPrompt, 0, 0).size() == kPrompt.size() * run.n_vocab);
}

TEST_CASE("session: K/V types a session cannot store or combine are refused, naming them", "[session][kv-quant]") {
    const std::string llama256 = golden_model("tiny-llama256-q6_k.gguf");
    test::Runtime rt{BASALT_RUNTIME_NO_ENV_PLUGINS};
    basalt_model* model = nullptr;
    REQUIRE(basalt_model_load(rt.rt, llama256.c_str(), nullptr, &model) == BASALT_OK);
    auto create = [&](std::vector<const char*> keys, std::vector<const char*> values, uint32_t n_batch = 0) {
        basalt_session_params p{};
        p.struct_size = sizeof(p);
        p.n_ctx = 128;
        p.n_batch = n_batch;
        p.n_threads = 2;
        basalt_params kvp{};
        kvp.struct_size = sizeof(kvp);
        kvp.count = keys.size();
        kvp.keys = keys.data();
        kvp.values = values.data();
        p.kv_params = &kvp;
        basalt_session* s = nullptr;
        const basalt_status st = basalt_session_create(rt.rt, model, &p, &s);
        basalt_session_free(s);
        return std::pair{st, std::string(basalt_last_error())};
    };
    // Per-channel KIVI needs a residual window; the residual is whole units of 32; q2_k is no K/V type.
    auto [st1, m1] = create({"k_type"}, {"kivi_c2"});
    CHECK(st1 != BASALT_OK);
    CHECK_THAT(m1, Catch::Matchers::Contains("kivi_c2") && Catch::Matchers::Contains("residual"));
    auto [st2, m2] = create({"k_type", "residual"}, {"kivi_c2", "48"});
    CHECK(st2 != BASALT_OK);
    CHECK_THAT(m2, Catch::Matchers::Contains("residual") && Catch::Matchers::Contains("48"));
    auto [st3, m3] = create({"v_type"}, {"q2_k"});
    CHECK(st3 != BASALT_OK);
    CHECK_THAT(m3, Catch::Matchers::Contains("q2_k"));
    basalt_model_free(model);

    // A residual window does not compose with gemma3's capped sliding-window rings (window 8 + batch 8 per
    // sequence, below the context); with full-size window storage (batch 128) it does.
    basalt_model* gemma = nullptr;
    REQUIRE(basalt_model_load(rt.rt, golden_model("tiny-gemma3-f32.gguf").c_str(), nullptr, &gemma) == BASALT_OK);
    model = gemma;
    auto [st4, m4] = create({"k_type", "v_type", "residual"}, {"kivi_c4", "kivi_t4", "32"}, 8);
    CHECK(st4 == BASALT_ERR_UNSUPPORTED);
    CHECK_THAT(m4, Catch::Matchers::Contains("sliding-window"));
    auto [st5, m5] = create({"k_type", "v_type", "residual"}, {"kivi_c4", "kivi_t4", "32"}, 128);
    INFO(m5);
    CHECK(st5 == BASALT_OK);
    basalt_model_free(gemma);
}

TEST_CASE("session: with a residual window a sequence is cut back only where its F32 rows remain",
          "[session][kv-quant]") {
    SessionOptions o;
    o.kv_type = "kivi_c4";
    o.v_type = "kivi_t4";
    o.residual = "32";
    Run r(golden_model("tiny-llama256-q6_k.gguf"), o);
    std::vector<int32_t> toks(70);
    for (size_t i = 0; i < toks.size(); ++i) toks[i] = static_cast<int32_t>(1 + i % 200);
    r.decode(toks);                                                     // units 0..31 and 32..63 sealed, 64..69 open
    CHECK(basalt_session_seq_truncate(r.session, 0, 66) == BASALT_OK);  // inside the open unit
    const basalt_status st = basalt_session_seq_truncate(r.session, 0, 40);  // inside a sealed unit
    CHECK(st == BASALT_ERR_UNSUPPORTED);
    CHECK_THAT(std::string(basalt_last_error()),
               Catch::Matchers::Contains("kivi_c4") && Catch::Matchers::Contains("residual window of 32"));
    CHECK(r.length(0) == 66);
    CHECK(basalt_session_seq_truncate(r.session, 0, 32) == BASALT_OK);  // a unit boundary
    CHECK(r.length(0) == 32);
}
