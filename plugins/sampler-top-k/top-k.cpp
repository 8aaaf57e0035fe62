// sampler-top-k ("top_k"): keeps the k candidates with the highest logits, sorted descending (ties: lowest token
// id first). k <= 0 or k >= the number of candidates: no-op. Probabilities, when valid, are renormalised over
// the kept candidates. Stateless, so accept/reset stay NULL and clone is the host's default.
#include <basalt/sdk/candidates.hpp>
#include <basalt/sdk/sampler-plugin.hpp>

#include <algorithm>

namespace {

constexpr basalt::sdk::sampler_spec kTopK = {
    "top_k",
    "keeps the k highest logits (ties: lowest id)",
    BASALT_SAMPLER_ARGMAX_INVARIANT | BASALT_SAMPLER_DRAFT_SAFE,
};

struct TopK {
    long long k = 40;

    explicit TopK(const basalt::sdk::params& p) {
        p.expect_only({"k"});
        k = p.get_int("k", 40);
        if (k < 0) p.bad("k", *p.find("k"), "a count >= 0 (0: keep every candidate)");
    }

    void apply(basalt_candidates& c) const {
        c.selected = -1;
        if (k <= 0 || static_cast<unsigned long long>(k) >= c.size) return;
        const size_t kk = static_cast<size_t>(k);
        if (!c.sorted) std::partial_sort(c.data, c.data + kk, c.data + c.size, basalt::sdk::before);
        c.size = kk;
        c.sorted = 1;
        basalt::sdk::renormalize(&c);
    }
};

}  // namespace

BASALT_DECLARE_PLUGIN("sampler-top-k", basalt::sdk::sampler<TopK, kTopK>)
