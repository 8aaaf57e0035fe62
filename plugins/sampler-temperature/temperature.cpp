// sampler-temperature ("temp"): divides every logit by t. t <= 0 is greedy-equivalent: only the candidate with
// the highest logit is kept (ties: lowest token id; NaN ignored), with p = 1, so a following `dist` picks it.
// Stateless (configuration only), so accept/reset stay NULL and clone is the host's default.
#include <basalt/sdk/candidates.hpp>
#include <basalt/sdk/sampler-plugin.hpp>

namespace {

constexpr basalt::sdk::sampler_spec kTemperature = {
    "temp",
    "divides the logits by t (t <= 0: keep only the highest)",
    BASALT_SAMPLER_ARGMAX_INVARIANT | BASALT_SAMPLER_DRAFT_SAFE,
};

// Keeps only the highest logit (ties: lowest id); no-op when every logit is NaN.
void keep_max(basalt_candidates& c) {
    const int64_t best = basalt::sdk::argmax(c);
    if (best < 0) return;
    c.data[0] = c.data[best];
    c.data[0].p = 1.f;
    c.size = 1;
    c.sorted = 1;
    c.probs_valid = 1;
}

struct Temperature {
    float t = 1.f;

    explicit Temperature(const basalt::sdk::params& p) {
        p.expect_only({"t"});
        t = p.get_float("t", 1.f);
        if (!(t >= 0.f)) p.bad("t", *p.find("t"), "a temperature >= 0 (0: greedy)");
    }

    void apply(basalt_candidates& c) const {
        c.selected = -1;
        if (c.size == 0) return;
        if (t <= 0.f) {
            keep_max(c);
            return;
        }
        // Dividing by a positive t keeps the order (so `sorted` stays true) but changes the softmax.
        for (size_t i = 0; i < c.size; ++i) c.data[i].logit /= t;
        if (t != 1.f) c.probs_valid = 0;
    }
};

}  // namespace

BASALT_DECLARE_PLUGIN("sampler-temperature", basalt::sdk::sampler<Temperature, kTemperature>)
