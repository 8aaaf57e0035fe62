// sampler-greedy: selects the candidate with the highest logit (ties: lowest token id; NaN logits ignored).
// Stateless, so accept/reset/clone stay NULL and the host's defaults apply.
#include <basalt/plugin_sampler.h>
#include <basalt/sdk/plugin.hpp>

#include <cmath>
#include <string>

namespace {

constexpr const char* kName = "greedy";

// The instance carries no state; one static byte gives each create a valid non-NULL handle.
char g_instance_tag = 0;

basalt_status greedy_create(const basalt_host* /*host*/, const basalt_params* params, void** out_instance) {
    return basalt::sdk::guard([&] {
        basalt::sdk::params(params, std::string("sampler '") + kName + "'").expect_only({});
        *out_instance = &g_instance_tag;
    });
}

void greedy_destroy(void* /*instance*/) {}

basalt_status greedy_apply(void* const* /*instances*/, basalt_candidates* const* candidates, size_t n) {
    return basalt::sdk::guard([&] {
        for (size_t s = 0; s < n; ++s) {
            basalt_candidates* c = candidates[s];
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
            if (best < 0) {
                throw basalt::sdk::error(BASALT_ERR_INVALID_ARGUMENT,
                                         "sampler 'greedy': sequence " + std::to_string(c->seq_id) + " has " +
                                             (c->size == 0 ? "no candidates" : "only NaN logits"));
            }
            c->selected = best;
        }
    });
}

const basalt_sampler_iface kIface = {
    sizeof(basalt_sampler_iface),
    BASALT_SAMPLER_ARGMAX_INVARIANT | BASALT_SAMPLER_DRAFT_SAFE | BASALT_SAMPLER_SELECTS,
    greedy_create,
    greedy_destroy,
    greedy_apply,
    nullptr,  // accept: stateless
    nullptr,  // reset: stateless
    nullptr,  // clone: host default (create from the same params)
};

const basalt_component_desc kComponent = {
    sizeof(basalt_component_desc),
    BASALT_COMPONENT_SAMPLER,
    kName,
    "argmax over the candidates (ties: lowest id)",
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
    "sampler-greedy",
    1,
    kComponents,
    nullptr,
};

}  // namespace

BASALT_PLUGIN_INIT {
    return basalt::sdk::init_plugin(host_abi_major, host_abi_minor, host, &kPlugin, out_desc);
}
