// sampler-logit-bias ("logit_bias"): adds a fixed value to the logits of chosen tokens. Parameter "bias" is a
// comma-separated list of id:value entries, e.g. "15:+2.5,42:-1,7:-inf" (-inf bans a token; an id given twice
// gets the sum). Ids absent from the candidates are ignored. Stateless: accept/reset NULL, host-default clone.
#include <basalt/plugin_sampler.h>
#include <basalt/sdk/plugin.hpp>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>
#include <unordered_map>

namespace {

constexpr const char* kName = "logit_bias";

struct LogitBias {
    std::unordered_map<int32_t, float> bias;
};

// Parses "id:value,id:value"; throws naming the parameter, the whole value and the bad entry.
std::unordered_map<int32_t, float> parse_bias(const basalt::sdk::params& p) {
    std::unordered_map<int32_t, float> out;
    const auto v = p.find("bias");
    if (!v) return out;
    const std::string all(*v);
    size_t start = 0;
    while (start <= all.size() && !all.empty()) {
        size_t end = all.find(',', start);
        if (end == std::string::npos) end = all.size();
        const std::string entry = all.substr(start, end - start);
        const std::string expected = "a list of id:value entries (bad entry '" + entry + "')";
        const size_t colon = entry.find(':');
        if (colon == std::string::npos || colon == 0 || colon + 1 == entry.size()) p.bad("bias", all, expected.c_str());
        int32_t id = -1;
        auto [ptr, ec] = std::from_chars(entry.data(), entry.data() + colon, id);
        if (ec != std::errc() || ptr != entry.data() + colon || id < 0) p.bad("bias", all, expected.c_str());
        const std::string val = entry.substr(colon + 1);
        char* vend = nullptr;
        const float f = std::strtof(val.c_str(), &vend);
        const bool ok = vend == val.c_str() + val.size() && !std::isnan(f) && (std::isfinite(f) || f < 0);
        if (!ok) p.bad("bias", all, expected.c_str());
        out[id] += f;
        start = end + 1;
        if (end == all.size()) break;
    }
    return out;
}

basalt_status logit_bias_create(const basalt_host* /*host*/, const basalt_params* params, void** out_instance) {
    return basalt::sdk::guard([&] {
        const basalt::sdk::params p(params, std::string("sampler '") + kName + "'");
        p.expect_only({"bias"});
        auto bias = parse_bias(p);
        *out_instance = new LogitBias{std::move(bias)};
    });
}

void logit_bias_destroy(void* instance) {
    delete static_cast<LogitBias*>(instance);
}

basalt_status logit_bias_apply(void* const* instances, basalt_candidates* const* candidates, size_t n) {
    return basalt::sdk::guard([&] {
        for (size_t s = 0; s < n; ++s) {
            const auto& bias = static_cast<const LogitBias*>(instances[s])->bias;
            basalt_candidates* c = candidates[s];
            c->selected = -1;
            if (bias.empty()) continue;
            bool changed = false;
            for (size_t i = 0; i < c->size; ++i) {
                auto it = bias.find(c->data[i].id);
                if (it == bias.end()) continue;
                c->data[i].logit += it->second;
                changed = true;
            }
            if (changed) {
                c->sorted = 0;
                c->probs_valid = 0;
            }
        }
    });
}

const basalt_sampler_iface kIface = {
    sizeof(basalt_sampler_iface),
    BASALT_SAMPLER_DRAFT_SAFE,
    logit_bias_create,
    logit_bias_destroy,
    logit_bias_apply,
    nullptr,  // accept: stateless
    nullptr,  // reset: stateless
    nullptr,  // clone: host default (create from the same params)
};

const basalt_component_desc kComponent = {
    sizeof(basalt_component_desc),
    BASALT_COMPONENT_SAMPLER,
    kName,
    "adds fixed biases to chosen tokens' logits",
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
    "sampler-logit-bias",
    1,
    kComponents,
    nullptr,
};

}  // namespace

BASALT_PLUGIN_INIT {
    return basalt::sdk::init_plugin(host_abi_major, host_abi_minor, host, &kPlugin, out_desc);
}
