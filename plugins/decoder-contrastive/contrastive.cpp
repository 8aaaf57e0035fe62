// decoder-contrastive: contrastive decoding (Li et al. 2022), component decoder 'contrastive'. Model 0 is the
// expert, model 1 the amateur (`--amateur draft`); both get the same tokens each round (the prompt, then the last
// token), so their rows come from the same engine step. From the two last rows:
//   log p_e = log_softmax(expert logits), log p_a = log_softmax(amateur logits / tau)
//   score(v) = log p_e(v) - log p_a(v)   when p_e(v) >= alpha * max p_e   (the plausible head)
//   score(v) = -inf                       otherwise
// and the request's sampler chain chooses from the scores (greedy: their argmax; temp/dist: a draw from
// softmax(scores), i.e. proportional to p_e / p_a over the head). Parameters: alpha (0.1, in (0, 1]), tau (1, > 0).
#include <basalt/sdk/decoder-plugin.hpp>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <vector>

namespace {

using basalt::sdk::check_host;

constexpr basalt::sdk::decoder_spec kContrastive = {
    "contrastive",
    "contrastive decoding: log p_expert - log p_amateur over the expert's plausible tokens (alpha, tau); model 1 is "
    "the amateur",
};

// log(sum(exp(x * scale))) over the finite entries of a row, in double; -inf when none is finite.
double log_sum_exp(const float* row, size_t n, double scale, double& max_out) {
    double mx = -INFINITY;
    for (size_t v = 0; v < n; ++v) {
        if (std::isfinite(row[v])) mx = std::max(mx, row[v] * scale);
    }
    max_out = mx;
    if (!std::isfinite(mx)) return -INFINITY;
    double sum = 0;
    for (size_t v = 0; v < n; ++v) {
        if (std::isfinite(row[v])) sum += std::exp(row[v] * scale - mx);
    }
    return mx + std::log(sum);
}

struct Contrastive {
    double alpha = 0.1;
    double tau = 1.0;
    const basalt_decoder_host* host = nullptr;
    std::vector<int32_t> prompt;
    int32_t next = -1;  // the token both models get next round (-1: the prompt)
    bool done = false;
    std::vector<float> scores;   // one row, reused
    std::vector<float> masked;   // the expert row without them
    std::vector<float> allowed;  // the chain's distribution of the expert row: 0 where its filters (a grammar) ban
    double expert_logprob = 0;   // sum of log p_e of the emitted tokens (the score given to emit)
    double head_total = 0;       // plausible-set sizes summed over the steps, for the mean
    uint64_t steps = 0;
    double lse_expert = 0;  // log-sum-exp of the last expert row

    explicit Contrastive(const basalt::sdk::params& p) {
        p.expect_only({"alpha", "tau"});
        alpha = p.get_float("alpha", 0.1f);
        if (!(alpha > 0.f && alpha <= 1.f)) p.bad("alpha", *p.find("alpha"), "a number in (0, 1]");
        tau = p.get_float("tau", 1.f);
        if (!(tau > 0.f)) p.bad("tau", *p.find("tau"), "a temperature > 0");
    }

    basalt::sdk::decoder_needs requirements() const { return {1, 2, 1}; }

    void begin(const basalt_decoder_host& h, const basalt_decoder_request& request) {
        if (h.n_models < 2)
            kContrastive.fail(BASALT_ERR_INVALID_ARGUMENT,
                              "needs an amateur model (model 1) beside the expert; the engine has one");
        host = &h;
        prompt.assign(request.prompt, request.prompt + request.n_prompt);
        next = -1;
        done = false;
        scores.assign(h.n_vocab, 0.f);
        expert_logprob = 0;
        head_total = 0;
        steps = 0;
    }

    void plan(basalt_decoder_plan& plan, int32_t& out_finish) {
        if (done) {
            plan.n_feeds = 0;
            out_finish = BASALT_FINISH_NONE;  // the engine knows why (stop, length, cancel)
            return;
        }
        if (plan.capacity < 2) {
            plan.n_feeds = 2;
            kContrastive.fail(BASALT_ERR_CAPACITY, "plan needs 2 feeds");
        }
        for (int32_t m = 0; m < 2; ++m) {
            basalt_decoder_feed& f = plan.feeds[m];
            f = basalt_decoder_feed{};
            f.model = m;
            f.seq = 0;
            f.tokens = next < 0 ? prompt.data() : &next;
            f.n_tokens = next < 0 ? prompt.size() : 1;
            f.logits = BASALT_DECODER_LOGITS_LAST;
        }
        plan.n_feeds = 2;
        out_finish = BASALT_FINISH_NONE;
    }

    // Fills scores from the expert and amateur rows; returns the size of the plausible head.
    size_t contrast(const float* expert, const float* amateur) {
        const size_t n = scores.size();
        double max_e = 0, max_a = 0;
        const double lse_e = log_sum_exp(expert, n, 1.0, max_e);
        const double lse_a = log_sum_exp(amateur, n, 1.0 / tau, max_a);
        if (!std::isfinite(lse_e))
            kContrastive.fail(BASALT_ERR_INVALID_ARGUMENT, "the expert's logits have no finite entry");
        lse_expert = lse_e;
        // p_e(v) >= alpha * max p_e  <=>  logit_e(v) >= max logit_e + ln(alpha)
        const double threshold = max_e + std::log(alpha);
        size_t head = 0;
        for (size_t v = 0; v < n; ++v) {
            const float le = expert[v];
            if (!(std::isfinite(le) && le >= threshold)) {
                scores[v] = -INFINITY;
                continue;
            }
            ++head;
            const double log_pe = le - lse_e;
            const double log_pa =
                std::isfinite(amateur[v]) && std::isfinite(lse_a) ? amateur[v] / tau - lse_a : -INFINITY;
            // a token the amateur rules out entirely ranks first, with a finite score so softmax stays defined
            const double s = log_pe - log_pa;
            scores[v] =
                std::isfinite(s) ? static_cast<float>(std::clamp(s, -double{FLT_MAX}, double{FLT_MAX})) : FLT_MAX;
        }
        return head;
    }

    void consume(const basalt_decoder_result* results, size_t n_results) {
        if (host == nullptr) kContrastive.fail(BASALT_ERR_INVALID_ARGUMENT, "consume before begin");
        if (results == nullptr || n_results != 2 || results[0].logits == nullptr || results[0].n_rows != 1 ||
            results[1].logits == nullptr || results[1].n_rows != 1) {
            kContrastive.fail(BASALT_ERR_INVALID_ARGUMENT, "consume expects one logits row of each model");
        }
        // Tokens the chain rules out on the expert row (a grammar's mask) leave the plausible head first, so the head
        // is taken among the tokens the request may emit.
        allowed.resize(scores.size());
        check_host(host->distribution(host->ctx, 0, 0, results[0].logits, allowed.data()));
        masked.assign(results[0].logits, results[0].logits + scores.size());
        for (size_t v = 0; v < masked.size(); ++v) {
            if (!(allowed[v] > 0.f)) masked[v] = -INFINITY;
        }
        const size_t head = contrast(masked.data(), results[1].logits);
        int32_t token = -1;
        check_host(host->sample(host->ctx, 0, scores.data(), &token));  // a failure keeps the host's message
        if (token >= 0 && static_cast<size_t>(token) < scores.size())
            expert_logprob += results[0].logits[token] - lse_expert;
        head_total += static_cast<double>(head);
        steps += 1;
        if (BASALT_HAS_FIELD(host, basalt_decoder_host, set_stat) && host->set_stat != nullptr) {
            host->set_stat(host->ctx, "plausible_mean", head_total / static_cast<double>(steps));
            host->set_stat(host->ctx, "plausible_last", static_cast<double>(head));
        }
        const basalt_status st = host->emit(host->ctx, 0, &token, 1, static_cast<float>(expert_logprob));
        if (st == BASALT_ERR_CANCELLED) {
            done = true;
            return;
        }
        check_host(st);
        next = token;
    }
};

}  // namespace

BASALT_DECLARE_PLUGIN("decoder-contrastive", basalt::sdk::decoder<Contrastive, kContrastive>)
