// The `--samplers` chain syntax of `basalt run`: "penalties:repeat=1.1,last_n=64;top_k:40;top_p:0.9;temp:0.7;dist".
// Entries are separated by ';', a sampler's parameters follow its name after ':' and are separated by ','; each
// is key=value, or a bare value for the sampler's main parameter (see primary_key).
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace basalt::cli {

struct SamplerSpec {
    std::string name;
    std::vector<std::pair<std::string, std::string>> params;  // in the order given
};

// A malformed chain; what() names the offending text.
class ChainSyntaxError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// The key a bare value stands for: t (temp), k (top_k), p (top_p, min_p, typical), seed (dist), bias
// (logit_bias), repeat (penalties); "value" for any other sampler.
std::string primary_key(std::string_view sampler);

// Parses a chain; throws ChainSyntaxError.
std::vector<SamplerSpec> parse_sampler_chain(std::string_view text);

// The chain the --temp/--top-k/--top-p/--seed shorthands stand for ("greedy" when temp <= 0).
std::string shorthand_chain(float temp, long long top_k, float top_p, long long seed);

}  // namespace basalt::cli
