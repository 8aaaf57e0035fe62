// decoder-contrastive: contrastive decoding (Li et al. 2022), component decoder 'contrastive'. Model 0 is the
// expert, model 1 the amateur (`--amateur draft`); both get the same tokens each round (the prompt, then the last
// token), so their rows come from the same engine step. From the two last rows:
//   log p_e = log_softmax(expert logits), log p_a = log_softmax(amateur logits / tau)
//   score(v) = log p_e(v) - log p_a(v)   when p_e(v) >= alpha * max p_e   (the plausible head)
//   score(v) = -inf                       otherwise
// and the request's sampler chain chooses from the scores (greedy: their argmax; temp/dist: a draw from
// softmax(scores), i.e. proportional to p_e / p_a over the head). Parameters: alpha (0.1, in (0, 1]), tau (1, > 0).
#include <basalt/plugin_decoder.h>
#include <basalt/sdk/plugin.hpp>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <string>
#include <vector>

namespace {

constexpr const char* kLabel = "decoder 'contrastive'";

struct Contrastive {
    double alpha = 0.1;
    double tau = 1.0;
    const basalt_decoder_host* host = nullptr;
    std::vector<int32_t> prompt;
    int32_t next = -1;  // the token both models get next round (-1: the prompt)
    bool done = false;
    std::vector<float> scores;  // one row, reused
    double expert_logprob = 0;  // sum of log p_e of the emitted tokens (the score given to emit)
    double head_total = 0;      // plausible-set sizes summed over the steps, for the mean
    uint64_t steps = 0;
    double lse_expert = 0;  // log-sum-exp of the last expert row
};

[[noreturn]] void fail(basalt_status st, const std::string& what) {
    throw basalt::sdk::error(st, std::string(kLabel) + ": " + what);
}

Contrastive& self(void* d) {
    if (d == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "instance is NULL");
    return *static_cast<Contrastive*>(d);
}

basalt_status cd_create(const basalt_host* /*host*/, const basalt_params* params, void** out) {
    return basalt::sdk::guard([&] {
        const basalt::sdk::params p(params, kLabel);
        p.expect_only({"alpha", "tau"});
        if (out == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "out is NULL");
        const float alpha = p.get_float("alpha", 0.1f);
        if (!(alpha > 0.f && alpha <= 1.f)) p.bad("alpha", *p.find("alpha"), "a number in (0, 1]");
        const float tau = p.get_float("tau", 1.f);
        if (!(tau > 0.f)) p.bad("tau", *p.find("tau"), "a temperature > 0");
        auto* c = new Contrastive();
        c->alpha = alpha;
        c->tau = tau;
        *out = c;
    });
}

void cd_destroy(void* d) {
    delete static_cast<Contrastive*>(d);
}

basalt_status cd_requirements(void* d, basalt_decoder_info* out) {
    return basalt::sdk::guard([&] {
        self(d);
        if (out == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "out is NULL");
        if (BASALT_HAS_FIELD(out, basalt_decoder_info, n_seq)) out->n_seq = 1;
        if (BASALT_HAS_FIELD(out, basalt_decoder_info, n_models)) out->n_models = 2;
        if (BASALT_HAS_FIELD(out, basalt_decoder_info, n_outputs)) out->n_outputs = 1;
    });
}

basalt_status cd_begin(void* d, const basalt_decoder_host* host, const basalt_decoder_request* request) {
    return basalt::sdk::guard([&] {
        Contrastive& c = self(d);
        if (host == nullptr || request == nullptr || request->prompt == nullptr || request->n_prompt == 0)
            fail(BASALT_ERR_INVALID_ARGUMENT, "begin needs a host and a prompt");
        if (host->n_models < 2)
            fail(BASALT_ERR_INVALID_ARGUMENT, "needs an amateur model (model 1) beside the expert; the engine has one");
        c.host = host;
        c.prompt.assign(request->prompt, request->prompt + request->n_prompt);
        c.next = -1;
        c.done = false;
        c.scores.assign(host->n_vocab, 0.f);
        c.expert_logprob = 0;
        c.head_total = 0;
        c.steps = 0;
    });
}

basalt_status cd_plan(void* d, basalt_decoder_plan* plan, int32_t* out_finish) {
    return basalt::sdk::guard([&] {
        Contrastive& c = self(d);
        if (plan == nullptr || out_finish == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "plan: NULL argument");
        if (c.done) {
            plan->n_feeds = 0;
            *out_finish = BASALT_FINISH_NONE;  // the engine knows why (stop, length, cancel)
            return;
        }
        if (plan->capacity < 2) {
            plan->n_feeds = 2;
            fail(BASALT_ERR_CAPACITY, "plan needs 2 feeds");
        }
        for (int32_t m = 0; m < 2; ++m) {
            basalt_decoder_feed& f = plan->feeds[m];
            f = basalt_decoder_feed{};
            f.model = m;
            f.seq = 0;
            f.tokens = c.next < 0 ? c.prompt.data() : &c.next;
            f.n_tokens = c.next < 0 ? c.prompt.size() : 1;
            f.logits = BASALT_DECODER_LOGITS_LAST;
        }
        plan->n_feeds = 2;
        *out_finish = BASALT_FINISH_NONE;
    });
}

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

// Fills c.scores from the expert and amateur rows; returns the size of the plausible head.
size_t contrast(Contrastive& c, const float* expert, const float* amateur) {
    const size_t n = c.scores.size();
    double max_e = 0, max_a = 0;
    const double lse_e = log_sum_exp(expert, n, 1.0, max_e);
    const double lse_a = log_sum_exp(amateur, n, 1.0 / c.tau, max_a);
    if (!std::isfinite(lse_e)) fail(BASALT_ERR_INVALID_ARGUMENT, "the expert's logits have no finite entry");
    c.lse_expert = lse_e;
    // p_e(v) >= alpha * max p_e  <=>  logit_e(v) >= max logit_e + ln(alpha)
    const double threshold = max_e + std::log(c.alpha);
    size_t head = 0;
    for (size_t v = 0; v < n; ++v) {
        const float le = expert[v];
        if (!(std::isfinite(le) && le >= threshold)) {
            c.scores[v] = -INFINITY;
            continue;
        }
        ++head;
        const double log_pe = le - lse_e;
        const double log_pa =
            std::isfinite(amateur[v]) && std::isfinite(lse_a) ? amateur[v] / c.tau - lse_a : -INFINITY;
        // a token the amateur rules out entirely ranks first, with a finite score so softmax stays defined
        const double s = log_pe - log_pa;
        c.scores[v] = std::isfinite(s) ? static_cast<float>(std::clamp(s, -double{FLT_MAX}, double{FLT_MAX})) : FLT_MAX;
    }
    return head;
}

basalt_status cd_consume(void* d, const basalt_decoder_result* results, size_t n_results) {
    Contrastive* cp = nullptr;
    size_t head = 0;
    basalt_status st = basalt::sdk::guard([&] {
        cp = &self(d);
        if (cp->host == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "consume before begin");
        if (results == nullptr || n_results != 2 || results[0].logits == nullptr || results[0].n_rows != 1 ||
            results[1].logits == nullptr || results[1].n_rows != 1) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "consume expects one logits row of each model");
        }
        head = contrast(*cp, results[0].logits, results[1].logits);
    });
    if (st != BASALT_OK) return st;
    Contrastive& c = *cp;
    int32_t token = -1;
    st = c.host->sample(c.host->ctx, 0, c.scores.data(), &token);
    if (st != BASALT_OK) return st;  // the host recorded the message
    if (token >= 0 && static_cast<size_t>(token) < c.scores.size())
        c.expert_logprob += results[0].logits[token] - c.lse_expert;
    c.head_total += static_cast<double>(head);
    c.steps += 1;
    if (BASALT_HAS_FIELD(c.host, basalt_decoder_host, set_stat) && c.host->set_stat != nullptr) {
        c.host->set_stat(c.host->ctx, "plausible_mean", c.head_total / static_cast<double>(c.steps));
        c.host->set_stat(c.host->ctx, "plausible_last", static_cast<double>(head));
    }
    st = c.host->emit(c.host->ctx, 0, &token, 1, static_cast<float>(c.expert_logprob));
    if (st == BASALT_ERR_CANCELLED) {
        c.done = true;
        return BASALT_OK;
    }
    if (st != BASALT_OK) return st;
    c.next = token;
    return BASALT_OK;
}

const basalt_decoder_iface kIface = {
    sizeof(basalt_decoder_iface),
    0,
    cd_create,
    cd_destroy,
    nullptr,  // reserved_run (ABI 1.0's run)
    cd_requirements,
    cd_begin,
    cd_plan,
    cd_consume,
};

const basalt_component_desc kComponent = {
    sizeof(basalt_component_desc),
    BASALT_COMPONENT_DECODER,
    "contrastive",
    "contrastive decoding: log p_expert - log p_amateur over the expert's plausible tokens (alpha, tau); model 1 is "
    "the amateur",
    1,
    0,
    0,
    0,
    &kIface,
};

const basalt_component_desc* const kComponents[] = {&kComponent};

const basalt_plugin_desc kPlugin = {
    sizeof(basalt_plugin_desc),
    BASALT_ABI_VERSION_MAJOR,
    BASALT_ABI_VERSION_MINOR,
    0,
    "decoder-contrastive",
    1,
    kComponents,
    nullptr,
};

}  // namespace

BASALT_PLUGIN_INIT {
    return basalt::sdk::init_plugin(host_abi_major, host_abi_minor, host, &kPlugin, out_desc);
}
