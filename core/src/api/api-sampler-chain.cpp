// C API: sampler chains (the typed chain of exec/sampler-chain-instance.hpp, built from its text) and in-process
// sampler registration.
#include <basalt/basalt.h>

#include <memory>

#include "exec/sampler-chain-instance.hpp"
#include "host/runtime.hpp"
#include "support/error.hpp"

using basalt::fail;
using basalt::guard;

namespace {

void require_chain(const basalt_sampler_chain* chain, const char* fn) {
    if (chain == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "{}: chain is NULL", fn);
}

}  // namespace

extern "C" {

basalt_status basalt_runtime_register_sampler(basalt_runtime* runtime, const char* name,
                                              const basalt_sampler_iface* iface) {
    return guard([&] {
        if (runtime == nullptr || name == nullptr) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_runtime_register_sampler: runtime and name are required");
        }
        runtime->plugins.register_sampler(name, iface);
    });
}

basalt_status basalt_sampler_chain_create(basalt_runtime* runtime, const char* spec, basalt_sampler_chain** out) {
    return guard([&] {
        if (runtime == nullptr || spec == nullptr || out == nullptr) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_sampler_chain_create: runtime, spec and out are required");
        }
        *out = basalt_sampler_chain::create(runtime->plugins, basalt::SamplerChainSpec::parse(spec)).release();
    });
}

void basalt_sampler_chain_destroy(basalt_sampler_chain* chain) {
    delete chain;
}

basalt_status basalt_sampler_chain_sample(basalt_sampler_chain* chain, const float* logits, size_t n_vocab,
                                          int32_t* out_token) {
    return guard([&] {
        require_chain(chain, "basalt_sampler_chain_sample");
        if (logits == nullptr || out_token == nullptr) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_sampler_chain_sample: logits and out_token are required");
        }
        *out_token = chain->sample(logits, n_vocab);
    });
}

basalt_status basalt_sampler_chain_apply(basalt_sampler_chain* chain, basalt_candidates* candidates) {
    return guard([&] {
        require_chain(chain, "basalt_sampler_chain_apply");
        if (candidates == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_sampler_chain_apply: candidates is NULL");
        chain->apply(*candidates);
    });
}

basalt_status basalt_sampler_chain_accept(basalt_sampler_chain* chain, int32_t token) {
    return guard([&] {
        require_chain(chain, "basalt_sampler_chain_accept");
        chain->accept(token);
    });
}

basalt_status basalt_sampler_chain_reset(basalt_sampler_chain* chain) {
    return guard([&] {
        require_chain(chain, "basalt_sampler_chain_reset");
        chain->reset();
    });
}

basalt_status basalt_sampler_chain_clone(const basalt_sampler_chain* chain, basalt_sampler_chain** out) {
    return guard([&] {
        require_chain(chain, "basalt_sampler_chain_clone");
        if (out == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_sampler_chain_clone: out is NULL");
        *out = chain->clone().release();
    });
}

size_t basalt_sampler_chain_length(const basalt_sampler_chain* chain) {
    return chain == nullptr ? 0 : chain->size();
}

basalt_sampler* basalt_sampler_chain_get(basalt_sampler_chain* chain, size_t index) {
    return chain == nullptr || index >= chain->size() ? nullptr : chain->samplers[index].get();
}

const char* basalt_sampler_chain_name(const basalt_sampler_chain* chain, size_t index) {
    return chain == nullptr || index >= chain->size() ? nullptr : chain->name(index).c_str();
}

}  // extern "C"
