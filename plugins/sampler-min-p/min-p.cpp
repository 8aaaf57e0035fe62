// sampler-min-p ("min_p"): keeps the candidates whose probability is at least p times the largest one, i.e.
// logit >= max_logit + ln(p); the relative order is kept (so `sorted` stays as it was). p <= 0: no-op; p = 1
// keeps only the candidates tied with the maximum. NaN and -inf logits are dropped when p > 0. Valid
// probabilities are renormalised over the kept candidates. Stateless: accept/reset NULL, host-default clone.
#include <basalt/sdk/candidates.hpp>
#include <basalt/sdk/sampler-plugin.hpp>

#include <cmath>

namespace {

constexpr basalt::sdk::sampler_spec kMinP = {
    "min_p",
    "keeps candidates with probability >= p * the largest",
    BASALT_SAMPLER_ARGMAX_INVARIANT | BASALT_SAMPLER_DRAFT_SAFE,
};

struct MinP {
    float p = 0.05f;

    explicit MinP(const basalt::sdk::params& params) {
        params.expect_only({"p"});
        p = params.get_probability("p", 0.05f);
    }

    void apply(basalt_candidates& c) const {
        c.selected = -1;
        if (p <= 0.f || c.size == 0) return;
        const float mx = basalt::sdk::max_logit(c);
        if (!(mx > -INFINITY)) return;  // nothing usable: left to the selecting sampler
        const double threshold = std::isinf(mx) ? INFINITY : double(mx) + std::log(double(p));
        size_t out = 0;
        for (size_t i = 0; i < c.size; ++i) {
            const float l = c.data[i].logit;
            if (!std::isnan(l) && double(l) >= threshold) c.data[out++] = c.data[i];
        }
        c.size = out;
        basalt::sdk::renormalize(&c);
    }
};

}  // namespace

BASALT_DECLARE_PLUGIN("sampler-min-p", basalt::sdk::sampler<MinP, kMinP>)
