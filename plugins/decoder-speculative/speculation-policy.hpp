// The speculative decoder's adaptive policy: a running estimate of how often each draft position is accepted and
// of what the steps cost (a draft step, a target forward of r rows), measured from the steps the request runs,
// and before each round the draft length k (0 = plain decoding) that maximises expected tokens per second given
// how many rows other requests put into the same steps. The acceptance may be kept apart per context (prompt
// lookup: the length of the n-gram its drafts continue, which predicts their acceptance far better than the
// position alone); the costs are shared. Pure arithmetic (no clock, no host): the decoder feeds it observations;
// tests drive it with chosen costs. docs/decoding.md ("Adaptive draft length").
#ifndef BASALT_PLUGIN_SPECULATION_POLICY_HPP
#define BASALT_PLUGIN_SPECULATION_POLICY_HPP

#include <algorithm>
#include <cstddef>
#include <vector>

namespace basalt::speculative {

class SpeculationPolicy {
  public:
    // k_max: the longest draft; model_drafts: drafting costs a forward of the draft model per token (false: prompt
    // lookup, whose drafts cost nothing and whose round is the verify alone); contexts: acceptance estimates kept
    // apart (0 .. contexts - 1).
    SpeculationPolicy(int k_max, bool model_drafts, int contexts = 1)
        : k_max_(k_max),
          model_drafts_(model_drafts),
          contexts_(std::max(1, contexts)),
          accept_(static_cast<size_t>(contexts_) * (static_cast<size_t>(k_max) + 1), 0.0),
          seen_(accept_.size(), 0.0) {}

    // A round that verified k drafts (requested; fewer proposed counts the missing ones as rejected) of which the
    // first `accepted` were accepted, in `context`: updates that context's per-position acceptance rates (position i
    // is observed when all before it were accepted).
    void observe_round(int k, int accepted, int context = 0) {
        for (int i = 1; i <= k && i <= accepted + 1; ++i) {
            const size_t u = at(i, context);
            seen_[u] = std::min(seen_[u] + 1.0, kWindow);
            accept_[u] += (i <= accepted ? 1.0 - accept_[u] : -accept_[u]) / seen_[u];
        }
    }

    // A target forward (verify or plain step) of `rows` rows in all (this request's and others') took ms. Once
    // a few are in, a time over kSpike times the estimate counts as that (a descheduled thread, a page fault).
    void observe_target(int rows, double ms) {
        if (rows < 1 || !(ms > 0)) return;
        if (w_ >= 3) ms = std::min(ms, kSpike * target_ms(rows));
        const double x = rows - 1;
        w_ = std::min(w_ + 1.0, kWindow);
        const double a = 1.0 / w_;
        mx_ += a * (x - mx_);
        my_ += a * (ms - my_);
        mxx_ += a * (x * x - mxx_);
        mxy_ += a * (x * ms - mxy_);
    }

    // A draft step (one or two tokens into the draft model, nothing of the target's in the step) took ms.
    void observe_draft(double ms) {
        if (!(ms > 0)) return;
        if (wd_ >= 3) ms = std::min(ms, kSpike * draft_ms_);
        wd_ = std::min(wd_ + 1.0, kWindow);
        draft_ms_ += (ms - draft_ms_) / wd_;
    }

    // Whether a target cost has been observed (before it, choose() returns k_max: the first round measures).
    bool has_costs() const { return w_ > 0 && (!model_drafts_ || wd_ > 0); }

    // The estimated time (ms) of a target forward of `rows` rows: a + b (rows - 1), fitted to the observations
    // (ridge towards the start-up slope: each extra row costs kPriorSlope of a one-row step). 0 for 0 rows.
    double target_ms(int rows) const {
        if (rows <= 0 || w_ <= 0) return 0;
        const double var = std::max(0.0, mxx_ - mx_ * mx_), cov = mxy_ - mx_ * my_;
        const double one_row = my_ / (1.0 + kPriorSlope * mx_);  // the prior line through the mean
        const double b = std::max(0.0, (cov + kRidge * kPriorSlope * one_row) / (var + kRidge));
        const double a = std::max(0.05 * my_, my_ - b * mx_);
        return a + std::min(b, a) * (rows - 1);  // an extra row never costs more than a one-row forward
    }
    double draft_ms() const { return model_drafts_ ? draft_ms_ : 0.0; }

    // The acceptance estimate of draft position i (1-based; positions never observed take the one before) in
    // `context`.
    double acceptance(int i, int context = 0) const {
        double v = kPriorAcceptance;
        for (int j = 1; j <= i; ++j)
            if (seen_[at(j, context)] > 0) v = accept_[at(j, context)];
        return v;
    }

    // Expected tokens of a round with k drafts: 1 + sum over j of the chance the first j are all accepted.
    double expected_tokens(int k, int context = 0) const {
        double e = 1, run = 1;
        for (int i = 1; i <= k; ++i) {
            run *= acceptance(i, context);
            e += run;
        }
        return e;
    }

    // Expected tokens per millisecond of a round with k drafts when other requests put `others` target rows into
    // every step: k draft steps (each a step of the others' target rows plus this draft; one more when the draft
    // must first catch up with tokens decoded plainly), then the verify of k + 1 rows beside them. k = 0 is plain
    // decoding.
    double rate(int k, int others, bool catch_up = false, int context = 0) const {
        const int steps = k > 0 && catch_up ? k + 1 : k;
        const double draft_round = model_drafts_ ? steps * (target_ms(others) + draft_ms()) : 0.0;
        const double ms = draft_round + target_ms(others + k + 1);
        return ms > 0 ? expected_tokens(k, context) / ms : 0.0;
    }

    // The draft length (0..min(k_max, room)) with the highest expected tokens per second, the longer on a tie
    // (catch_up: the draft is behind by tokens decoded plainly); the longest while the costs or the acceptance are
    // unmeasured. Drafting must beat plain decoding by kMargin (the timings are noisy), except where it cannot
    // lose whatever the timings: drafts that cost nothing (prompt lookup) and are all expected to be accepted give
    // k + 1 tokens for a forward of k more rows, and an extra row never costs more than a one-row forward.
    // (context: whose acceptance; one never observed measures with its longest draft too.)
    int choose(int others, int room, bool catch_up = false, int context = 0) const {
        const int hi = std::min(k_max_, room);
        if (hi <= 0) return 0;
        if (!has_costs() || seen_[at(1, context)] <= 0) return hi;  // the first drafting round measures
        int best = 1;
        double best_rate = rate(1, others, catch_up, context);
        for (int k = 2; k <= hi; ++k) {
            const double r = rate(k, others, catch_up, context);
            if (r >= best_rate) {
                best = k;
                best_rate = r;
            }
        }
        if (!model_drafts_ && expected_tokens(best, context) >= best + 1 - 1e-9) return best;
        return best_rate > rate(0, others) * (1.0 + kMargin) ? best : 0;
    }

    // The least acceptance rate a pair needs (the same at every position) for k drafts to beat plain decoding at
    // the measured costs with `others` rows beside it; > 1 when no acceptance wins.
    double break_even_acceptance(int k, int others) const {
        const double draft_round = model_drafts_ ? k * (target_ms(others) + draft_ms()) : 0.0;
        const double need = (draft_round + target_ms(others + k + 1)) / target_ms(others + 1);  // tokens per round
        if (need > k + 1) return 2.0;
        double lo = 0, hi = 1;
        for (int it = 0; it < 40; ++it) {
            const double mid = (lo + hi) / 2;
            double e = 1, run = 1;
            for (int i = 1; i <= k; ++i) e += (run *= mid);
            (e < need ? lo : hi) = mid;
        }
        return hi;
    }

    int k_max() const { return k_max_; }
    int contexts() const { return contexts_; }

  private:
    // Index of position i (1..k_max) of `context` (clamped into 0 .. contexts - 1) in accept_ / seen_.
    size_t at(int i, int context) const {
        const int c = std::clamp(context, 0, contexts_ - 1);
        return static_cast<size_t>(c) * (static_cast<size_t>(k_max_) + 1) + static_cast<size_t>(i);
    }

    static constexpr double kWindow = 16;  // observations an estimate averages over (then exponential decay)
    static constexpr double kPriorSlope = 0.3;
    static constexpr double kSpike = 3;
    static constexpr double kRidge = 1.0;
    static constexpr double kPriorAcceptance = 0.5;
    static constexpr double kMargin = 0.1;  // drafting must beat plain by this much (noise in the timings)

    int k_max_;
    bool model_drafts_;
    int contexts_;
    std::vector<double> accept_, seen_;  // per context, per position 1..k_max (index 0 of each context unused)
    double w_ = 0, mx_ = 0, my_ = 0, mxx_ = 0, mxy_ = 0;  // target cost: running moments of (rows - 1, ms)
    double wd_ = 0, draft_ms_ = 0;
};

// When plain decoding is chosen, a probe round re-measures the acceptance now and then: after `start` plain
// tokens, the interval doubling (up to `most`) while probes keep choosing plain, back to `start` when one drafts.
class ProbeSchedule {
  public:
    ProbeSchedule(int start, int most) : start_(start), most_(most), interval_(start) {}
    // A plain token was emitted; true when the next round should probe.
    bool plain_token() { return ++since_ >= interval_; }
    // A probe ran; `drafting`: the policy now drafts.
    void probed(bool drafting) {
        since_ = 0;
        interval_ = drafting ? start_ : std::min(interval_ * 2, most_);
    }
    void drafting() {
        since_ = 0;
        interval_ = start_;
    }

  private:
    int start_, most_;
    int since_ = 0, interval_;
};

}  // namespace basalt::speculative

#endif
