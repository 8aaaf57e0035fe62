// Runs a pass composed of step inputs: prepares each, places their regions in the IO buffer, uploads the inputs,
// builds the graph (or runs the last one again when its key is unchanged and no cache copy is due), computes, and
// reads the outputs back. Owns the inputs (make_step_inputs), the staging bytes and the graphs, reused from pass to
// pass. Not thread-safe: one session's thread.
#pragma once

#include <memory>
#include <vector>

#include "exec/session-resources.hpp"
#include "exec/step-input.hpp"
#include "graph/graph-builder.hpp"

namespace basalt {

class StepGraph {
  public:
    // `res` must outlive this object.
    explicit StepGraph(SessionResources& res);
    ~StepGraph();
    StepGraph(const StepGraph&) = delete;
    StepGraph& operator=(const StepGraph&) = delete;

    // Prepares and uploads the pass's inputs and makes its graph ready; fails before any compute.
    void prepare(const Step& step);
    // Runs the prepared graph; returns the backend's status (its message is the plugin error).
    basalt_status compute(const Step& step);
    // Reads every output of the computed pass back.
    void read_back(const Step& step);

  private:
    void place();
    void build(const Step& step, GraphBuilder& g);

    SessionResources& res_;
    std::vector<std::unique_ptr<StepInput>> inputs_;
    std::vector<IoRegion> regions_;
    std::vector<uint64_t> offsets_;
    uint64_t inputs_end_ = 0, end_ = 0;
    std::vector<uint8_t> staged_;
    GraphKey key_, built_;  // of this decoder step; of decoder_graph_ (empty: none valid)
    GraphBuilder decoder_graph_, encoder_graph_;
};

}  // namespace basalt
