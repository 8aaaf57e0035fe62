// C API: sampler chains built from their text (sampler-chain.cpp parses it) and in-process sampler registration.
#include <basalt/basalt.h>

#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "exec/sampler-chain.hpp"
#include "host/runtime.hpp"
#include "support/error.hpp"
#include "support/params.hpp"

using basalt::fail;
using basalt::guard;

struct basalt_sampler_chain {
    std::vector<basalt_sampler*> samplers;  // owned, applied in order
    std::vector<std::string> names;
    std::vector<basalt_token_data> scratch;  // the candidates of sample(), reused between steps

    basalt_sampler_chain() = default;
    basalt_sampler_chain(const basalt_sampler_chain&) = delete;
    basalt_sampler_chain& operator=(const basalt_sampler_chain&) = delete;
    ~basalt_sampler_chain() {
        for (basalt_sampler* s : samplers) basalt_sampler_destroy(s);
    }
};

namespace {

void require_chain(const basalt_sampler_chain* chain, const char* fn) {
    if (chain == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "{}: chain is NULL", fn);
}

// Applies every sampler in order; the last one must have selected a candidate.
void apply_all(basalt_sampler_chain* chain, basalt_candidates* c) {
    for (basalt_sampler* s : chain->samplers) basalt::rethrow_if_failed(basalt_sampler_apply(s, c));
    if (c->selected < 0) fail(BASALT_ERR_PLUGIN, "sampler '{}' selected no token", chain->names.back());
}

void accept_all(basalt_sampler_chain* chain, int32_t token) {
    for (basalt_sampler* s : chain->samplers) basalt::rethrow_if_failed(basalt_sampler_accept(s, token));
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
        const std::vector<basalt::SamplerSpec> specs = basalt::parse_sampler_chain(spec);
        auto chain = std::make_unique<basalt_sampler_chain>();
        for (const basalt::SamplerSpec& entry : specs) {
            const basalt::ParamsView params(entry.params);
            basalt_sampler* s = nullptr;
            basalt::rethrow_if_failed(basalt_sampler_create(runtime, entry.name.c_str(), &params.params, &s));
            chain->samplers.push_back(s);
            chain->names.push_back(entry.name);
        }
        if ((basalt_sampler_flags(chain->samplers.back()) & BASALT_SAMPLER_SELECTS) == 0) {
            fail(BASALT_ERR_FORMAT,
                 "the last sampler of the chain ('{}') does not select a token; end the chain with one that does "
                 "(dist, greedy)",
                 chain->names.back());
        }
        *out = chain.release();
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
        if (n_vocab == 0 || n_vocab > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_sampler_chain_sample: n_vocab {} is not in 1 .. 2^31-1", n_vocab);
        }
        std::vector<basalt_token_data>& d = chain->scratch;
        d.resize(n_vocab);
        for (size_t v = 0; v < n_vocab; ++v) d[v] = {static_cast<int32_t>(v), logits[v], 0.f};
        basalt_candidates c{};
        c.struct_size = sizeof(c);
        c.data = d.data();
        c.size = d.size();
        c.selected = -1;
        apply_all(chain, &c);
        // A plugin's choice is checked before it is used: an index past the candidates, or an id outside the
        // vocabulary, would otherwise reach the decode as an invalid token (or read past the array).
        if (static_cast<uint64_t>(c.selected) >= c.size || c.size > d.size()) {
            fail(BASALT_ERR_PLUGIN, "sampler '{}' selected candidate {} of {}", chain->names.back(), c.selected,
                 c.size);
        }
        const int32_t token = d[static_cast<size_t>(c.selected)].id;
        if (token < 0 || static_cast<size_t>(token) >= n_vocab) {
            fail(BASALT_ERR_PLUGIN, "sampler '{}' selected token {}, outside the vocabulary (0..{})",
                 chain->names.back(), token, n_vocab - 1);
        }
        accept_all(chain, token);
        *out_token = token;
    });
}

basalt_status basalt_sampler_chain_apply(basalt_sampler_chain* chain, basalt_candidates* candidates) {
    return guard([&] {
        require_chain(chain, "basalt_sampler_chain_apply");
        if (candidates == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_sampler_chain_apply: candidates is NULL");
        apply_all(chain, candidates);
    });
}

basalt_status basalt_sampler_chain_accept(basalt_sampler_chain* chain, int32_t token) {
    return guard([&] {
        require_chain(chain, "basalt_sampler_chain_accept");
        accept_all(chain, token);
    });
}

basalt_status basalt_sampler_chain_reset(basalt_sampler_chain* chain) {
    return guard([&] {
        require_chain(chain, "basalt_sampler_chain_reset");
        for (basalt_sampler* s : chain->samplers) basalt::rethrow_if_failed(basalt_sampler_reset(s));
    });
}

basalt_status basalt_sampler_chain_clone(const basalt_sampler_chain* chain, basalt_sampler_chain** out) {
    return guard([&] {
        require_chain(chain, "basalt_sampler_chain_clone");
        if (out == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_sampler_chain_clone: out is NULL");
        auto copy = std::make_unique<basalt_sampler_chain>();
        for (size_t i = 0; i < chain->samplers.size(); ++i) {
            basalt_sampler* s = nullptr;
            basalt::rethrow_if_failed(basalt_sampler_clone(chain->samplers[i], &s));
            copy->samplers.push_back(s);
            copy->names.push_back(chain->names[i]);
        }
        *out = copy.release();
    });
}

size_t basalt_sampler_chain_length(const basalt_sampler_chain* chain) {
    return chain == nullptr ? 0 : chain->samplers.size();
}

basalt_sampler* basalt_sampler_chain_get(basalt_sampler_chain* chain, size_t index) {
    return chain == nullptr || index >= chain->samplers.size() ? nullptr : chain->samplers[index];
}

const char* basalt_sampler_chain_name(const basalt_sampler_chain* chain, size_t index) {
    return chain == nullptr || index >= chain->names.size() ? nullptr : chain->names[index].c_str();
}

}  // extern "C"
