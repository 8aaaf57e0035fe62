// The sampler-chain text syntax: "penalties:repeat=1.1,last_n=64;top_k:40;top_p:0.9;temp:0.7;dist:seed=42".
// Entries are separated by ';', a sampler's parameters follow its name after ':' and are separated by ','; each
// is key=value, or a bare value for the sampler's main parameter (see primary_key). docs/samplers.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace basalt {

// One entry of a chain: a sampler name and its parameters in the order given.
struct SamplerSpec {
    std::string name;
    std::vector<std::pair<std::string, std::string>> params;
};

// The key a bare value stands for: t (temp), k (top_k), p (top_p, min_p, typical), seed (dist), bias
// (logit_bias), repeat (penalties), n (no_repeat_ngram); "value" for any other sampler.
std::string primary_key(std::string_view sampler);

// Parses a chain. A malformed text throws basalt::Error(BASALT_ERR_FORMAT, "bad sampler chain: <what> in
// '<offending text>'"); sampler names and values are checked later, by the samplers themselves.
std::vector<SamplerSpec> parse_sampler_chain(std::string_view text);

// A chain in its typed form: the entries of its text, parsed once (a request's at submit) and then read and
// instantiated (SamplerChain) without going back to text.
struct SamplerChainSpec {
    std::vector<SamplerSpec> entries;

    // Parses a chain's text; throws as parse_sampler_chain.
    static SamplerChainSpec parse(std::string_view text) { return {parse_sampler_chain(text)}; }
    // Gives `seed` to every dist entry that has no seed of its own; a negative seed changes nothing.
    void seed_dist(int64_t seed);
    // The seed of the last dist entry that names one (the chain's own draws), if any.
    std::optional<int64_t> dist_seed() const;
    // The token ids named by logit_bias entries, in the order written (each item's leading integer).
    std::vector<long long> logit_bias_tokens() const;
};

// Parses a component spec "NAME[:key=value,...]" (a KV cache manager's, a decoder's) in the chain entry syntax:
// one entry, every parameter key=value, no key twice. A malformed text throws basalt::Error(BASALT_ERR_FORMAT,
// "bad <what> '<text>': <what is wrong>"), e.g. what = "KV cache spec", kind = "managers" ("names 2 managers").
SamplerSpec parse_component_spec(std::string_view text, std::string_view what, std::string_view kind);

}  // namespace basalt
