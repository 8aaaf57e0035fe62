// sampler-top-p ("top_p", nucleus): sorts the candidates (descending logit, ties: lowest id first), computes
// their softmax and keeps the shortest prefix whose probability mass reaches p, but at least min_keep entries.
// p >= 1: no-op; p = 0 keeps min_keep candidates. The kept probabilities are renormalised (probs_valid stays
// true). Stateless, so accept/reset stay NULL and clone is the host's default.
#include <basalt/plugin_sampler.h>
#include <basalt/sdk/plugin.hpp>

#include <algorithm>
#include <cmath>
#include <string>

namespace {

constexpr const char* kName = "top_p";

struct TopP {
    float p = 0.95f;
    size_t min_keep = 1;
};

// Descending by logit, NaN last, ties by the lower token id (so the order never depends on the input order).
bool before(const basalt_token_data& a, const basalt_token_data& b) {
    const float ka = std::isnan(a.logit) ? -INFINITY : a.logit;
    const float kb = std::isnan(b.logit) ? -INFINITY : b.logit;
    return ka > kb || (ka == kb && a.id < b.id);
}

// Sets p = softmax(logit) over the live candidates (NaN and -inf get 0, +inf share the mass). Returns false,
// touching nothing, when no candidate has a usable logit.
bool softmax(basalt_candidates* c) {
    float mx = -INFINITY;
    for (size_t i = 0; i < c->size; ++i) {
        if (!std::isnan(c->data[i].logit) && c->data[i].logit > mx) mx = c->data[i].logit;
    }
    if (!(mx > -INFINITY)) return false;
    double sum = 0;
    for (size_t i = 0; i < c->size; ++i) {
        const float l = c->data[i].logit;
        const double e = std::isnan(l) ? 0.0 : std::isinf(mx) ? (l == mx ? 1.0 : 0.0) : std::exp(double(l) - mx);
        c->data[i].p = static_cast<float>(e);
        sum += e;
    }
    for (size_t i = 0; i < c->size; ++i) c->data[i].p = static_cast<float>(c->data[i].p / sum);
    c->probs_valid = 1;
    return true;
}

// Rescales valid probabilities to sum to 1 over the live candidates (after a truncation).
void renormalize(basalt_candidates* c) {
    if (!c->probs_valid) return;
    double sum = 0;
    for (size_t i = 0; i < c->size; ++i) sum += c->data[i].p;
    if (!(sum > 0)) {
        c->probs_valid = 0;
        return;
    }
    for (size_t i = 0; i < c->size; ++i) c->data[i].p = static_cast<float>(c->data[i].p / sum);
}

basalt_status top_p_create(const basalt_host* /*host*/, const basalt_params* params, void** out_instance) {
    return basalt::sdk::guard([&] {
        const basalt::sdk::params p(params, std::string("sampler '") + kName + "'");
        p.expect_only({"p", "min_keep"});
        const float v = p.get_float("p", 0.95f);
        if (v < 0.f || v > 1.f) p.bad("p", *p.find("p"), "a probability in [0, 1]");
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
