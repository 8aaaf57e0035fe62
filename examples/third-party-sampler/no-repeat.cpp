// A third-party sampler plugin: "no_repeat" bans every token accepted in the last n steps of its sequence
// (logit = -inf, p = 0), so a chain cannot emit the same token twice within that window. If every live candidate
// is banned it changes nothing, so the chain can still pick a token. Parameter: n (default 16; 0 disables,
// -1 bans every token seen). Stateful: accept records the token, reset forgets, clone copies the window.
// Built out of tree with only find_package(Basalt) + basalt_add_plugin; the C++ helpers come from the SDK.
#include <basalt/plugin_sampler.h>
#include <basalt/sdk/plugin.hpp>

#include <cmath>
#include <deque>
#include <string>
#include <unordered_map>

namespace {

constexpr const char* kName = "no_repeat";

struct NoRepeat {
    long long n = 16;
    std::deque<int32_t> window;               // accepted tokens, oldest first
    std::unordered_map<int32_t, int> counts;  // occurrences of each token in the window

    bool banned(int32_t id) const { return counts.count(id) != 0; }
    void push(int32_t token) {
        if (n == 0) return;
        window.push_back(token);
        ++counts[token];
        if (n > 0 && window.size() > static_cast<size_t>(n)) {
            const int32_t old = window.front();
            window.pop_front();
            if (--counts[old] == 0) counts.erase(old);
        }
    }
};

basalt_status no_repeat_create(const basalt_host* /*host*/, const basalt_params* params, void** out_instance) {
    return basalt::sdk::guard([&] {
        const basalt::sdk::params p(params, std::string("sampler '") + kName + "'");
        p.expect_only({"n"});
        const long long n = p.get_int("n", 16);
        if (n < -1) p.bad("n", *p.find("n"), "-1 (all), 0 (off) or a window length");
        auto* s = new NoRepeat;
        s->n = n;
        *out_instance = s;
    });
}

void no_repeat_destroy(void* instance) {
    delete static_cast<NoRepeat*>(instance);
}

basalt_status no_repeat_apply(void* const* instances, basalt_candidates* const* candidates, size_t n) {
    return basalt::sdk::guard([&] {
        for (size_t s = 0; s < n; ++s) {
            const NoRepeat* self = static_cast<const NoRepeat*>(instances[s]);
            basalt_candidates* c = candidates[s];
            c->selected = -1;
            size_t live = 0, hit = 0;
            for (size_t i = 0; i < c->size; ++i) {
                if (std::isinf(c->data[i].logit) && c->data[i].logit < 0) continue;
                ++live;
                if (self->banned(c->data[i].id)) ++hit;
            }
            if (hit == 0 || hit == live) continue;  // nothing to ban, or banning would leave nothing
            for (size_t i = 0; i < c->size; ++i) {
                if (!self->banned(c->data[i].id)) continue;
                c->data[i].logit = -INFINITY;
                c->data[i].p = 0.f;
            }
            c->sorted = 0;
            c->probs_valid = 0;
        }
    });
}

basalt_status no_repeat_accept(void* instance, int32_t token) {
    return basalt::sdk::guard([&] { static_cast<NoRepeat*>(instance)->push(token); });
}

basalt_status no_repeat_reset(void* instance) {
    return basalt::sdk::guard([&] {
        auto* self = static_cast<NoRepeat*>(instance);
        self->window.clear();
        self->counts.clear();
    });
}

basalt_status no_repeat_clone(const void* instance, void** out_instance) {
    return basalt::sdk::guard([&] { *out_instance = new NoRepeat(*static_cast<const NoRepeat*>(instance)); });
}

const basalt_sampler_iface kIface = {
    sizeof(basalt_sampler_iface),
    0,  // changes the argmax on purpose; not for draft distributions
    no_repeat_create,
    no_repeat_destroy,
    no_repeat_apply,
    no_repeat_accept,
    no_repeat_reset,
    no_repeat_clone,
};

const basalt_component_desc kComponent = {
    sizeof(basalt_component_desc),
    BASALT_COMPONENT_SAMPLER,
    kName,
    "bans the tokens accepted in the last n steps",
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
    "sampler-no-repeat",
    1,
    kComponents,
    nullptr,
};

}  // namespace

BASALT_PLUGIN_INIT {
    return basalt::sdk::init_plugin(host_abi_major, host_abi_minor, host, &kPlugin, out_desc);
}
