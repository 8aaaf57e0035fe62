// The step-time budget: which share of the waiting prompt tokens joins a step so that the step's predicted time
// (StepCostModel) stays within a target while requests decode. By default the target is a multiple of the
// predicted time of the step's decode rows alone (so a running stream's inter-token latency at most about doubles
// while a prompt arrives); it may be a fixed number of milliseconds instead. With no decode row in the step, the
// prompts go at full speed (time to first token is all that matters then). Prompt pieces are shortened in order
// (the oldest request's first); the step's first piece keeps at least one token, so every prompt progresses.
// docs/engine.md, "Step-time budget".
#pragma once

#include <cstdint>
#include <vector>

#include "engine/step-cost-model.hpp"

namespace basalt::engine {

struct StepBudgetConfig {
    bool enabled = true;       // false: pieces are taken as packed (the fixed chunk alone)
    double max_step_ms = 0;    // > 0: the target in ms
    double decode_factor = 2;  // max_step_ms = 0: the target is this many times the decode rows' predicted time
};

// One row piece of a packed step, in the cost model's terms.
struct BudgetPiece {
    int model = 0;         // 0 or 1 (the second model's forward has its own cost model)
    bool prefill = false;  // a prompt piece, which the budget may shorten; others are fixed
    uint64_t first = 0;    // position of its first row
    uint64_t count = 0;    // in: as packed; out: what the step takes (0: none this step)
};

struct StepBudgetResult {
    bool limited = false;      // decode rows ran beside prompt pieces and the budget applied
    double budget_ms = 0;      // the target (when limited)
    double predicted_ms = 0;   // the step as planned, both models
    StepFeatures features[2];  // the step as planned, per model (what to observe once it ran)
};

// Shortens the prefill pieces (in order) so that the predicted time of the step stays within the budget; a
// piece shortened to 0 waits for a later step. At most max(16, 2 x the most prefill tokens a model has seen in one
// forward) prompt tokens join a limited step, so the models are never asked far outside what they measured. Pure
// function of its arguments.
StepBudgetResult fit_step_to_budget(std::vector<BudgetPiece>& pieces, const StepCostModel (&models)[2],
                                    const StepBudgetConfig& config);

}  // namespace basalt::engine
