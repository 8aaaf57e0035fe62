// decoder-contrastive through the engine, with the shipped target (expert) and draft (amateur): its tokens against
// a hand computation of Li et al.'s score from both models' logits, sampling that stays inside the plausible head,
// alpha = 1 being greedy, the refusals (no second model, bad parameters), and its output next to plain requests.
#include <basalt/basalt.h>

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "test-support.hpp"

using Catch::Matchers::Contains;
using test::last_error;
using test::Model;

namespace {

basalt_engine_params engine_params(const basalt_model* second, uint32_t parallel = 1, uint32_t max_batch = 512,
                                   uint32_t chunk = 0) {
    basalt_engine_params p{};
    p.struct_size = sizeof(p);
    p.n_parallel = parallel;
    p.n_ctx = 128;
    p.max_batch_tokens = max_batch;
    p.prefill_chunk = chunk;
    p.second_model = second;
    return p;
}

using test::Request;

std::vector<int32_t> tokenize(const basalt_model* m, const std::string& text) {
    std::vector<int32_t> ids(text.size() + 8);
    size_t n = 0;
    REQUIRE(basalt_tokenize(m, text.data(), text.size(), BASALT_TOKENIZE_ADD_SPECIAL, ids.data(), ids.size(), &n) ==
            BASALT_OK);
    ids.resize(n);
    return ids;
}

basalt_request_params request(const std::vector<int32_t>& prompt, int32_t max_tokens, const char* decoder,
                              const char* samplers = "greedy") {
    basalt_request_params p{};
    p.struct_size = sizeof(p);
    p.tokens = prompt.data();
    p.n_tokens = prompt.size();
    p.samplers = samplers;
    p.decoder = decoder;
    p.max_tokens = max_tokens;
    p.seed = -1;
    p.flags = BASALT_REQUEST_IGNORE_EOG;  // fixed lengths, whatever the models write
    return p;
}

std::vector<int32_t> tokens_of(basalt_request* r) {
    size_t n = 0;
    float score = 0;
    REQUIRE(basalt_request_hypothesis(r, 0, nullptr, 0, &n, &score) == BASALT_OK);
    std::vector<int32_t> out(n);
    REQUIRE(basalt_request_hypothesis(r, 0, out.data(), out.size(), &n, &score) == BASALT_OK);
    return out;
}

// One request alone in its own engine; its tokens.
std::vector<int32_t> solo(basalt_runtime* rt, const basalt_model* m, const basalt_model* second,
                          const basalt_request_params& p) {
    test::Engine e(rt, m, engine_params(second));
    Request r;
    REQUIRE(basalt_engine_submit(e.e, &p, &r.r) == BASALT_OK);
    REQUIRE(basalt_engine_run(e.e) == BASALT_OK);
    INFO(basalt_request_error(r.r));
    REQUIRE(basalt_request_finish_reason(r.r) == BASALT_FINISH_LENGTH);
    return tokens_of(r.r);
}

// The last-position logits of a model after the whole prefix (a fresh session each time).
std::vector<double> last_logits(basalt_runtime* rt, const basalt_model* m, const std::vector<int32_t>& prefix) {
    basalt_session_params sp{};
    sp.struct_size = sizeof(sp);
    sp.n_ctx = 128;
    basalt_session* s = nullptr;
    REQUIRE(basalt_session_create(rt, m, &sp, &s) == BASALT_OK);
    const std::vector<float> rows = test::decode_rows(s, prefix, 0, 0);
    const size_t nv = basalt_session_n_vocab(s);
    basalt_session_free(s);
    return std::vector<double>(rows.end() - static_cast<std::ptrdiff_t>(nv), rows.end());
}

// Li et al.'s score in double: log p_e - log p_a(tau) where p_e >= alpha max p_e, -inf elsewhere.
std::vector<double> contrastive_scores(const std::vector<double>& expert, const std::vector<double>& amateur,
                                       double alpha, double tau) {
    auto log_softmax = [](std::vector<double> x, double scale) {
        double mx = -INFINITY;
        for (double& v : x) {
            v *= scale;
            mx = std::max(mx, v);
        }
        double sum = 0;
        for (double v : x) sum += std::exp(v - mx);
        for (double& v : x) v -= mx + std::log(sum);
        return x;
    };
    const std::vector<double> le = log_softmax(expert, 1.0), la = log_softmax(amateur, 1.0 / tau);
    double max_pe = 0;
    for (double v : le) max_pe = std::max(max_pe, std::exp(v));
    std::vector<double> s(le.size(), -INFINITY);
    for (size_t v = 0; v < le.size(); ++v) {
        if (std::exp(le[v]) >= alpha * max_pe) s[v] = le[v] - la[v];
    }
    return s;
}

struct Shipped {
    test::Runtime rt{BASALT_RUNTIME_NO_ENV_PLUGINS};
    Model target{"target"};
    Model draft{"draft"};
    std::vector<int32_t> prompt = tokenize(target.m, "The best way to");
};

}  // namespace

TEST_CASE("contrastive picks the argmax of log p_expert - log p_amateur over the plausible head", "[contrastive]") {
    Shipped s;
    struct Case {
        const char* spec;
        double alpha, tau;
    };
    const Case cases[] = {{"contrastive", 0.1, 1.0}, {"contrastive:alpha=0.05,tau=0.5", 0.05, 0.5}};
    size_t differs_from_expert = 0;
    for (const Case& c : cases) {
        INFO(c.spec);
        const std::vector<int32_t> got = solo(s.rt.rt, s.target.m, s.draft.m, request(s.prompt, 10, c.spec));
        REQUIRE(got.size() == 10);
        std::vector<int32_t> prefix = s.prompt;
        for (size_t i = 0; i < got.size(); ++i) {
            INFO("step " << i);
            const std::vector<double> e = last_logits(s.rt.rt, s.target.m, prefix);
            const std::vector<double> a = last_logits(s.rt.rt, s.draft.m, prefix);
            const std::vector<double> score = contrastive_scores(e, a, c.alpha, c.tau);
            size_t best = 0, expert_best = 0;
            for (size_t v = 1; v < score.size(); ++v) {
                if (score[v] > score[best]) best = v;
                if (e[v] > e[expert_best]) expert_best = v;
            }
            // the engine's choice is the best score (a near-tie within float rounding may go either way)
            REQUIRE(std::isfinite(score[static_cast<size_t>(got[i])]));
            CHECK(score[static_cast<size_t>(got[i])] >= score[best] - 1e-4);
            if (score[best] - 1e-4 > [&] {
                    double second = -INFINITY;
                    for (size_t v = 0; v < score.size(); ++v)
                        if (v != best) second = std::max(second, score[v]);
                    return second;
                }()) {
                CHECK(static_cast<size_t>(got[i]) == best);
            }
            if (static_cast<size_t>(got[i]) != expert_best) ++differs_from_expert;
            prefix.push_back(got[i]);
        }
    }
    CHECK(differs_from_expert > 0);  // the amateur changed at least one choice: the contrast is really applied
}

TEST_CASE("contrastive samples through the request's chain, only inside the head, and alpha = 1 is greedy",
          "[contrastive]") {
    Shipped s;
    const std::vector<int32_t> got =
        solo(s.rt.rt, s.target.m, s.draft.m, request(s.prompt, 12, "contrastive:alpha=0.2", "temp:3;dist:seed=7"));
    std::vector<int32_t> prefix = s.prompt;
    for (size_t i = 0; i < got.size(); ++i) {
        INFO("step " << i);
        const std::vector<double> score = contrastive_scores(last_logits(s.rt.rt, s.target.m, prefix),
                                                             last_logits(s.rt.rt, s.draft.m, prefix), 0.2, 1.0);
        CHECK(std::isfinite(score[static_cast<size_t>(got[i])]));
        prefix.push_back(got[i]);
    }
    // the same seed gives the same draws
    CHECK(solo(s.rt.rt, s.target.m, s.draft.m, request(s.prompt, 12, "contrastive:alpha=0.2", "temp:3;dist:seed=7")) ==
          got);
    // alpha = 1 leaves only the expert's argmax: plain greedy decoding of the expert
    CHECK(solo(s.rt.rt, s.target.m, s.draft.m, request(s.prompt, 16, "contrastive:alpha=1")) ==
          solo(s.rt.rt, s.target.m, nullptr, request(s.prompt, 16, "sample")));
}

TEST_CASE("contrastive is refused without an amateur and with bad parameters, naming them", "[contrastive]") {
    Shipped s;
    test::Engine alone(s.rt.rt, s.target.m, engine_params(nullptr));
    Request r;
    basalt_request_params p = request(s.prompt, 4, "contrastive:alpha=0.1");
    CHECK(basalt_engine_submit(alone.e, &p, &r.r) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(last_error(), Contains("decoder 'contrastive'") && Contains("needs a second model"));
    CHECK(r.r == nullptr);

    test::Engine both(s.rt.rt, s.target.m, engine_params(s.draft.m));
    const std::pair<const char*, const char*> bad[] = {
        {"contrastive:alpha=0", "parameter 'alpha' = '0' is not a number in (0, 1]"},
        {"contrastive:alpha=1.5", "parameter 'alpha' = '1.5'"},
        {"contrastive:tau=0", "parameter 'tau' = '0' is not a temperature > 0"},
        {"contrastive:tau=x", "parameter 'tau' = 'x' is not a finite number"},
        {"contrastive:beta=2", "unknown parameter 'beta' (accepted: alpha, tau)"}};
    for (const auto& [spec, message] : bad) {
        INFO(spec);
        p.decoder = spec;
        CHECK(basalt_engine_submit(both.e, &p, &r.r) == BASALT_ERR_INVALID_ARGUMENT);
        CHECK_THAT(last_error(), Contains("decoder 'contrastive'") && Contains(message));
    }
    basalt_decoder_needs needs{};
    needs.struct_size = sizeof(needs);
    REQUIRE(basalt_decoder_requirements(s.rt.rt, "contrastive:alpha=0.1", &needs) == BASALT_OK);
    CHECK(needs.n_seq == 1);
    CHECK(needs.n_models == 2);
}

TEST_CASE("a contrastive request next to plain requests gets its solo output", "[contrastive]") {
    Shipped s;
    const std::vector<int32_t> other = tokenize(s.target.m, "A man is known by");
    const std::vector<int32_t> third = tokenize(s.target.m, "Never trust a");
    const basalt_request_params reqs[] = {request(s.prompt, 14, "contrastive:alpha=0.1"), request(other, 12, "sample"),
                                          request(third, 10, "sample", "top_k:40;temp:0.8;dist:seed=3"),
                                          request(other, 9, "contrastive:alpha=0.05,tau=0.7", "temp:1.5;dist:seed=11")};
    std::vector<std::vector<int32_t>> want;
    for (const auto& p : reqs) want.push_back(solo(s.rt.rt, s.target.m, s.draft.m, p));
    for (uint32_t chunk : {0u, 3u}) {
        test::Engine e(s.rt.rt, s.target.m, engine_params(s.draft.m, 4, 8, chunk));
        Request r[4];
        for (int i = 0; i < 4; ++i) REQUIRE(basalt_engine_submit(e.e, &reqs[i], &r[i].r) == BASALT_OK);
        REQUIRE(basalt_engine_run(e.e) == BASALT_OK);
        for (int i = 0; i < 4; ++i) {
            CAPTURE(chunk, i);
            CHECK(basalt_request_finish_reason(r[i].r) == BASALT_FINISH_LENGTH);
            CHECK(tokens_of(r[i].r) == want[static_cast<size_t>(i)]);
        }
        const char* name = nullptr;
        double value = 0;
        REQUIRE(basalt_request_decoder_stat(r[0].r, 0, &name, &value) == BASALT_OK);
        CHECK(std::string(name) == "plausible_mean");
        CHECK(value >= 1.0);
    }
}
