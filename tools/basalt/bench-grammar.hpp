// `basalt bench --mode grammar`: the grammar sampler's cost per token (docs/structured-output.md).
#pragma once

#include "cli.hpp"

namespace basalt::cli {

// Runs the grammar benchmark over the vocabularies of --model and --vocab; returns the exit status.
int run_grammar_bench(const po::variables_map& vm, const GlobalOptions& g);

}  // namespace basalt::cli
