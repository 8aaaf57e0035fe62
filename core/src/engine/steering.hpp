// Activation steering of a request: its "FILE[:SCALE[:A-B]]" specs loaded through the steering plugins into one
// table of per-layer vectors (summed and scaled), and the table's identity, which joins the prefix-cache salt.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
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

// Control vectors loaded once (an operator's, e.g. `basalt serve --control-vector NAME=FILE`) and named: a spec
// "NAME[:SCALE[:A-B]]" whose NAME is registered uses the vectors kept here and opens no file. Thread-safe.
class SteerRegistry {
  public:
    // Keeps `table` (scale 1, the layers its file has) under `name` (1..255 bytes, no ':'). Throws
    // INVALID_ARGUMENT for a bad name, DUPLICATE for a name already registered.
    void add(const std::string& name, SteerTable table);
    // The table under `name`, or false. Copies it out.
    bool find(const std::string& name, SteerTable& out) const;
    size_t size() const;

  private:
    mutable std::mutex mutex_;
    std::map<std::string, SteerTable> tables_;
};

// Loads and sums the specs with steering component `component` (the "vector" plugin by default) for a model of
// these hyperparameters; a spec naming an entry of `registry` (may be null) uses that entry. Refuses an
// encoder-decoder model (UNSUPPORTED), a layer range past the model's layers, and the plugin's refusals (naming
// the file and both figures); NOT_FOUND names the steering components loaded.
SteerTable load_steering(basalt_runtime& runtime, const ModelHparams& hp, const std::vector<std::string>& specs,
                         const SteerRegistry* registry = nullptr, const std::string& component = "vector");

// The request's prefix-cache salt with the steering identity mixed in (salt itself when hash is 0).
uint64_t steer_salt(uint64_t salt, uint64_t hash);

}  // namespace basalt::engine
