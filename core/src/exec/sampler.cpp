// Sampler instances: plugin calls with the host's checks (see sampler.hpp).
#include "exec/sampler.hpp"

#include <cstddef>
#include <vector>

#include "host/host-services.hpp"
#include "support/error.hpp"

namespace basalt {
namespace {

std::string label(const Sampler& s) {
    return component_label(BASALT_COMPONENT_SAMPLER, s.name);
}

// Calls a plugin entry point; a failing status or an exception becomes an Error naming the sampler.
template <typename Fn>
void call_plugin(const Sampler& s, const char* what, Fn&& fn) {
    clear_plugin_error();
    basalt_status st = BASALT_ERR_INTERNAL;
    try {
        st = fn();
    } catch (const std::exception& e) {
        fail(BASALT_ERR_PLUGIN, "{}: {} threw an exception: {} (plugins must catch)", label(s), what, e.what());
    } catch (...) {
        fail(BASALT_ERR_PLUGIN, "{}: {} threw a non-standard exception (plugins must catch)", label(s), what);
    }
    if (st != BASALT_OK) {
        std::string msg = plugin_error_message();
        if (msg.empty()) msg = std::string(what) + " failed with " + status_name(st);
        if (msg.rfind(label(s), 0) == 0) fail(st, "{}", msg);  // the plugin already named itself
        fail(st, "{}: {}", label(s), msg);
    }
}

void check_candidates(const Sampler& s, const basalt_candidates* c, size_t size_before) {
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
}  // namespace basalt

using basalt::fail;

const basalt::Component& basalt_sampler::find_component(const basalt::PluginHost& plugins, const std::string& name) {
    if (const basalt::Component* c = plugins.find(BASALT_COMPONENT_SAMPLER, name)) return *c;
    std::string available;
    for (const basalt::Component& c : plugins.components()) {
        if (c.kind == BASALT_COMPONENT_SAMPLER) available += available.empty() ? c.name : ", " + c.name;
    }
    fail(BASALT_ERR_NOT_FOUND, "no {} named '{}' is loaded (available: {})",
         basalt::kind_name(BASALT_COMPONENT_SAMPLER), name, available.empty() ? "none" : available);
}

basalt_sampler::~basalt_sampler() {
    if (instance != nullptr && vt.destroy != nullptr) vt.destroy(instance);
}

std::unique_ptr<basalt_sampler> basalt_sampler::create(const basalt::PluginHost& plugins, const std::string& name,
                                                       basalt::ParamPairs params) {
    const basalt::Component& comp = find_component(plugins, name);
    auto s = std::make_unique<basalt_sampler>();
    s->name = comp.name;
    s->iface = comp.iface;
    s->vt = basalt::sampler_vtable(comp);
    s->params = std::move(params);
    const basalt::ParamsView p(s->params);
    void* inst = nullptr;
    basalt::call_plugin(*s, "create", [&] { return s->vt.create(basalt::host_services(), &p.params, &inst); });
    if (inst == nullptr) fail(BASALT_ERR_PLUGIN, "{}: create returned success but no instance", basalt::label(*s));
    s->instance = inst;
    return s;
}

void basalt_sampler::apply_batch(basalt_sampler* const* samplers, basalt_candidates* const* candidates, size_t n) {
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
                 basalt::label(*samplers[i]), basalt::label(*samplers[0]));
        }
        basalt::check_candidates_in(candidates[i]);
        instances[i] = samplers[i]->instance;
        sizes[i] = candidates[i]->size;
    }
    const basalt_sampler& s0 = *samplers[0];
    basalt::call_plugin(s0, "apply", [&] { return s0.vt.apply(instances.data(), candidates, n); });
    for (size_t i = 0; i < n; ++i) basalt::check_candidates(s0, candidates[i], sizes[i]);
}

void basalt_sampler::apply(basalt_candidates& candidates) {
    basalt_sampler* const samplers[1] = {this};
    basalt_candidates* const cands[1] = {&candidates};
    apply_batch(samplers, cands, 1);
}

void basalt_sampler::accept(int32_t token) {
    if (vt.accept == nullptr) return;
    basalt::call_plugin(*this, "accept", [&] { return vt.accept(instance, token); });
}

void basalt_sampler::reset() {
    if (vt.reset == nullptr) return;
    basalt::call_plugin(*this, "reset", [&] { return vt.reset(instance); });
}

void basalt_sampler::set_vocab(const basalt_vocab_view* v) {
    vocab = v;
    if (vt.set_vocab == nullptr || v == nullptr) return;
    basalt::call_plugin(*this, "set_vocab", [&] { return vt.set_vocab(instance, v); });
}

void basalt_sampler::rollback(size_t n) {
    if (n == 0) return;
    if (vt.rollback == nullptr) {
        fail(BASALT_ERR_UNSUPPORTED, "{}: cannot roll back accepted tokens (no rollback entry)", basalt::label(*this));
    }
    basalt::call_plugin(*this, "rollback", [&] { return vt.rollback(instance, n); });
}

std::unique_ptr<basalt_sampler> basalt_sampler::clone() const {
    auto copy = std::make_unique<basalt_sampler>();
    copy->name = name;
    copy->iface = iface;
    copy->vt = vt;
    copy->params = params;
    copy->vocab = vocab;
    void* inst = nullptr;
    if (vt.clone != nullptr) {
        basalt::call_plugin(*this, "clone", [&] { return vt.clone(instance, &inst); });
    } else {
        // Default clone for tables without one: a fresh instance from the same parameters.
        const basalt::ParamsView p(copy->params);
        basalt::call_plugin(*this, "create", [&] { return vt.create(basalt::host_services(), &p.params, &inst); });
    }
    if (inst == nullptr) fail(BASALT_ERR_PLUGIN, "{}: clone returned success but no instance", basalt::label(*this));
    copy->instance = inst;
    if (vt.clone == nullptr) copy->set_vocab(vocab);  // a fresh instance needs the vocabulary again
    return copy;
}
