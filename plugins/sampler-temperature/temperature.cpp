// sampler-temperature ("temp"): divides every logit by t. t <= 0 is greedy-equivalent: only the candidate with
// the highest logit is kept (ties: lowest token id; NaN ignored), with p = 1, so a following `dist` picks it.
// Stateless (configuration only), so accept/reset stay NULL and clone is the host's default.
#include <basalt/plugin_sampler.h>
#include <basalt/sdk/plugin.hpp>

#include <cmath>
#include <string>

namespace {

constexpr const char* kName = "temp";

struct Temperature {
    float t = 1.f;
};

basalt_status temp_create(const basalt_host* /*host*/, const basalt_params* params, void** out_instance) {
    return basalt::sdk::guard([&] {
        const basalt::sdk::params p(params, std::string("sampler '") + kName + "'");
        p.expect_only({"t"});
        const float t = p.get_float("t", 1.f);
        if (!(t >= 0.f)) p.bad("t", *p.find("t"), "a temperature >= 0 (0: greedy)");
        *out_instance = new Temperature{t};
    });
}

void temp_destroy(void* instance) {
    delete static_cast<Temperature*>(instance);
}

// Keeps only the highest logit (ties: lowest id); no-op when every logit is NaN.
void keep_max(basalt_candidates* c) {
    int64_t best = -1;
    for (size_t i = 0; i < c->size; ++i) {
        const basalt_token_data& t = c->data[i];
        if (std::isnan(t.logit)) continue;
        if (best < 0) {
            best = static_cast<int64_t>(i);
            continue;
        }
        const basalt_token_data& b = c->data[best];
        if (t.logit > b.logit || (t.logit == b.logit && t.id < b.id)) best = static_cast<int64_t>(i);
    }
    if (best < 0) return;
    c->data[0] = c->data[best];
    c->data[0].p = 1.f;
    c->size = 1;
    c->sorted = 1;
    c->probs_valid = 1;
}

basalt_status temp_apply(void* const* instances, basalt_candidates* const* candidates, size_t n) {
    return basalt::sdk::guard([&] {
        for (size_t s = 0; s < n; ++s) {
            const float t = static_cast<const Temperature*>(instances[s])->t;
            basalt_candidates* c = candidates[s];
            c->selected = -1;
            if (c->size == 0) continue;
            if (t <= 0.f) {
                keep_max(c);
                continue;
            }
            // Dividing by a positive t keeps the order (so `sorted` stays true) but changes the softmax.
            for (size_t i = 0; i < c->size; ++i) c->data[i].logit /= t;
            if (t != 1.f) c->probs_valid = 0;
        }
    });
}

const basalt_sampler_iface kIface = {
    sizeof(basalt_sampler_iface),
    BASALT_SAMPLER_ARGMAX_INVARIANT | BASALT_SAMPLER_DRAFT_SAFE,
    temp_create,
    temp_destroy,
    temp_apply,
    nullptr,  // accept: stateless
    nullptr,  // reset: stateless
    nullptr,  // clone: host default (create from the same params)
};

const basalt_component_desc kComponent = {
    sizeof(basalt_component_desc),
    BASALT_COMPONENT_SAMPLER,
    kName,
    "divides the logits by t (t <= 0: keep only the highest)",
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
    "sampler-temperature",
    1,
    kComponents,
    nullptr,
};

}  // namespace

BASALT_PLUGIN_INIT {
    return basalt::sdk::init_plugin(host_abi_major, host_abi_minor, host, &kPlugin, out_desc);
}
