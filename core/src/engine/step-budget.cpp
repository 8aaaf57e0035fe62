// The step-time budget (see step-budget.hpp).
#include "engine/step-budget.hpp"

#include <algorithm>

namespace basalt::engine {
namespace {

// Prompt tokens a limited step may take before the models have seen a forward with more than half as many.
constexpr double kMinProbe = 16;

double predict(const StepCostModel (&models)[2], const StepFeatures (&f)[2]) {
    return models[0].predict_ms(f[0]) + models[1].predict_ms(f[1]);
}

}  // namespace

StepBudgetResult fit_step_to_budget(std::vector<BudgetPiece>& pieces, const StepCostModel (&models)[2],
                                    const StepBudgetConfig& config) {
    StepBudgetResult res;
    bool decoding = false, prefilling = false;
    for (const BudgetPiece& p : pieces) {
        if (!p.prefill) res.features[p.model].add(false, p.first, p.count);
        (p.prefill ? prefilling : decoding) = true;
    }
    res.limited = config.enabled && decoding && prefilling;
    if (!res.limited) {
        for (const BudgetPiece& p : pieces) {
            if (p.prefill) res.features[p.model].add(true, p.first, p.count);
        }
        res.predicted_ms = predict(models, res.features);
        return res;
    }
    res.budget_ms = config.max_step_ms > 0 ? config.max_step_ms : config.decode_factor * predict(models, res.features);
    const double seen = std::max(models[0].max_prefill_seen(), models[1].max_prefill_seen());
    auto cap_left = static_cast<uint64_t>(std::max(kMinProbe, 2 * seen));
    bool first_piece = true;
    for (BudgetPiece& p : pieces) {
        if (!p.prefill) continue;
        // The largest n in [lo, hi] whose step stays within the budget (the prediction grows with n).
        const uint64_t lo = first_piece ? 1 : 0;
        uint64_t hi = std::max(lo, std::min(p.count, cap_left));
        auto fits = [&](uint64_t n) {
            StepFeatures f[2] = {res.features[0], res.features[1]};
            f[p.model].add(true, p.first, n);
            return predict(models, f) <= res.budget_ms;
        };
        uint64_t best = lo;
        uint64_t a = lo + 1, b = hi;
        while (a <= b) {
            const uint64_t mid = a + (b - a) / 2;
            if (fits(mid)) {
                best = mid;
                a = mid + 1;
            } else {
                b = mid - 1;
            }
        }
        p.count = best;
        res.features[p.model].add(true, p.first, best);
        cap_left -= std::min(cap_left, best);
        first_piece = false;
    }
    res.predicted_ms = predict(models, res.features);
    return res;
}

}  // namespace basalt::engine
