// sampler-min-p ("min_p"): keeps the candidates whose probability is at least p times the largest one, i.e.
// logit >= max_logit + ln(p); the relative order is kept (so `sorted` stays as it was). p <= 0: no-op; p = 1
// keeps only the candidates tied with the maximum. NaN and -inf logits are dropped when p > 0. Valid
// probabilities are renormalised over the kept candidates. Stateless: accept/reset NULL, host-default clone.
#include <basalt/plugin_sampler.h>
#include <basalt/sdk/candidates.hpp>
#include <basalt/sdk/plugin.hpp>

#include <cmath>
#include <string>

namespace {

using basalt::sdk::renormalize;

constexpr const char* kName = "min_p";

struct MinP {
    float p = 0.05f;
};

basalt_status min_p_create(const basalt_host* /*host*/, const basalt_params* params, void** out_instance) {
    return basalt::sdk::guard([&] {
        const basalt::sdk::params p(params, std::string("sampler '") + kName + "'");
        p.expect_only({"p"});
        const float v = p.get_probability("p", 0.05f);
        auto* inst = new MinP;
        inst->p = v;
        *out_instance = inst;
    });
}

void min_p_destroy(void* instance) {
    delete static_cast<MinP*>(instance);
}

basalt_status min_p_apply(void* const* instances, basalt_candidates* const* candidates, size_t n) {
    return basalt::sdk::guard([&] {
        for (size_t s = 0; s < n; ++s) {
            const float pmin = static_cast<const MinP*>(instances[s])->p;
            basalt_candidates* c = candidates[s];
            c->selected = -1;
            if (pmin <= 0.f || c->size == 0) continue;
            float mx = -INFINITY;
            for (size_t i = 0; i < c->size; ++i) {
                if (!std::isnan(c->data[i].logit) && c->data[i].logit > mx) mx = c->data[i].logit;
            }
            if (!(mx > -INFINITY)) continue;  // nothing usable: left to the selecting sampler
            const double threshold = std::isinf(mx) ? INFINITY : double(mx) + std::log(double(pmin));
            size_t out = 0;
            for (size_t i = 0; i < c->size; ++i) {
                const float l = c->data[i].logit;
                if (!std::isnan(l) && double(l) >= threshold) c->data[out++] = c->data[i];
            }
            c->size = out;
            renormalize(c);
        }
    });
}

const basalt_sampler_iface kIface = {
    sizeof(basalt_sampler_iface),
    BASALT_SAMPLER_ARGMAX_INVARIANT | BASALT_SAMPLER_DRAFT_SAFE,
    min_p_create,
    min_p_destroy,
    min_p_apply,
    nullptr,  // accept: stateless
    nullptr,  // reset: stateless
    nullptr,  // clone: host default (create from the same params)
};

const basalt_component_desc kComponent = {
    sizeof(basalt_component_desc),
    BASALT_COMPONENT_SAMPLER,
    kName,
    "keeps candidates with probability >= p * the largest",
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
    "sampler-min-p",
    1,
    kComponents,
    nullptr,
};

}  // namespace

BASALT_PLUGIN_INIT {
    return basalt::sdk::init_plugin(host_abi_major, host_abi_minor, host, &kPlugin, out_desc);
}
