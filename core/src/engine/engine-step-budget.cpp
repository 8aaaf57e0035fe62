// The engine's side of the step-time budget: the packed rows as the cost model sees them (positions from the
// sessions, prompt pieces told from the rows of requests that already generate), the budget's cut applied to them,
// and each forward's measured time fed back to its model's cost model. docs/engine.md, "Step-time budget".
#include <algorithm>

#include "engine/engine.hpp"
#include "support/log.hpp"

namespace basalt::engine {

void Engine::fit_step_budget(std::vector<StepRow> (&rows)[2]) {
    std::vector<BudgetPiece> pieces;
    for (int m = 0; m < 2; ++m) {
        for (const StepRow& row : rows[m]) {
            const basalt_decoder_feed& f = row.r->feeds[row.feed];
            const int32_t sid = row.r->seq_ids[m][static_cast<size_t>(f.seq)];
            BudgetPiece p;
            p.model = m;
            // A prompt: a request that has not generated yet, fed more than one token. Its pieces may wait; a
            // running request's feeds (decodes, a speculative verify) never do.
            p.prefill = row.r->generated_tokens == 0 && f.n_tokens > 1;
            p.first = sessions_[m]->seq_length(sid);
            p.count = row.count;
            pieces.push_back(p);
        }
    }
    const StepBudgetResult res = fit_step_to_budget(pieces, step_cost_, step_budget_);
    size_t i = 0;
    for (auto& model_rows : rows) {
        for (StepRow& row : model_rows) row.count = pieces[i++].count;
        model_rows.erase(
            std::remove_if(model_rows.begin(), model_rows.end(), [](const StepRow& r) { return r.count == 0; }),
            model_rows.end());
    }
    step_features_[0] = res.features[0];
    step_features_[1] = res.features[1];
}

void Engine::observe_forward(int m, double ms) {
    StepCostModel& model = step_cost_[m];
    model.observe(step_features_[m], ms);
    if (model.observations() % 256 == 0) {
        const StepCost c = model.cost();
        log::debug(
            "engine: step cost of model {} after {} forwards: {:.3f} ms + {:.4f} ms per decode row + {:.4f} ms "
            "per prompt token + {:.4f} ms per 1000 attended positions",
            m, model.observations(), c.base_ms, c.decode_row_ms, c.prefill_token_ms, c.attention_ms);
    }
}

}  // namespace basalt::engine
