// sampler-typical ("typical", locally typical sampling, Meister et al. 2022): computes the softmax and its
// entropy H, scores each candidate by |-ln p - H| and keeps the lowest-scoring candidates (ties: higher logit,
// then lower id) until their probability mass reaches p (at least one). The result is ordered by that score,
// so `sorted` becomes false; the kept probabilities are renormalised. p >= 1: no-op. It may drop the most
// likely token, so it is not argmax-invariant. Stateless: accept/reset NULL, host-default clone.
#include <basalt/plugin_sampler.h>
#include <basalt/sdk/candidates.hpp>
#include <basalt/sdk/plugin.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace {

using basalt::sdk::renormalize;
using basalt::sdk::softmax;

constexpr const char* kName = "typical";

struct Typical {
    float p = 1.f;
};

basalt_status typical_create(const basalt_host* /*host*/, const basalt_params* params, void** out_instance) {
    return basalt::sdk::guard([&] {
        const basalt::sdk::params p(params, std::string("sampler '") + kName + "'");
        p.expect_only({"p"});
        const float v = p.get_probability("p", 1.f);
        auto* inst = new Typical;
        inst->p = v;
        *out_instance = inst;
    });
}

void typical_destroy(void* instance) {
    delete static_cast<Typical*>(instance);
}

struct Scored {
    double score;
    basalt_token_data t;
};

basalt_status typical_apply(void* const* instances, basalt_candidates* const* candidates, size_t n) {
    return basalt::sdk::guard([&] {
        std::vector<Scored> scored;
        for (size_t s = 0; s < n; ++s) {
            const float p = static_cast<const Typical*>(instances[s])->p;
            basalt_candidates* c = candidates[s];
            c->selected = -1;
            if (p >= 1.f || c->size <= 1) continue;
            if (!softmax(c)) continue;
            double entropy = 0;
            for (size_t i = 0; i < c->size; ++i) {
                const double q = c->data[i].p;
                if (q > 0) entropy -= q * std::log(q);
            }
            scored.clear();
            for (size_t i = 0; i < c->size; ++i) {
                const double q = c->data[i].p;
                scored.push_back({q > 0 ? std::fabs(-std::log(q) - entropy) : INFINITY, c->data[i]});
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
            for (size_t i = 0; i < keep; ++i) c->data[i] = scored[i].t;
            c->size = keep;
            c->sorted = keep <= 1 ? 1 : 0;
            renormalize(c);
        }
    });
}

const basalt_sampler_iface kIface = {
    sizeof(basalt_sampler_iface),
    BASALT_SAMPLER_DRAFT_SAFE,
    typical_create,
    typical_destroy,
    typical_apply,
    nullptr,  // accept: stateless
    nullptr,  // reset: stateless
    nullptr,  // clone: host default (create from the same params)
};

const basalt_component_desc kComponent = {
    sizeof(basalt_component_desc),
    BASALT_COMPONENT_SAMPLER,
    kName,
    "locally typical sampling: keeps the most typical mass p",
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
    "sampler-typical",
    1,
    kComponents,
    nullptr,
};

}  // namespace

BASALT_PLUGIN_INIT {
    return basalt::sdk::init_plugin(host_abi_major, host_abi_minor, host, &kPlugin, out_desc);
}
