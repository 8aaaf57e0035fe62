// decoder-speculative through the engine: greedy speculation equals plain greedy token for token (draft model
// and prompt lookup), stochastic speculation gives the target's distribution (a chi-square test that a broken
// verifier fails), refusals (chains that are not draft-safe, no draft model), and speculative requests sharing
// batches with plain ones.
#include <basalt/basalt.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "test-support.hpp"

using Catch::Matchers::Contains;

namespace {

using test::shipped;

basalt_engine_params engine_params(const basalt_model* second, uint32_t parallel = 1, uint32_t ctx = 128) {
    basalt_engine_params p{};
    p.struct_size = sizeof(p);
    p.n_parallel = parallel;
    p.n_ctx = ctx;
    p.n_threads = 2;
    p.second_model = second;
    return p;
}

using test::Request;

basalt_request_params request(const char* prompt, int32_t max_tokens, const char* samplers, const char* decoder,
                              int64_t seed = -1) {
    basalt_request_params p{};
    p.struct_size = sizeof(p);
    p.prompt = prompt;
    p.prompt_len = SIZE_MAX;
    p.samplers = samplers;
    p.decoder = decoder;
    p.max_tokens = max_tokens;
    p.seed = seed;
    return p;
}

basalt_status submit(basalt_engine* e, const basalt_request_params& p, basalt_request** out) {
    return basalt_engine_submit(e, &p, out);
}

std::vector<int32_t> tokens_of(basalt_request* r) {
    return test::hypothesis_tokens(r);
}

double stat(basalt_request* r, const std::string& name) {
    const char* key = nullptr;
    double value = 0;
    for (size_t i = 0; basalt_request_decoder_stat(r, i, &key, &value) == BASALT_OK; ++i) {
        if (name == key) return value;
    }
    FAIL("no decoder figure " << name);
    return 0;
}

// Runs one request alone; returns its tokens and finish reason.
std::pair<std::vector<int32_t>, int32_t> solo(basalt_runtime* rt, const basalt_model* m, const basalt_model* second,
                                              const basalt_request_params& p, uint32_t ctx = 128) {
    test::Engine e(rt, m, engine_params(second, 1, ctx));
    Request r;
    const basalt_status st = basalt_engine_submit(e.e, &p, &r.r);
    INFO(basalt_last_error());
    REQUIRE(st == BASALT_OK);
    REQUIRE(basalt_engine_run(e.e) == BASALT_OK);
    INFO(basalt_request_error(r.r));
    REQUIRE(basalt_request_finish_reason(r.r) != BASALT_FINISH_ERROR);
    return {tokens_of(r.r), basalt_request_finish_reason(r.r)};
}

const char* const kPrompts[] = {"The cat", "Once upon a time there was", "A fool and his money", "You will be",
                                "Q: What is the answer?\nA:"};

}  // namespace

TEST_CASE("greedy speculative decoding equals plain greedy decoding token for token", "[decoder][speculative]") {
    test::Runtime rt(BASALT_RUNTIME_NO_ENV_PLUGINS);
    struct Pair {
        std::string target, draft;
    };
    const Pair pairs[] = {{shipped("target"), shipped("draft")},
                          {test::golden_model("tiny-llama-f32.gguf"), test::golden_model("tiny-llama-f32.gguf")},
                          {test::golden_model("tiny-llama-f32.gguf"), test::golden_model("tiny-llama-q4_0.gguf")},
                          {test::golden_model("tiny-qwen2-f32.gguf"), test::golden_model("tiny-qwen2-q8_0.gguf")}};
    for (const Pair& pair : pairs) {
        test::Model target(pair.target), draft(pair.draft);
        for (const char* prompt : kPrompts) {
            const auto want = solo(rt.rt, target.m, nullptr, request(prompt, 40, "greedy", "sample"));
            REQUIRE(want.first.size() > 0);
            for (const char* dec :
                 {"speculative:k=1", "speculative:k=4", "speculative:k=7", "speculative:k=6,adaptive=1",
                  "speculative:source=ngram,k=5", "speculative:source=ngram,ngram_max=1"}) {
                CAPTURE(pair.target, pair.draft, prompt, dec);
                const auto got = solo(rt.rt, target.m, draft.m, request(prompt, 40, "greedy", dec));
                CHECK(got == want);
            }
        }
        // Up to the end of the context: speculation never drafts past it, and finishes as plain decoding does.
        const auto want = solo(rt.rt, target.m, nullptr, request("The cat", -1, "greedy", "sample"), 48);
        const auto got = solo(rt.rt, target.m, draft.m, request("The cat", -1, "greedy", "speculative:k=5"), 48);
        CHECK(got == want);
        CHECK(got.second == BASALT_FINISH_CONTEXT);
    }
}

TEST_CASE("a draft identical to the target is always accepted, the figures count drafts and verifications",
          "[decoder][speculative]") {
    test::Runtime rt(BASALT_RUNTIME_NO_ENV_PLUGINS);
    test::Model target(shipped("target")), copy(shipped("target"));
    test::Engine e(rt.rt, target.m, engine_params(copy.m));
    Request r;
    // adaptive=off: a draft as costly as the target never pays, so the adaptive policy would stop drafting.
    REQUIRE(submit(e.e, request("The cat", 41, "greedy", "speculative:k=4,adaptive=off"), &r.r) == BASALT_OK);
    REQUIRE(basalt_engine_run(e.e) == BASALT_OK);
    // 1 token from the prompt's logits, then 8 verifications of 4 drafts + 1 bonus token each.
    CHECK(tokens_of(r.r).size() == 41);
    CHECK(stat(r.r, "acceptance_rate") == 1.0);
    CHECK(stat(r.r, "drafted") == 32);
    CHECK(stat(r.r, "verify_steps") == 8);
    CHECK(stat(r.r, "tokens_per_verify") == 5.0);
}

TEST_CASE("the adaptive draft length decodes plainly when nothing is accepted and keeps drafting when all is",
          "[decoder][speculative]") {
    test::Runtime rt(BASALT_RUNTIME_NO_ENV_PLUGINS);
    {  // Two unrelated random-weight models with one vocabulary: the draft's tokens are (almost) never the target's.
        test::Model target(test::golden_model("tiny-llama-f32.gguf")), draft(test::golden_model("tiny-phi3-f32.gguf"));
        const auto want = solo(rt.rt, target.m, nullptr, request("The cat", 96, "greedy", "sample"), 160);
        test::Engine e(rt.rt, target.m, engine_params(draft.m, 1, 160));
        Request r;
        REQUIRE(submit(e.e, request("The cat", 96, "greedy", "speculative:k=4"), &r.r) == BASALT_OK);
        REQUIRE(basalt_engine_run(e.e) == BASALT_OK);
        CHECK(tokens_of(r.r) == want.first);
        CAPTURE(stat(r.r, "acceptance_rate"), stat(r.r, "verify_steps"), stat(r.r, "probes"));
        CHECK(stat(r.r, "acceptance_rate") < 0.1);
        // The first round drafts (it measures), then plain steps with a probe round now and then.
        CHECK(stat(r.r, "plain_rounds") >= 0.8 * stat(r.r, "verify_steps"));
        CHECK(stat(r.r, "drafted") < 20);
    }
    {  // Prompt lookup (drafts that cost nothing) with every draft accepted: verifying what it finds cannot lose
        // whatever the measured step times, so the adaptive policy verifies every draft a fixed k verifies, and the
        // rounds (hence the text, which accept_all makes depend on them) are the same. (With a draft model the
        // answer depends on this machine's draft step: tests/test-speculation-policy.cpp decides it on chosen
        // costs.)
        test::Model target(shipped("target"));
        const char* prompt = "one two three one two three one two three one two";
        Request fixed, adaptive;
        for (auto [dec, r] : {std::pair{"speculative:source=ngram,k=4,verify=accept_all,adaptive=off", &fixed},
                              std::pair{"speculative:source=ngram,k=4,verify=accept_all", &adaptive}}) {
            test::Engine e(rt.rt, target.m, engine_params(nullptr));
            REQUIRE(submit(e.e, request(prompt, 61, "greedy", dec), &r->r) == BASALT_OK);
            REQUIRE(basalt_engine_run(e.e) == BASALT_OK);
        }
        CAPTURE(stat(fixed.r, "drafted"), stat(adaptive.r, "verify_steps"), stat(adaptive.r, "plain_rounds"));
        CHECK(stat(adaptive.r, "acceptance_rate") == 1.0);
        CHECK(stat(adaptive.r, "drafted") >= 20);
        CHECK(tokens_of(adaptive.r) == tokens_of(fixed.r));
        CHECK(stat(adaptive.r, "drafted") == stat(fixed.r, "drafted"));
        CHECK(stat(adaptive.r, "plain_rounds") == stat(fixed.r, "plain_rounds"));
        CHECK(stat(adaptive.r, "probes") == 0);
    }
}

namespace {

// Softmax of logits at temperature 1, restricted to the top_k largest when top_k > 0.
std::vector<double> chain_probs(const float* logits, size_t n, size_t top_k) {
    std::vector<double> p(n, 0.0);
    std::vector<size_t> idx(n);
    for (size_t i = 0; i < n; ++i) idx[i] = i;
    const size_t keep = top_k > 0 ? std::min(top_k, n) : n;
    std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(keep), idx.end(),
                      [&](size_t a, size_t b) { return logits[a] > logits[b]; });
    const double mx = logits[idx[0]];
    double sum = 0;
    for (size_t i = 0; i < keep; ++i) sum += std::exp(double{logits[idx[i]]} - mx);
    for (size_t i = 0; i < keep; ++i) p[idx[i]] = std::exp(double{logits[idx[i]]} - mx) / sum;
    return p;
}

// The exact joint distribution of the first two tokens under the chain (the target alone), by running the
// target on the prompt and on prompt + t0 for every t0 worth counting.
std::map<std::pair<int32_t, int32_t>, double> joint(basalt_runtime* rt, const basalt_model* m,
                                                    const std::vector<int32_t>& prompt, size_t top_k, double floor) {
    basalt_session_params sp{};
    sp.struct_size = sizeof(sp);
    sp.n_ctx = 64;
    sp.n_threads = 2;
    basalt_session* s = nullptr;
    REQUIRE(basalt_session_create(rt, m, &sp, &s) == BASALT_OK);
    const size_t nv = basalt_session_n_vocab(s);
    std::vector<float> l0 = test::decode_rows(s, prompt, 0, 0);
    const std::vector<double> p0 = chain_probs(l0.data() + (prompt.size() - 1) * nv, nv, top_k);
    std::map<std::pair<int32_t, int32_t>, double> out;
    for (size_t t0 = 0; t0 < nv; ++t0) {
        if (p0[t0] < floor) continue;  // its cells go to the pooled rest
        REQUIRE(basalt_session_seq_truncate(s, 0, static_cast<uint32_t>(prompt.size())) == BASALT_OK);
        const std::vector<float> l1 =
            test::decode_rows(s, {static_cast<int32_t>(t0)}, static_cast<int32_t>(prompt.size()), 0);
        const std::vector<double> p1 = chain_probs(l1.data(), nv, top_k);
        for (size_t t1 = 0; t1 < nv; ++t1) {
            if (p1[t1] > 0) out[{static_cast<int32_t>(t0), static_cast<int32_t>(t1)}] = p0[t0] * p1[t1];
        }
    }
    basalt_session_free(s);
    return out;
}

// Pearson's chi-square of observed pairs against the expected joint: cells expecting fewer than 5 are pooled
// (with everything the joint leaves out) into one. Returns {statistic, degrees of freedom}.
std::pair<double, int> chi_square(const std::map<std::pair<int32_t, int32_t>, double>& p,
                                  const std::map<std::pair<int32_t, int32_t>, int>& seen, int n) {
    double stat = 0, rest_expected = n, rest_seen = n;
    int cells = 0;
    for (const auto& [cell, prob] : p) {
        const double expected = prob * n;
        if (expected < 5) continue;
        const auto it = seen.find(cell);
        const double o = it == seen.end() ? 0 : it->second;
        stat += (o - expected) * (o - expected) / expected;
        rest_expected -= expected;
        rest_seen -= o;
        ++cells;
    }
    if (rest_expected >= 1) {
        stat += (rest_seen - rest_expected) * (rest_seen - rest_expected) / rest_expected;
        ++cells;
    }
    return {stat, cells - 1};
}

// The chi-square value a df-degree statistic exceeds with probability 1e-4 (Wilson-Hilferty).
double chi_square_critical(int df) {
    const double z = 3.719;  // standard normal quantile of 1 - 1e-4
    const double a = 2.0 / (9.0 * df);
    return df * std::pow(1 - a + z * std::sqrt(a), 3);
}

}  // namespace

TEST_CASE("stochastic speculative decoding gives the target's distribution, a broken verifier does not",
          "[decoder][speculative]") {
    test::Runtime rt(BASALT_RUNTIME_NO_ENV_PLUGINS);
    test::Model target(shipped("target")), draft(shipped("draft"));
    const char* prompt = "The";
    std::vector<int32_t> ptoks(16);
    size_t np = 0;
    REQUIRE(basalt_tokenize(target.m, prompt, SIZE_MAX, BASALT_TOKENIZE_ADD_SPECIAL, ptoks.data(), ptoks.size(), &np) ==
            BASALT_OK);
    ptoks.resize(np);
    const int n = 1000;
    struct Case {
        const char* chain;
        size_t top_k;
    };
    for (const Case& c : {Case{"temp:1;dist", 0}, Case{"top_k:k=6;dist", 6}}) {
        const auto p = joint(rt.rt, target.m, ptoks, c.top_k, 5.0 / n);
        // adaptive=off: a fixed k keeps the seeded draws (and so this statistical test's outcome) reproducible.
        for (const char* dec : {"speculative:k=3,adaptive=off", "speculative:k=3,verify=accept_all,adaptive=off"}) {
            test::Engine e(rt.rt, target.m, engine_params(draft.m, 64, 16));
            std::vector<Request> rs(static_cast<size_t>(n));
            for (int i = 0; i < n; ++i) {
                // max_tokens 5 leaves room for 3 drafts after the first token: token 2 is decided by verification.
                const basalt_status st =
                    submit(e.e, request(prompt, 5, c.chain, dec, 1000 + i), &rs[static_cast<size_t>(i)].r);
                INFO(basalt_last_error());
                REQUIRE(st == BASALT_OK);
            }
            REQUIRE(basalt_engine_run(e.e) == BASALT_OK);
            std::map<std::pair<int32_t, int32_t>, int> seen;
            for (auto& r : rs) {
                const std::vector<int32_t> t = tokens_of(r.r);
                REQUIRE(t.size() >= 2);  // the trained model does not end a text after one token here
                seen[{t[0], t[1]}] += 1;
            }
            const auto [chi2, df] = chi_square(p, seen, n);
            const double crit = chi_square_critical(df);
            CAPTURE(c.chain, dec, chi2, df, crit);
            REQUIRE(df >= 5);
            if (std::string(dec).find("accept_all") != std::string::npos) {
                CHECK(chi2 > crit);  // the draft's distribution shows
            } else {
                CHECK(chi2 < crit);
            }
        }
    }
}

TEST_CASE("speculative requests refuse chains that are not draft-safe and need a draft model",
          "[decoder][speculative]") {
    test::Runtime rt(BASALT_RUNTIME_NO_ENV_PLUGINS);
    test::Model target(shipped("target")), draft(shipped("draft"));
    {
        test::Engine e(rt.rt, target.m, engine_params(draft.m));
        Request r;
        CHECK(submit(e.e, request("The cat", 8, "penalties:repeat=1.2;top_k:5;dist", "speculative"), &r.r) ==
              BASALT_ERR_INVALID_ARGUMENT);
        CHECK_THAT(test::last_error(), Contains("'penalties'") && Contains("not draft-safe"));
        CHECK(submit(e.e, request("The cat", 8, "greedy", "speculative:k=0"), &r.r) == BASALT_ERR_INVALID_ARGUMENT);
        CHECK_THAT(test::last_error(), Contains("'k'"));
        CHECK(submit(e.e, request("The cat", 8, "greedy", "speculative:draft=1"), &r.r) == BASALT_ERR_INVALID_ARGUMENT);
        CHECK_THAT(test::last_error(), Contains("unknown parameter 'draft'") && Contains("accepted: k, adaptive"));
    }
    test::Engine e(rt.rt, target.m, engine_params(nullptr));
    Request r;
    CHECK(submit(e.e, request("The cat", 8, "greedy", "speculative"), &r.r) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(test::last_error(), Contains("needs a second model"));
    // Prompt lookup needs no second model.
    CHECK(submit(e.e, request("The cat", 8, "greedy", "speculative:source=ngram"), &r.r) == BASALT_OK);
    REQUIRE(basalt_engine_run(e.e) == BASALT_OK);
    CHECK(basalt_request_finish_reason(r.r) == BASALT_FINISH_LENGTH);
}

TEST_CASE("speculative requests sharing batches with plain ones give their solo output", "[decoder][speculative]") {
    test::Runtime rt(BASALT_RUNTIME_NO_ENV_PLUGINS);
    test::Model target(shipped("target")), draft(shipped("draft"));
    struct Job {
        const char* prompt;
        const char* chain;
        const char* decoder;
        int64_t seed;
    };
    const Job jobs[] = {{"The cat", "greedy", "speculative:k=4", -1},
                        // seeded stochastic speculation reproduces its draws with a fixed k (adaptive=off): the
                        // adaptive k follows the measured step times, so the draws (not their distribution) vary
                        {"Once upon a time", "top_k:k=20;temp:0.9;dist", "speculative:k=3,adaptive=off", 7},
                        {"A fool and his money", "greedy", "sample", -1},
                        {"You will be", "penalties:repeat=1.3;top_k:k=10;dist", "sample", 3},
                        {"Q: What is", "greedy", "speculative:source=ngram", -1},
                        {"The dog", "min_p:p=0.05;dist", "speculative:k=2,adaptive=off", 11},
                        {"The bird", "greedy", "speculative:k=3,adaptive=on", -1}};
    std::vector<std::pair<std::vector<int32_t>, int32_t>> want;
    for (const Job& j : jobs)
        want.push_back(solo(rt.rt, target.m, draft.m, request(j.prompt, 30, j.chain, j.decoder, j.seed)));
    test::Engine e(rt.rt, target.m, engine_params(draft.m, 6));
    std::vector<Request> rs(std::size(jobs));
    for (size_t i = 0; i < std::size(jobs); ++i) {
        const Job& j = jobs[i];
        REQUIRE(submit(e.e, request(j.prompt, 30, j.chain, j.decoder, j.seed), &rs[i].r) == BASALT_OK);
    }
    REQUIRE(basalt_engine_run(e.e) == BASALT_OK);
    for (size_t i = 0; i < std::size(jobs); ++i) {
        CAPTURE(i, jobs[i].decoder);
        CHECK(tokens_of(rs[i].r) == want[i].first);
        CHECK(basalt_request_finish_reason(rs[i].r) == want[i].second);
    }
}
