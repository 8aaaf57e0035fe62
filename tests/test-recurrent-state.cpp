// The recurrent-state cache of a hybrid model (tiny-qwen35: Gated DeltaNet layers with per-sequence conv and
// delta-rule state beside the KV cache of its attention layers) through the C API: sequences decoded together in one
// ragged batch equal each decoded alone; a fork continues from a copy of the state; a dropped sequence's slot starts
// from zero again; truncation (other than to 0) and prefix reuse are refused, the first naming why.
#include <basalt/basalt.h>

#include <cmath>
#include <string>
#include <vector>

#include "test-support.hpp"

using Catch::Matchers::Contains;

namespace {

const std::vector<int32_t> kPrompt = {456, 443, 308, 258, 256, 72,  295, 11,  260,
                                      371, 269, 79,  507, 260, 446, 282, 426, 13};

struct Hybrid {
    test::Runtime rt{BASALT_RUNTIME_NO_ENV_PLUGINS};
    basalt_model* model = nullptr;
    basalt_session* session = nullptr;

    explicit Hybrid(uint32_t n_seq, uint32_t n_batch = 0) {
        const std::string path = test::golden_model("tiny-qwen35-f32.gguf");
        REQUIRE(basalt_model_load(rt.rt, path.c_str(), nullptr, &model) == BASALT_OK);
        basalt_session_params p{};
        p.struct_size = sizeof(p);
        p.n_ctx = 128;
        p.n_batch = n_batch;
        p.n_seq_max = n_seq;
        p.n_threads = 2;
        const basalt_status st = basalt_session_create(rt.rt, model, &p, &session);
        INFO(basalt_last_error());
        REQUIRE(st == BASALT_OK);
    }
    ~Hybrid() {
        basalt_session_free(session);
        basalt_model_free(model);
    }
    Hybrid(const Hybrid&) = delete;
    Hybrid& operator=(const Hybrid&) = delete;

    uint32_t length(int32_t seq) const {
        uint32_t n = 0;
        REQUIRE(basalt_session_seq_length(session, seq, &n) == BASALT_OK);
        return n;
    }
    std::vector<float> decode(const std::vector<int32_t>& toks, int32_t seq) {
        return test::decode_rows(session, toks, static_cast<int32_t>(length(seq)), seq);
    }
};

double max_abs(const float* a, const float* b, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; ++i) m = std::max(m, std::abs(static_cast<double>(a[i]) - b[i]));
    return m;
}

}  // namespace

TEST_CASE("recurrent state: interleaved sequences in one batch equal each decoded alone", "[recurrent]") {
    const std::vector<int32_t> a(kPrompt.begin(), kPrompt.begin() + 11), b(kPrompt.begin() + 5, kPrompt.end());
    std::vector<float> alone_a, alone_b;
    {
        Hybrid h(1);
        alone_a = h.decode(a, 0);
    }
    {
        Hybrid h(1);
        alone_b = h.decode(b, 0);
    }
    // One ragged batch, rows of the two sequences alternating (then b's tail), in passes of 4 rows.
    Hybrid h(2, 4);
    std::vector<int32_t> toks, pos, seqs;
    size_t ia = 0, ib = 0;
    while (ia < a.size() || ib < b.size()) {
        if (ia < a.size()) {
            toks.push_back(a[ia]);
            pos.push_back(static_cast<int32_t>(ia++));
            seqs.push_back(0);
        }
        if (ib < b.size()) {
            toks.push_back(b[ib]);
            pos.push_back(static_cast<int32_t>(ib++));
            seqs.push_back(1);
        }
    }
    std::vector<int8_t> want(toks.size(), 1);
    basalt_batch batch{};
    batch.struct_size = sizeof(batch);
    batch.n_tokens = toks.size();
    batch.tokens = toks.data();
    batch.positions = pos.data();
    batch.seq_ids = seqs.data();
    batch.want_logits = want.data();
    REQUIRE(basalt_session_decode(h.session, &batch) == BASALT_OK);
    const size_t V = basalt_session_n_vocab(h.session);
    size_t ra = 0, rb = 0;
    for (size_t i = 0; i < toks.size(); ++i) {
        const float* row = nullptr;
        REQUIRE(basalt_session_logits(h.session, i, &row) == BASALT_OK);
        const float* alone = seqs[i] == 0 ? alone_a.data() + V * ra++ : alone_b.data() + V * rb++;
        INFO("row " << i << " of sequence " << seqs[i]);
        CHECK(max_abs(row, alone, V) <= 1e-5);
    }
}

TEST_CASE("recurrent state: a fork continues from a copy, a dropped sequence starts from zero", "[recurrent]") {
    const std::vector<int32_t> head(kPrompt.begin(), kPrompt.begin() + 9), x = {300, 301, 302}, y = {400, 401};
    std::vector<int32_t> full_x = head, full_y = head;
    full_x.insert(full_x.end(), x.begin(), x.end());
    full_y.insert(full_y.end(), y.begin(), y.end());
    std::vector<float> want_x, want_y;
    {
        Hybrid h(1);
        want_x = h.decode(full_x, 0);
    }
    {
        Hybrid h(1);
        want_y = h.decode(full_y, 0);
    }
    Hybrid h(3);
    const size_t V = basalt_session_n_vocab(h.session);
    h.decode(head, 0);
    REQUIRE(basalt_session_seq_fork(h.session, 0, 1) == BASALT_OK);
    const auto got_y = h.decode(y, 1);  // the fork first: the source's state must be untouched by it
    const auto got_x = h.decode(x, 0);
    CHECK(max_abs(got_x.data(), want_x.data() + V * head.size(), V * x.size()) <= 1e-5);
    CHECK(max_abs(got_y.data(), want_y.data() + V * head.size(), V * y.size()) <= 1e-5);
    // Sequence 1 dropped and reused: its new tokens see none of the old state.
    REQUIRE(basalt_session_seq_drop(h.session, 1) == BASALT_OK);
    const auto again = h.decode(full_x, 1);
    CHECK(max_abs(again.data(), want_x.data(), V * full_x.size()) <= 1e-5);
    // Truncation to 0 starts the sequence again.
    REQUIRE(basalt_session_seq_truncate(h.session, 0, 0) == BASALT_OK);
    const auto restart = h.decode(full_y, 0);
    CHECK(max_abs(restart.data(), want_y.data(), V * full_y.size()) <= 1e-5);
}

TEST_CASE("recurrent state: cutting a sequence back is refused naming why, prefixes are not reused", "[recurrent]") {
    Hybrid h(2);
    h.decode(kPrompt, 0);
    CHECK(basalt_session_seq_truncate(h.session, 0, 10) == BASALT_ERR_UNSUPPORTED);
    CHECK_THAT(test::last_error(), Contains("recurrent state of the hybrid model 'qwen35'") &&
                                       Contains("truncate sequence 0 to 10 of its 18 tokens"));
    CHECK(h.length(0) == kPrompt.size());  // untouched
    size_t matched = 99;
    CHECK(basalt_session_prefix_attach(h.session, 1, kPrompt.data(), kPrompt.size(), &matched) == BASALT_OK);
    CHECK(matched == 0);
}
