// `basalt bench --mode ragged|chunked|streams`: benchmarks of the engine's batching (docs/performance.md).
#pragma once

#include "cli.hpp"

namespace basalt::cli {

// Runs the engine benchmark named by --mode; returns the exit status.
int run_engine_bench(const po::variables_map& vm, const GlobalOptions& g);

}  // namespace basalt::cli
