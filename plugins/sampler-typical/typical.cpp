// sampler-typical ("typical", locally typical sampling, Meister et al. 2022): computes the softmax and its
// entropy H, scores each candidate by |-ln p - H| and keeps the lowest-scoring candidates (ties: higher logit,
// then lower id) until their probability mass reaches p (at least one). The result is ordered by that score,
// so `sorted` becomes false; the kept probabilities are renormalised. p >= 1: no-op. It may drop the most
// likely token, so it is not argmax-invariant. Stateless: accept/reset NULL, host-default clone.
#include <basalt/sdk/candidates.hpp>
#include <basalt/sdk/sampler-plugin.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

namespace {

constexpr basalt::sdk::sampler_spec kTypical = {
    "typical",
    "locally typical sampling: keeps the most typical mass p",
    BASALT_SAMPLER_DRAFT_SAFE,
};

struct Scored {
    double score;
    basalt_token_data t;
};

struct Typical {
    float p = 1.f;

    explicit Typical(const basalt::sdk::params& params) {
        params.expect_only({"p"});
        p = params.get_probability("p", 1.f);
    }

    void apply(basalt_candidates& c) const {
        c.selected = -1;
        if (p >= 1.f || c.size <= 1) return;
        if (!basalt::sdk::softmax(&c)) return;
        double entropy = 0;
        for (size_t i = 0; i < c.size; ++i) {
            const double q = c.data[i].p;
            if (q > 0) entropy -= q * std::log(q);
        }
        std::vector<Scored> scored;
        scored.reserve(c.size);
        for (size_t i = 0; i < c.size; ++i) {
            const double q = c.data[i].p;
            scored.push_back({q > 0 ? std::fabs(-std::log(q) - entropy) : INFINITY, c.data[i]});
        }
        std::sort(scored.begin(), scored.end(), [](const Scored& a, const Scored& b) {
            if (a.score != b.score) return a.score < b.score;
            if (a.t.p != b.t.p) return a.t.p > b.t.p;
            return a.t.id < b.t.id;
        });
        double cum = 0;
        size_t keep = scored.size();
        for (size_t i = 0; i < scored.size(); ++i) {
            cum += scored[i].t.p;
            if (cum >= p) {
                keep = i + 1;
                break;
            }
        }
        for (size_t i = 0; i < keep; ++i) c.data[i] = scored[i].t;
        c.size = keep;
        c.sorted = keep <= 1 ? 1 : 0;
        basalt::sdk::renormalize(&c);
    }
};

}  // namespace

BASALT_DECLARE_PLUGIN("sampler-typical", basalt::sdk::sampler<Typical, kTypical>)
