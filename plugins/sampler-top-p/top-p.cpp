// sampler-top-p ("top_p", nucleus): sorts the candidates (descending logit, ties: lowest id first), computes
// their softmax and keeps the shortest prefix whose probability mass reaches p, but at least min_keep entries.
// p >= 1: no-op; p = 0 keeps min_keep candidates. The kept probabilities are renormalised (probs_valid stays
// true). Stateless, so accept/reset stay NULL and clone is the host's default.
#include <basalt/sdk/candidates.hpp>
#include <basalt/sdk/sampler-plugin.hpp>

#include <algorithm>

namespace {

constexpr basalt::sdk::sampler_spec kTopP = {
    "top_p",
    "nucleus: the smallest prefix with probability mass >= p",
    BASALT_SAMPLER_ARGMAX_INVARIANT | BASALT_SAMPLER_DRAFT_SAFE,
};

struct TopP {
    float p = 0.95f;
    size_t min_keep = 1;

    explicit TopP(const basalt::sdk::params& params) {
        params.expect_only({"p", "min_keep"});
        p = params.get_probability("p", 0.95f);
        const long long mk = params.get_int("min_keep", 1);
        if (mk < 1) params.bad("min_keep", *params.find("min_keep"), "an integer >= 1");
        min_keep = static_cast<size_t>(mk);
    }

    void apply(basalt_candidates& c) const {
        c.selected = -1;
        if (p >= 1.f || c.size <= min_keep) return;
        if (!c.sorted) std::sort(c.data, c.data + c.size, basalt::sdk::before);
        c.sorted = 1;
        if (!basalt::sdk::softmax(&c)) return;
        double cum = 0;
        size_t keep = c.size;
        for (size_t i = 0; i < c.size; ++i) {
            cum += c.data[i].p;
            if (cum >= p && i + 1 >= min_keep) {
                keep = i + 1;
                break;
            }
        }
        c.size = keep;
        basalt::sdk::renormalize(&c);
    }
};

}  // namespace

BASALT_DECLARE_PLUGIN("sampler-top-p", basalt::sdk::sampler<TopP, kTopP>)
