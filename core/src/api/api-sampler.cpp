// C API: sampler instances created from loaded sampler components (the object is exec/sampler.hpp's).
#include <basalt/basalt.h>

#include <memory>
#include <string>

#include "exec/sampler.hpp"
#include "host/runtime.hpp"
#include "model/model.hpp"
#include "support/error.hpp"

using basalt::fail;
using basalt::guard;

extern "C" {

basalt_status basalt_sampler_create(basalt_runtime* runtime, const char* name, const basalt_params* params,
                                    basalt_sampler** out) {
    return guard([&] {
        if (runtime == nullptr || name == nullptr || out == nullptr) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_sampler_create: runtime, name and out are required");
        }
        basalt_sampler::find_component(runtime->plugins, name);  // an unknown name is reported before its params
        basalt::ParamPairs pairs;
        if (params != nullptr) {
            if (params->struct_size < offsetof(basalt_params, values) + sizeof(params->values)) {
                fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_params.struct_size {} is too small", params->struct_size);
            }
            for (size_t i = 0; i < params->count; ++i) {
                if (params->keys == nullptr || params->values == nullptr || params->keys[i] == nullptr ||
                    params->values[i] == nullptr) {
                    fail(BASALT_ERR_INVALID_ARGUMENT, "sampler '{}': parameter #{} has a NULL key or value", name, i);
                }
                pairs.emplace_back(params->keys[i], params->values[i]);
            }
        }
        *out = basalt_sampler::create(runtime->plugins, name, std::move(pairs)).release();
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
    return guard([&] { basalt_sampler::apply_batch(samplers, candidates, n); });
}

basalt_status basalt_sampler_accept(basalt_sampler* sampler, int32_t token) {
    return guard([&] {
        if (sampler == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_sampler_accept: sampler is NULL");
        sampler->accept(token);
    });
}

basalt_status basalt_sampler_reset(basalt_sampler* sampler) {
    return guard([&] {
        if (sampler == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_sampler_reset: sampler is NULL");
        sampler->reset();
    });
}

basalt_status basalt_sampler_clone(const basalt_sampler* sampler, basalt_sampler** out) {
    return guard([&] {
        if (sampler == nullptr || out == nullptr) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_sampler_clone: sampler and out are required");
        }
        *out = sampler->clone().release();
    });
}

basalt_status basalt_sampler_set_vocab(basalt_sampler* sampler, const basalt_model* model) {
    return guard([&] {
        if (sampler == nullptr || model == nullptr) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_sampler_set_vocab: sampler and model are required");
        }
        sampler->set_vocab(model->sampler_vocab());
    });
}

uint32_t basalt_sampler_flags(const basalt_sampler* sampler) {
    return sampler == nullptr ? 0 : sampler->flags();
}

}  // extern "C"
