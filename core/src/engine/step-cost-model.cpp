// The step cost model's fit (see step-cost-model.hpp).
#include "engine/step-cost-model.hpp"

#include <algorithm>
#include <cmath>

namespace basalt::engine {
namespace {

// Forgetting per observation: the fit's memory is about 1 / (1 - kForget) = 33 forwards, short enough to follow
// the machine's load, long enough to average its noise.
constexpr double kForget = 0.97;
// The regulariser: as strong as a small fraction of one observation. It keeps the system solvable before every
// direction is excited and pulls unexcited directions toward the last estimate (not toward zero).
constexpr double kRidge = 1e-4;
// Huber weights: a relative residual beyond kHuber running scales counts linearly, not squared.
constexpr double kHuber = 2.5;
// The running scale's floor (relative): below it the noise of a quiet machine would make every change an outlier.
constexpr double kScaleFloor = 0.05;

}  // namespace

void StepFeatures::add(bool prefill, uint64_t first, uint64_t count) {
    const auto n = static_cast<double>(count);
    (prefill ? prefill_tokens : decode_rows) += n;
    // Rows at positions first .. first + count - 1 read first + 1 .. first + count positions.
    attended += n * static_cast<double>(first) + n * (n + 1) / 2;
}

StepFeatures& StepFeatures::operator+=(const StepFeatures& o) {
    decode_rows += o.decode_rows;
    prefill_tokens += o.prefill_tokens;
    attended += o.attended;
    return *this;
}

StepCostModel::Vec StepCostModel::features(const StepFeatures& f) {
    return {1.0, f.decode_rows, f.prefill_tokens, f.attended / 1000.0};
}

double StepCostModel::predict_ms(const StepFeatures& f) const {
    const StepCost c = cost();
    const double t = c.base_ms + c.decode_row_ms * f.decode_rows + c.prefill_token_ms * f.prefill_tokens +
                     c.attention_ms * f.attended / 1000.0;
    return std::max(0.0, t);
}

StepCost StepCostModel::cost() const {
    return {theta_[0], std::max(0.0, theta_[1]), std::max(0.0, theta_[2]), std::max(0.0, theta_[3])};
}

void StepCostModel::observe(const StepFeatures& f, double ms) {
    if (!std::isfinite(ms) || ms <= 0) return;
    if (n_obs_ == 0) {
        for (size_t i = 0; i < 4; ++i) info_[i * 4 + i] = kRidge;
    }
    const Vec x = features(f);
    double pred = 0;
    for (size_t i = 0; i < 4; ++i) pred += theta_[i] * x[i];
    const double rel = std::abs(ms - pred) / ms;
    double huber = 1.0;
    if (scale_ > 0) {
        const double s = std::max(scale_, kScaleFloor);
        if (rel > kHuber * s) huber = kHuber * s / rel;
        // The scale follows the residuals, each counted at most 3 scales (one outlier cannot blow it up; a lasting
        // change of the machine raises it within tens of steps).
        scale_ = 0.9 * scale_ + 0.1 * std::min(rel, 3 * s);
    } else if (n_obs_ > 0) {
        scale_ = std::max(rel, kScaleFloor);  // the first residual of a prediction
    }
    // Relative error: a 4-second prompt step must not drown the 10 ms decode steps the planner predicts.
    const double w = huber / (ms * ms);
    for (size_t i = 0; i < 4; ++i) {
        for (size_t j = 0; j < 4; ++j) {
            info_[i * 4 + j] = kForget * info_[i * 4 + j] + w * x[i] * x[j] + (i == j ? (1 - kForget) * kRidge : 0.0);
        }
        moment_[i] = kForget * moment_[i] + w * x[i] * ms + (1 - kForget) * kRidge * theta_[i];
    }
    ++n_obs_;
    max_prefill_ = std::max(max_prefill_, f.prefill_tokens);
    solve();
}

// theta = info^-1 moment by Cholesky (info is symmetric positive definite: the regulariser's diagonal is in it).
void StepCostModel::solve() {
    std::array<double, 16> l{};
    for (size_t i = 0; i < 4; ++i) {
        for (size_t j = 0; j <= i; ++j) {
            double s = info_[i * 4 + j];
            for (size_t k = 0; k < j; ++k) s -= l[i * 4 + k] * l[j * 4 + k];
            if (i == j) {
                if (!(s > 0)) return;  // lost to rounding: keep the last estimate
                l[i * 4 + i] = std::sqrt(s);
            } else {
                l[i * 4 + j] = s / l[j * 4 + j];
            }
        }
    }
    Vec y{};
    for (size_t i = 0; i < 4; ++i) {
        double s = moment_[i];
        for (size_t k = 0; k < i; ++k) s -= l[i * 4 + k] * y[k];
        y[i] = s / l[i * 4 + i];
    }
    Vec t{};
    for (size_t i = 4; i-- > 0;) {
        double s = y[i];
        for (size_t k = i + 1; k < 4; ++k) s -= l[k * 4 + i] * t[k];
        t[i] = s / l[i * 4 + i];
    }
    for (const double v : t) {
        if (!std::isfinite(v)) return;
    }
    theta_ = t;
}

}  // namespace basalt::engine
