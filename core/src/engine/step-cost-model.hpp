// The cost model of one model's forward pass on this machine, as the engine sees it: a step's wall time is
//   c0 + c_decode x decode rows + c_prefill x prefill tokens + c_attention x attended positions / 1000
// where a decode row is a row of a request that already generates (a one-token decode, a verify feed), a prefill
// token a row of a prompt, and attended positions the sum over the step's rows of the positions each row's
// attention reads (a row at position p reads p + 1). Fitted online from every step's measured time: exponentially
// forgetting weighted least squares on the relative error, robust to outliers (Huber weights against a running
// scale of the residuals) and regularised toward its own last estimate, so directions that recent steps do not
// excite (no prefill while only decodes run) keep what earlier steps taught instead of drifting. docs/engine.md,
// "Step-time budget".
#pragma once

#include <array>
#include <cstdint>

namespace basalt::engine {

// What one forward pass computes, in the model's terms.
struct StepFeatures {
    double decode_rows = 0;
    double prefill_tokens = 0;
    double attended = 0;  // sum over rows of the positions each attends (position + 1)

    // Adds `count` rows at positions first, first + 1, ... of one sequence, prefill (a prompt) or decode rows.
    void add(bool prefill, uint64_t first, uint64_t count);
    StepFeatures& operator+=(const StepFeatures& o);
};

// The fitted coefficients in milliseconds.
struct StepCost {
    double base_ms = 0;           // per forward
    double decode_row_ms = 0;     // per decode row
    double prefill_token_ms = 0;  // per prefill token
    double attention_ms = 0;      // per 1000 attended positions
};

// Not thread-safe: the engine's loop thread owns it.
class StepCostModel {
  public:
    StepCostModel() = default;

    // The predicted wall time of a forward of these rows, in ms (0 before any observation). Slopes below zero
    // count as zero, so the prediction never falls when rows are added.
    double predict_ms(const StepFeatures& f) const;
    // Refines the fit with one measured forward. Non-finite or non-positive times are ignored.
    void observe(const StepFeatures& f, double ms);

    // The current estimate (slopes clamped at zero as predict_ms uses them).
    StepCost cost() const;
    uint64_t observations() const { return n_obs_; }
    // The most prefill tokens any observed forward held (the planner does not extrapolate far beyond it).
    double max_prefill_seen() const { return max_prefill_; }

  private:
    using Vec = std::array<double, 4>;
    static Vec features(const StepFeatures& f);
    void solve();

    std::array<double, 16> info_{};  // forgetting-weighted sum of w x x^T (plus the regulariser), row-major
    Vec moment_{};                   // forgetting-weighted sum of w x y (plus the regulariser's pull)
    Vec theta_{};                    // the estimate
    double scale_ = 0;               // running scale of the relative residuals (0: none yet)
    uint64_t n_obs_ = 0;
    double max_prefill_ = 0;
};

}  // namespace basalt::engine
