// sampler-top-k ("top_k"): keeps the k candidates with the highest logits, sorted descending (ties: lowest token
// id first). k <= 0 or k >= the number of candidates: no-op. Probabilities, when valid, are renormalised over
// the kept candidates. Stateless, so accept/reset stay NULL and clone is the host's default.
#include <basalt/plugin_sampler.h>
#include <basalt/sdk/candidates.hpp>
#include <basalt/sdk/plugin.hpp>

#include <algorithm>
#include <cmath>
#include <string>

namespace {

using basalt::sdk::before;
using basalt::sdk::renormalize;

constexpr const char* kName = "top_k";

struct TopK {
    long long k = 40;
};

basalt_status top_k_create(const basalt_host* /*host*/, const basalt_params* params, void** out_instance) {
    return basalt::sdk::guard([&] {
        const basalt::sdk::params p(params, std::string("sampler '") + kName + "'");
        p.expect_only({"k"});
        const long long k = p.get_int("k", 40);
        if (k < 0) p.bad("k", *p.find("k"), "a count >= 0 (0: keep every candidate)");
        *out_instance = new TopK{k};
    });
}

void top_k_destroy(void* instance) {
    delete static_cast<TopK*>(instance);
}

basalt_status top_k_apply(void* const* instances, basalt_candidates* const* candidates, size_t n) {
    return basalt::sdk::guard([&] {
        for (size_t s = 0; s < n; ++s) {
            const long long k = static_cast<const TopK*>(instances[s])->k;
            basalt_candidates* c = candidates[s];
            c->selected = -1;
            if (k <= 0 || static_cast<unsigned long long>(k) >= c->size) continue;
            const size_t kk = static_cast<size_t>(k);
            if (!c->sorted) std::partial_sort(c->data, c->data + kk, c->data + c->size, before);
            c->size = kk;
            c->sorted = 1;
            renormalize(c);
        }
    });
}

const basalt_sampler_iface kIface = {
    sizeof(basalt_sampler_iface),
    BASALT_SAMPLER_ARGMAX_INVARIANT | BASALT_SAMPLER_DRAFT_SAFE,
    top_k_create,
    top_k_destroy,
    top_k_apply,
    nullptr,  // accept: stateless
    nullptr,  // reset: stateless
    nullptr,  // clone: host default (create from the same params)
};

const basalt_component_desc kComponent = {
    sizeof(basalt_component_desc),
    BASALT_COMPONENT_SAMPLER,
    kName,
    "keeps the k highest logits (ties: lowest id)",
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
    "sampler-top-k",
    1,
    kComponents,
    nullptr,
};

}  // namespace

BASALT_PLUGIN_INIT {
    return basalt::sdk::init_plugin(host_abi_major, host_abi_minor, host, &kPlugin, out_desc);
}
