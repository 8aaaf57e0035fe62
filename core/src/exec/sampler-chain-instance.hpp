// The object behind the opaque basalt_sampler_chain handle: a typed chain's sampler instances, applied in order.
// The engine holds these directly (one per request-local sequence); the C API functions are thin wrappers.
#pragma once

#include <basalt/basalt.h>

#include <memory>
#include <string>
#include <vector>

#include "exec/sampler-chain.hpp"
#include "exec/sampler.hpp"

struct basalt_sampler_chain {
    std::vector<std::unique_ptr<basalt_sampler>> samplers;  // applied in order; the last one selects
    std::vector<basalt_token_data> scratch;                 // the candidates of sample(), reused between steps

    // Instantiates every entry of spec; throws Error for an unknown sampler, a refused parameter, or a last
    // sampler that selects no token.
    // vocab (borrowed, must outlive the chain and its clones): the model's vocabulary for samplers that take one;
    // NULL refuses samplers flagged BASALT_SAMPLER_NEEDS_VOCAB.
    static std::unique_ptr<basalt_sampler_chain> create(const basalt::PluginHost& plugins,
                                                        const basalt::SamplerChainSpec& spec,
                                                        const basalt_vocab_view* vocab = nullptr);
    // Draws a token from a logits row of n_vocab entries (all samplers, then accept); throws Error when a sampler
    // fails or selects outside the candidates or the vocabulary.
    int32_t sample(const float* logits, size_t n_vocab);
    // Applies every sampler in order; the last must have selected a candidate. Throws Error.
    void apply(basalt_candidates& candidates);
    // Applies every sampler but the last (the selecting one): the chain's filtered distribution. Throws Error.
    void apply_filters(basalt_candidates& candidates);
    // Records an accepted token with every sampler; throws Error.
    void accept(int32_t token);
    // Records a prompt token with every sampler whose history includes the prompt (not the
    // BASALT_SAMPLER_GENERATED_ONLY ones, e.g. a grammar); throws Error.
    void accept_prompt(int32_t token);
    // Forgets the last n tokens accepted (by sample or accept) with every sampler that keeps history; throws
    // Error UNSUPPORTED naming a stateful sampler that cannot roll back.
    void rollback(size_t n);
    // Resets every sampler's history; throws Error.
    void reset();
    // A copy with every sampler's state; throws Error.
    std::unique_ptr<basalt_sampler_chain> clone() const;

    size_t size() const { return samplers.size(); }
    const std::string& name(size_t i) const { return samplers[i]->name; }
    // Whether the selecting sampler is greedy (decoders may take the argmax themselves).
    bool ends_greedy() const { return !samplers.empty() && samplers.back()->name == "greedy"; }
    // The samplers without BASALT_SAMPLER_DRAFT_SAFE, as "'a', 'b'" (empty: all are).
    std::string draft_unsafe() const;
};

namespace basalt {
using SamplerChain = basalt_sampler_chain;
}  // namespace basalt
