// sampler-greedy: selects the candidate with the highest logit (ties: lowest token id; NaN logits ignored).
// Stateless, so accept/reset/clone stay NULL and the host's defaults apply.
#include <basalt/sdk/candidates.hpp>
#include <basalt/sdk/sampler-plugin.hpp>

#include <string>

namespace {

constexpr basalt::sdk::sampler_spec kGreedy = {
    "greedy",
    "argmax over the candidates (ties: lowest id)",
    BASALT_SAMPLER_ARGMAX_INVARIANT | BASALT_SAMPLER_DRAFT_SAFE | BASALT_SAMPLER_SELECTS,
};

struct Greedy {
    explicit Greedy(const basalt::sdk::params& p) { p.expect_only({}); }

    void apply(basalt_candidates& c) const {
        const int64_t best = basalt::sdk::argmax(c);
        if (best < 0) {
            kGreedy.fail(BASALT_ERR_INVALID_ARGUMENT, "sequence " + std::to_string(c.seq_id) + " has " +
                                                          (c.size == 0 ? "no candidates" : "only NaN logits"));
        }
        c.selected = best;
    }
};

}  // namespace

BASALT_DECLARE_PLUGIN("sampler-greedy", basalt::sdk::sampler<Greedy, kGreedy>)
