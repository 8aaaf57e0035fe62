// sampler-penalties ("penalties"): llama.cpp's repetition / frequency / presence penalties over the last_n
// tokens accepted for this sequence. For every candidate whose token occurs c > 0 times in the window:
//   logit = logit > 0 ? logit / repeat : logit * repeat      (repetition: always towards "less likely")
//   logit = logit - c * freq - present                       (frequency and presence)
// Candidates not in the window are untouched. The state (the window and its counts) belongs to one sequence:
// accept() records a token, reset() forgets them, clone() copies them. last_n = 0 disables the sampler,
// last_n = -1 keeps every accepted token. Not argmax-invariant (it exists to change the choice), and not
// draft-safe: its window holds only accepted tokens, not the ones a draft has proposed since.
#include <basalt/plugin_sampler.h>
#include <basalt/sdk/plugin.hpp>

#include <cmath>
#include <deque>
#include <string>
#include <unordered_map>

namespace {

constexpr const char* kName = "penalties";

struct Penalties {
    float repeat = 1.f;
    float freq = 0.f;
    float present = 0.f;
    long long last_n = 64;
    std::deque<int32_t> window;
    std::unordered_map<int32_t, int> counts;
};

basalt_status penalties_create(const basalt_host* /*host*/, const basalt_params* params, void** out_instance) {
    return basalt::sdk::guard([&] {
        const basalt::sdk::params p(params, std::string("sampler '") + kName + "'");
        p.expect_only({"repeat", "freq", "present", "last_n"});
        auto* inst = new Penalties;
        try {
            inst->repeat = p.get_float("repeat", 1.f);
            if (inst->repeat <= 0.f) p.bad("repeat", *p.find("repeat"), "a number > 0");
            inst->freq = p.get_float("freq", 0.f);
            inst->present = p.get_float("present", 0.f);
            inst->last_n = p.get_int("last_n", 64);
            if (inst->last_n < -1) p.bad("last_n", *p.find("last_n"), "an integer >= -1");
        } catch (...) {
            delete inst;
            throw;
        }
        *out_instance = inst;
    });
}

void penalties_destroy(void* instance) {
    delete static_cast<Penalties*>(instance);
}

basalt_status penalties_apply(void* const* instances, basalt_candidates* const* candidates, size_t n) {
    return basalt::sdk::guard([&] {
        for (size_t s = 0; s < n; ++s) {
            const Penalties& st = *static_cast<const Penalties*>(instances[s]);
            basalt_candidates* c = candidates[s];
            c->selected = -1;
            if (st.counts.empty()) continue;
            bool changed = false;
            for (size_t i = 0; i < c->size; ++i) {
                auto it = st.counts.find(c->data[i].id);
                if (it == st.counts.end()) continue;
                float& l = c->data[i].logit;
                l = l > 0.f ? l / st.repeat : l * st.repeat;
                l -= static_cast<float>(it->second) * st.freq + st.present;
                changed = true;
            }
            if (changed) {
                c->sorted = 0;
                c->probs_valid = 0;
            }
        }
    });
}

basalt_status penalties_accept(void* instance, int32_t token) {
    return basalt::sdk::guard([&] {
        auto& st = *static_cast<Penalties*>(instance);
        if (st.last_n == 0) return;
        st.window.push_back(token);
        ++st.counts[token];
        if (st.last_n > 0 && st.window.size() > static_cast<size_t>(st.last_n)) {
            const int32_t old = st.window.front();
            st.window.pop_front();
            if (--st.counts[old] == 0) st.counts.erase(old);
        }
    });
}

basalt_status penalties_reset(void* instance) {
    return basalt::sdk::guard([&] {
        auto& st = *static_cast<Penalties*>(instance);
        st.window.clear();
        st.counts.clear();
    });
}

basalt_status penalties_clone(const void* instance, void** out_instance) {
    return basalt::sdk::guard([&] { *out_instance = new Penalties(*static_cast<const Penalties*>(instance)); });
}

const basalt_sampler_iface kIface = {
    sizeof(basalt_sampler_iface),
    0,  // changes the argmax on purpose; its window lags behind a draft
    penalties_create,
    penalties_destroy,
    penalties_apply,
    penalties_accept,
    penalties_reset,
    penalties_clone,
};

const basalt_component_desc kComponent = {
    sizeof(basalt_component_desc),
    BASALT_COMPONENT_SAMPLER,
    kName,
    "repetition, frequency and presence penalties over the last_n accepted tokens",
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
    "sampler-penalties",
    1,
    kComponents,
    nullptr,
};

}  // namespace

BASALT_PLUGIN_INIT {
    return basalt::sdk::init_plugin(host_abi_major, host_abi_minor, host, &kPlugin, out_desc);
}
