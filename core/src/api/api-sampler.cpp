// C API: sampler instances created from loaded sampler components.
#include <basalt/basalt.h>

#include <memory>
#include <string>
#include <vector>

#include "host/host-services.hpp"
#include "host/runtime.hpp"
#include "support/error.hpp"

using basalt::fail;
using basalt::guard;

struct basalt_sampler {
    // The component's name and table, copied: the registry may reorder while instances live.
    std::string name;
    const void* iface = nullptr;  // identifies the component (batches must not mix components)
    basalt::SamplerVtable vt;
    void* instance = nullptr;
    // Kept so the host can clone a sampler whose table has no clone entry.
    std::vector<std::string> keys;
    std::vector<std::string> values;

    ~basalt_sampler() {
        if (instance != nullptr && vt.destroy != nullptr) vt.destroy(instance);
    }
};

namespace {

std::string label(const basalt_sampler* s) {
    return basalt::component_label(BASALT_COMPONENT_SAMPLER, s->name);
}

// Calls a plugin entry point; a failing status or an exception becomes an Error naming the sampler.
template <typename Fn>
void call_plugin(const basalt_sampler* s, const char* what, Fn&& fn) {
    basalt::clear_plugin_error();
    basalt_status st = BASALT_ERR_INTERNAL;
    try {
        st = fn();
    } catch (const std::exception& e) {
        fail(BASALT_ERR_PLUGIN, "{}: {} threw an exception: {} (plugins must catch)", label(s), what, e.what());
    } catch (...) {
        fail(BASALT_ERR_PLUGIN, "{}: {} threw a non-standard exception (plugins must catch)", label(s), what);
    }
    if (st != BASALT_OK) {
        std::string msg = basalt::plugin_error_message();
        if (msg.empty()) msg = std::string(what) + " failed with " + basalt::status_name(st);
        if (msg.rfind(label(s), 0) == 0) fail(st, "{}", msg);  // the plugin already named itself
        fail(st, "{}: {}", label(s), msg);
    }
}

basalt_params params_view(const basalt_sampler* s, std::vector<const char*>& k, std::vector<const char*>& v) {
    k.clear();
    v.clear();
    for (size_t i = 0; i < s->keys.size(); ++i) {
        k.push_back(s->keys[i].c_str());
        v.push_back(s->values[i].c_str());
    }
    basalt_params p{};
    p.struct_size = sizeof(p);
    p.count = k.size();
    p.keys = k.data();
    p.values = v.data();
    return p;
}

void check_candidates(const basalt_sampler* s, const basalt_candidates* c, size_t size_before) {
    if (c->size > size_before) {
        fail(BASALT_ERR_PLUGIN, "{}: grew the candidate array from {} to {} entries", label(s), size_before, c->size);
    }
    if (c->selected < -1 || (c->selected >= 0 && static_cast<size_t>(c->selected) >= c->size)) {
        fail(BASALT_ERR_PLUGIN, "{}: selected index {} is outside the {} candidates", label(s), c->selected, c->size);
    }
}

void check_candidates_in(const basalt_candidates* c) {
    if (c == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "candidates is NULL");
    if (c->struct_size < offsetof(basalt_candidates, probs_valid) + sizeof(c->probs_valid)) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_candidates.struct_size {} is too small (expected {})", c->struct_size,
             sizeof(basalt_candidates));
    }
    if (c->size > 0 && c->data == nullptr)
        fail(BASALT_ERR_INVALID_ARGUMENT, "candidates has size {} but no data", c->size);
}

}  // namespace

extern "C" {

basalt_status basalt_sampler_create(basalt_runtime* runtime, const char* name, const basalt_params* params,
                                    basalt_sampler** out) {
    return guard([&] {
        if (runtime == nullptr || name == nullptr || out == nullptr) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_sampler_create: runtime, name and out are required");
        }
        const basalt::Component* comp = runtime->plugins.find(BASALT_COMPONENT_SAMPLER, name);
        if (comp == nullptr) {
            size_t unused = 0;
            basalt_status st = basalt_runtime_find_component(runtime, BASALT_COMPONENT_SAMPLER, name, &unused);
            fail(st == BASALT_OK ? BASALT_ERR_INTERNAL : st, "{}", basalt::last_error());
        }
        auto s = std::make_unique<basalt_sampler>();
        s->name = comp->name;
        s->iface = comp->iface;
        s->vt = basalt::sampler_vtable(*comp);
        if (params != nullptr) {
            if (params->struct_size < offsetof(basalt_params, values) + sizeof(params->values)) {
                fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_params.struct_size {} is too small", params->struct_size);
            }
            for (size_t i = 0; i < params->count; ++i) {
                if (params->keys == nullptr || params->values == nullptr || params->keys[i] == nullptr ||
                    params->values[i] == nullptr) {
                    fail(BASALT_ERR_INVALID_ARGUMENT, "sampler '{}': parameter #{} has a NULL key or value", name, i);
                }
                s->keys.emplace_back(params->keys[i]);
                s->values.emplace_back(params->values[i]);
            }
        }
        std::vector<const char*> k, v;
        const basalt_params p = params_view(s.get(), k, v);
        void* inst = nullptr;
        call_plugin(s.get(), "create", [&] { return s->vt.create(basalt::host_services(), &p, &inst); });
        if (inst == nullptr) fail(BASALT_ERR_PLUGIN, "{}: create returned success but no instance", label(s.get()));
        s->instance = inst;
        *out = s.release();
    });
}

void basalt_sampler_destroy(basalt_sampler* sampler) {
    delete sampler;
}

basalt_status basalt_sampler_apply(basalt_sampler* sampler, basalt_candidates* candidates) {
    basalt_sampler* const samplers[1] = {sampler};
    basalt_candidates* const cands[1] = {candidates};
    return basalt_sampler_apply_batch(samplers, cands, 1);
}

basalt_status basalt_sampler_apply_batch(basalt_sampler* const* samplers, basalt_candidates* const* candidates,
                                         size_t n) {
    return guard([&] {
        if (n == 0) return;
        if (samplers == nullptr || candidates == nullptr) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_sampler_apply_batch: samplers and candidates are required");
        }
        std::vector<void*> instances(n);
        std::vector<size_t> sizes(n);
        for (size_t i = 0; i < n; ++i) {
            if (samplers[i] == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "sampler #{} is NULL", i);
            if (samplers[i]->iface != samplers[0]->iface) {
                fail(BASALT_ERR_INVALID_ARGUMENT, "a batch must use one sampler component: #{} is {}, #0 is {}", i,
                     label(samplers[i]), label(samplers[0]));
            }
            check_candidates_in(candidates[i]);
            instances[i] = samplers[i]->instance;
            sizes[i] = candidates[i]->size;
        }
        const basalt_sampler* s0 = samplers[0];
        call_plugin(s0, "apply", [&] { return s0->vt.apply(instances.data(), candidates, n); });
        for (size_t i = 0; i < n; ++i) check_candidates(s0, candidates[i], sizes[i]);
    });
}

basalt_status basalt_sampler_accept(basalt_sampler* sampler, int32_t token) {
    return guard([&] {
        if (sampler == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_sampler_accept: sampler is NULL");
        if (sampler->vt.accept == nullptr) return;
        call_plugin(sampler, "accept", [&] { return sampler->vt.accept(sampler->instance, token); });
    });
}

basalt_status basalt_sampler_reset(basalt_sampler* sampler) {
    return guard([&] {
        if (sampler == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_sampler_reset: sampler is NULL");
        if (sampler->vt.reset == nullptr) return;
        call_plugin(sampler, "reset", [&] { return sampler->vt.reset(sampler->instance); });
    });
}

basalt_status basalt_sampler_clone(const basalt_sampler* sampler, basalt_sampler** out) {
    return guard([&] {
        if (sampler == nullptr || out == nullptr) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_sampler_clone: sampler and out are required");
        }
        auto copy = std::make_unique<basalt_sampler>();
        copy->name = sampler->name;
        copy->iface = sampler->iface;
        copy->vt = sampler->vt;
        copy->keys = sampler->keys;
        copy->values = sampler->values;
        void* inst = nullptr;
        if (sampler->vt.clone != nullptr) {
            call_plugin(sampler, "clone", [&] { return sampler->vt.clone(sampler->instance, &inst); });
        } else {
            // Default clone for tables without one: a fresh instance from the same parameters.
            std::vector<const char*> k, v;
            const basalt_params p = params_view(copy.get(), k, v);
            call_plugin(sampler, "create", [&] { return sampler->vt.create(basalt::host_services(), &p, &inst); });
        }
        if (inst == nullptr) fail(BASALT_ERR_PLUGIN, "{}: clone returned success but no instance", label(sampler));
        copy->instance = inst;
        *out = copy.release();
    });
}

uint32_t basalt_sampler_flags(const basalt_sampler* sampler) {
    return sampler == nullptr ? 0 : sampler->vt.flags;
}

}  // extern "C"
