// A typed chain's sampler instances (see sampler-chain-instance.hpp).
#include "exec/sampler-chain-instance.hpp"

#include <limits>

#include "support/error.hpp"

using basalt::fail;

std::unique_ptr<basalt_sampler_chain> basalt_sampler_chain::create(const basalt::PluginHost& plugins,
                                                                   const basalt::SamplerChainSpec& spec,
                                                                   const basalt_vocab_view* vocab) {
    auto chain = std::make_unique<basalt_sampler_chain>();
    for (const basalt::SamplerSpec& entry : spec.entries) {
        chain->samplers.push_back(basalt_sampler::create(plugins, entry.name, entry.params));
        basalt_sampler& s = *chain->samplers.back();
        if ((s.flags() & BASALT_SAMPLER_NEEDS_VOCAB) != 0 && vocab == nullptr) {
            fail(BASALT_ERR_INVALID_ARGUMENT,
                 "sampler '{}' needs the model's vocabulary: use it in a request's chain, not a model-less chain",
                 s.name);
        }
        s.set_vocab(vocab);
    }
    if (chain->samplers.empty()) fail(BASALT_ERR_FORMAT, "bad sampler chain: no samplers");
    if ((chain->samplers.back()->flags() & BASALT_SAMPLER_SELECTS) == 0) {
        fail(BASALT_ERR_FORMAT,
             "the last sampler of the chain ('{}') does not select a token; end the chain with one that does "
             "(dist, greedy)",
             chain->samplers.back()->name);
    }
    return chain;
}

void basalt_sampler_chain::apply(basalt_candidates& candidates) {
    for (auto& s : samplers) s->apply(candidates);
    if (candidates.selected < 0) fail(BASALT_ERR_PLUGIN, "sampler '{}' selected no token", samplers.back()->name);
}

void basalt_sampler_chain::apply_filters(basalt_candidates& candidates) {
    for (size_t i = 0; i + 1 < samplers.size(); ++i) samplers[i]->apply(candidates);
}

int32_t basalt_sampler_chain::sample(const float* logits, size_t n_vocab) {
    if (n_vocab == 0 || n_vocab > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_sampler_chain_sample: n_vocab {} is not in 1 .. 2^31-1", n_vocab);
    }
    std::vector<basalt_token_data>& d = scratch;
    d.resize(n_vocab);
    for (size_t v = 0; v < n_vocab; ++v) d[v] = {static_cast<int32_t>(v), logits[v], 0.f};
    basalt_candidates c{};
    c.struct_size = sizeof(c);
    c.data = d.data();
    c.size = d.size();
    c.selected = -1;
    apply(c);
    // A plugin's choice is checked before it is used: an index past the candidates, or an id outside the
    // vocabulary, would otherwise reach the decode as an invalid token (or read past the array).
    const std::string& last = samplers.back()->name;
    if (static_cast<uint64_t>(c.selected) >= c.size || c.size > d.size()) {
        fail(BASALT_ERR_PLUGIN, "sampler '{}' selected candidate {} of {}", last, c.selected, c.size);
    }
    const int32_t token = d[static_cast<size_t>(c.selected)].id;
    if (token < 0 || static_cast<size_t>(token) >= n_vocab) {
        fail(BASALT_ERR_PLUGIN, "sampler '{}' selected token {}, outside the vocabulary (0..{})", last, token,
             n_vocab - 1);
    }
    accept(token);
    return token;
}

void basalt_sampler_chain::accept(int32_t token) {
    for (auto& s : samplers) s->accept(token);
}

void basalt_sampler_chain::accept_prompt(int32_t token) {
    for (auto& s : samplers) {
        if ((s->flags() & BASALT_SAMPLER_GENERATED_ONLY) == 0) s->accept(token);
    }
}

void basalt_sampler_chain::rollback(size_t n) {
    for (auto& s : samplers) {
        if (s->vt.accept != nullptr) s->rollback(n);
    }
}

void basalt_sampler_chain::reset() {
    for (auto& s : samplers) s->reset();
}

std::unique_ptr<basalt_sampler_chain> basalt_sampler_chain::clone() const {
    auto copy = std::make_unique<basalt_sampler_chain>();
    for (const auto& s : samplers) copy->samplers.push_back(s->clone());
    return copy;
}

std::string basalt_sampler_chain::draft_unsafe() const {
    std::string unsafe;
    for (const auto& s : samplers) {
        if ((s->flags() & BASALT_SAMPLER_DRAFT_SAFE) == 0) unsafe += (unsafe.empty() ? "'" : ", '") + s->name + "'";
    }
    return unsafe;
}
