// Sessions through the C API: sequence truncation (speculative decoding drops rejected draft tokens) against
// uncut runs, with forks sharing the cut block.
#include <basalt/basalt.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "test-support.hpp"

using Catch::Matchers::Contains;

namespace {

std::string golden_model(const std::string& name) {
    return std::string(BASALT_TEST_DATA_DIR) + "/golden/models/" + name;
}

// The golden prompt of tiny-llama (README of the golden data).
const std::vector<int32_t> kPrompt = {1,   472, 294, 373, 501, 360, 310, 308, 289, 347, 260,
                                      312, 424, 321, 296, 334, 323, 312, 504, 334, 484, 261};

struct SessionOptions {
    uint32_t n_ctx = 128;
    uint32_t n_batch = 0;
    uint32_t n_seq = 1;
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
        const auto start = static_cast<int32_t>(length(seq));
        std::vector<int32_t> pos(toks.size()), seqs(toks.size(), seq);
        std::vector<int8_t> want(toks.size(), 1);
        for (size_t i = 0; i < toks.size(); ++i) pos[i] = start + static_cast<int32_t>(i);
        basalt_batch b{};
        b.struct_size = sizeof(b);
        b.n_tokens = toks.size();
        b.tokens = toks.data();
        b.positions = pos.data();
        b.seq_ids = seqs.data();
        b.want_logits = want.data();
        const basalt_status st = basalt_session_decode(session, &b);
        INFO(basalt_last_error());
        REQUIRE(st == BASALT_OK);
        std::vector<float> out;
        for (size_t r = 0; r < basalt_session_n_outputs(session); ++r) {
            const float* l = nullptr;
            REQUIRE(basalt_session_logits(session, r, &l) == BASALT_OK);
            out.insert(out.end(), l, l + n_vocab);
        }
        return out;
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

TEST_CASE("session: a fork cut back into the block it shares copies it; the original is untouched", "[session]") {
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
