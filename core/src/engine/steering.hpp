// Activation steering of a request: its "FILE[:SCALE[:A-B]]" specs loaded through the steering plugins into one
// table of per-layer vectors (summed and scaled), and the table's identity, which joins the prefix-cache salt.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "host/runtime.hpp"
#include "model/model-hparams.hpp"

namespace basalt::engine {

// One --steer / "steer" entry: a control-vector file, its scale (default 1) and a layer range (default all).
struct SteerSpec {
    std::string file;
    float scale = 1.f;
    std::string layers;  // "A-B" (inclusive, layers counted from 0) or empty
};

// Parses "FILE[:SCALE[:A-B]]" from the right, so a file name may itself hold ':' (a trailing piece counts as a
// scale only when it is a number, as a range only when it is A-B). Throws naming the spec for a bad scale or range.
SteerSpec parse_steer_spec(const std::string& spec);

struct SteerTable {
    std::vector<float> vectors;   // n_layer x n_embd: layer il at il * n_embd
    std::vector<uint8_t> layers;  // per layer: added after it
    uint64_t hash = 0;            // of the layers and the vectors' bits (never 0)
};

// Loads and sums the specs with steering component `component` (the "vector" plugin by default) for a model of
// these hyperparameters. Throws the plugin's refusal (naming the file and both figures) or NOT_FOUND naming the
// steering components loaded.
SteerTable load_steering(basalt_runtime& runtime, const ModelHparams& hp, const std::vector<std::string>& specs,
                         const std::string& component = "vector");

// The request's prefix-cache salt with the steering identity mixed in (salt itself when hash is 0).
uint64_t steer_salt(uint64_t salt, uint64_t hash);

}  // namespace basalt::engine
