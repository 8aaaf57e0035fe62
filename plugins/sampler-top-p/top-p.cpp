// sampler-top-p ("top_p", nucleus): sorts the candidates (descending logit, ties: lowest id first), computes
// their softmax and keeps the shortest prefix whose probability mass reaches p, but at least min_keep entries.
// p >= 1: no-op; p = 0 keeps min_keep candidates. The kept probabilities are renormalised (probs_valid stays
// true). Stateless, so accept/reset stay NULL and clone is the host's default.
#include <basalt/plugin_sampler.h>
#include <basalt/sdk/candidates.hpp>
#include <basalt/sdk/plugin.hpp>

#include <algorithm>
#include <cmath>
#include <string>

namespace {

using basalt::sdk::before;
using basalt::sdk::renormalize;
using basalt::sdk::softmax;

constexpr const char* kName = "top_p";

struct TopP {
    float p = 0.95f;
    size_t min_keep = 1;
};

basalt_status top_p_create(const basalt_host* /*host*/, const basalt_params* params, void** out_instance) {
    return basalt::sdk::guard([&] {
        const basalt::sdk::params p(params, std::string("sampler '") + kName + "'");
        p.expect_only({"p", "min_keep"});
        const float v = p.get_probability("p", 0.95f);
        const long long mk = p.get_int("min_keep", 1);
        if (mk < 1) p.bad("min_keep", *p.find("min_keep"), "an integer >= 1");
        auto* inst = new TopP;
        inst->p = v;
        inst->min_keep = static_cast<size_t>(mk);
        *out_instance = inst;
    });
}

void top_p_destroy(void* instance) {
    delete static_cast<TopP*>(instance);
}

basalt_status top_p_apply(void* const* instances, basalt_candidates* const* candidates, size_t n) {
    return basalt::sdk::guard([&] {
        for (size_t s = 0; s < n; ++s) {
            const TopP& cfg = *static_cast<const TopP*>(instances[s]);
            basalt_candidates* c = candidates[s];
            c->selected = -1;
            if (cfg.p >= 1.f || c->size <= cfg.min_keep) continue;
            if (!c->sorted) std::sort(c->data, c->data + c->size, before);
            c->sorted = 1;
            if (!softmax(c)) continue;
            double cum = 0;
            size_t keep = c->size;
            for (size_t i = 0; i < c->size; ++i) {
                cum += c->data[i].p;
                if (cum >= cfg.p && i + 1 >= cfg.min_keep) {
                    keep = i + 1;
                    break;
                }
            }
            c->size = keep;
            renormalize(c);
        }
    });
}

const basalt_sampler_iface kIface = {
    sizeof(basalt_sampler_iface),
    BASALT_SAMPLER_ARGMAX_INVARIANT | BASALT_SAMPLER_DRAFT_SAFE,
    top_p_create,
    top_p_destroy,
    top_p_apply,
    nullptr,  // accept: stateless
    nullptr,  // reset: stateless
    nullptr,  // clone: host default (create from the same params)
};

const basalt_component_desc kComponent = {
    sizeof(basalt_component_desc),
    BASALT_COMPONENT_SAMPLER,
    kName,
    "nucleus: the smallest prefix with probability mass >= p",
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
    "sampler-top-p",
    1,
    kComponents,
    nullptr,
};

}  // namespace

BASALT_PLUGIN_INIT {
    return basalt::sdk::init_plugin(host_abi_major, host_abi_minor, host, &kPlugin, out_desc);
}
