// The engine's step-time budget alone, on injected step times (no model, no clock, deterministic): the cost model
// recovers the coefficients it is fed, shrugs off outliers, follows a machine that slows down and keeps what it
// learned about prompts through long stretches of decode-only steps; the budget keeps each step's predicted time
// within its target, shortens prompt pieces only while requests decode, and always moves the first prompt on.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include "engine/step-budget.hpp"
#include "engine/step-cost-model.hpp"

using basalt::engine::BudgetPiece;
using basalt::engine::fit_step_to_budget;
using basalt::engine::StepBudgetConfig;
using basalt::engine::StepCost;
using basalt::engine::StepCostModel;
using basalt::engine::StepFeatures;

namespace {

// A machine with known costs: what a forward of these rows "takes".
struct Machine {
    StepCost c{4.0, 1.2, 0.9, 0.05};
    double time(const StepFeatures& f) const {
        return c.base_ms + c.decode_row_ms * f.decode_rows + c.prefill_token_ms * f.prefill_tokens +
               c.attention_ms * f.attended / 1000.0;
    }
};

// A deterministic generator (an LCG: the same numbers on every standard library).
struct Lcg {
    uint64_t s = 12345;
    double uniform() {  // [0, 1)
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        return static_cast<double>(s >> 11) / 9007199254740992.0;
    }
    uint64_t below(uint64_t n) { return static_cast<uint64_t>(uniform() * static_cast<double>(n)); }
};

// A step of a serving mix: some decode rows at their positions, maybe a prompt piece.
StepFeatures random_step(Lcg& g) {
    StepFeatures f;
    const uint64_t decodes = g.below(17);
    for (uint64_t i = 0; i < decodes; ++i) f.add(false, 16 + g.below(2000), 1);
    if (decodes == 0 || g.uniform() < 0.5) f.add(true, g.below(1500), 1 + g.below(512));
    return f;
}

bool near(double got, double want, double rel) {
    return std::abs(got - want) <= rel * std::abs(want);
}

void check_cost(const StepCost& got, const StepCost& want, double rel) {
    CHECK(near(got.base_ms, want.base_ms, rel));
    CHECK(near(got.decode_row_ms, want.decode_row_ms, rel));
    CHECK(near(got.prefill_token_ms, want.prefill_token_ms, rel));
    CHECK(near(got.attention_ms, want.attention_ms, rel));
}

StepFeatures decode_step(uint64_t rows, uint64_t position) {
    StepFeatures f;
    for (uint64_t i = 0; i < rows; ++i) f.add(false, position, 1);
    return f;
}

}  // namespace

TEST_CASE("attended positions: a row at position p reads p + 1 of them", "[step-budget]") {
    StepFeatures f;
    f.add(true, 0, 4);  // 1 + 2 + 3 + 4
    CHECK(f.attended == 10);
    CHECK(f.prefill_tokens == 4);
    f.add(false, 99, 1);
    CHECK(f.attended == 110);
    CHECK(f.decode_rows == 1);
}

TEST_CASE("the step cost model recovers the costs of injected step times", "[step-budget]") {
    const Machine m;
    StepCostModel model;
    CHECK(model.predict_ms(decode_step(4, 100)) == 0);  // nothing observed yet
    Lcg g;
    for (int i = 0; i < 400; ++i) {
        const StepFeatures f = random_step(g);
        model.observe(f, m.time(f) * (0.98 + 0.04 * g.uniform()));  // +-2 % noise
    }
    check_cost(model.cost(), m.c, 0.10);
    StepFeatures mixed = decode_step(4, 700);
    mixed.add(true, 1200, 24);
    CHECK(near(model.predict_ms(mixed), m.time(mixed), 0.03));
    CHECK(model.observations() == 400);
    CHECK(model.max_prefill_seen() <= 512);
    // Times that are not times teach nothing.
    model.observe(mixed, std::nan(""));
    model.observe(mixed, -1);
    CHECK(model.observations() == 400);
}

TEST_CASE("outliers (a stalled step) barely move the fit", "[step-budget]") {
    const Machine m;
    StepCostModel model;
    Lcg g;
    for (int i = 0; i < 400; ++i) {
        const StepFeatures f = random_step(g);
        const double stall = i % 10 == 9 ? 5.0 : 1.0;  // every tenth step waits for the OS five times over
        model.observe(f, m.time(f) * stall * (0.99 + 0.02 * g.uniform()));
    }
    StepFeatures mixed = decode_step(8, 300);
    mixed.add(true, 0, 64);
    CHECK(near(model.predict_ms(mixed), m.time(mixed), 0.10));
    CHECK(near(model.predict_ms(decode_step(4, 100)), m.time(decode_step(4, 100)), 0.10));
}

TEST_CASE("the fit follows a machine that becomes slower", "[step-budget]") {
    Machine m;
    StepCostModel model;
    Lcg g;
    for (int i = 0; i < 300; ++i) {
        const StepFeatures f = random_step(g);
        model.observe(f, m.time(f));
    }
    m.c = {6.0, 1.8, 1.35, 0.075};  // everything 1.5x (another process took a core)
    for (int i = 0; i < 150; ++i) {
        const StepFeatures f = random_step(g);
        model.observe(f, m.time(f));
    }
    // The steps the planner asks about, within 3 %; the attention term (a few % of a step) is the slowest to follow.
    Lcg h{99};
    for (int i = 0; i < 50; ++i) {
        const StepFeatures f = random_step(h);
        CHECK(near(model.predict_ms(f), m.time(f), 0.03));
    }
    check_cost(model.cost(), m.c, 0.25);
}

TEST_CASE("what the prompts taught survives a long stretch of decode-only steps", "[step-budget]") {
    const Machine m;
    StepCostModel model;
    Lcg g;
    for (int i = 0; i < 300; ++i) {
        const StepFeatures f = random_step(g);
        model.observe(f, m.time(f));
    }
    // 3,000 steps of four streams decoding, nothing else: the prompt direction is not excited at all.
    for (uint64_t i = 0; i < 3000; ++i) {
        const StepFeatures f = decode_step(4, 100 + i / 4);
        model.observe(f, m.time(f) * (0.99 + 0.02 * g.uniform()));
    }
    CHECK(near(model.cost().prefill_token_ms, m.c.prefill_token_ms, 0.05));
    StepFeatures mixed = decode_step(4, 850);
    mixed.add(true, 500, 32);
    CHECK(near(model.predict_ms(mixed), m.time(mixed), 0.05));
}

namespace {

// A cost model taught the machine exactly.
StepCostModel taught(const Machine& m) {
    StepCostModel model;
    Lcg g;
    for (int i = 0; i < 300; ++i) {
        const StepFeatures f = random_step(g);
        model.observe(f, m.time(f));
    }
    return model;
}

std::vector<BudgetPiece> arrival(uint64_t prompt, uint64_t second_prompt = 0) {
    std::vector<BudgetPiece> p;
    for (int i = 0; i < 4; ++i) p.push_back({0, false, 300, 1});  // four streams decode
    p.push_back({0, true, 0, prompt});                            // a prompt arrives (as packed: whole)
    if (second_prompt > 0) p.push_back({0, true, 0, second_prompt});
    return p;
}

}  // namespace

TEST_CASE("the budget keeps a step's predicted time within 2x the decode rows' and fills it", "[step-budget]") {
    const Machine m;
    const StepCostModel models[2] = {taught(m), StepCostModel()};
    auto pieces = arrival(2000, 300);
    const auto res = fit_step_to_budget(pieces, models, StepBudgetConfig{});
    REQUIRE(res.limited);
    const double decode_ms = models[0].predict_ms(decode_step(4, 300));
    CHECK(res.budget_ms == Approx(2 * decode_ms));
    CHECK(res.predicted_ms <= res.budget_ms);
    for (int i = 0; i < 4; ++i) CHECK(pieces[static_cast<size_t>(i)].count == 1);  // decodes untouched
    // The oldest prompt takes what fits; one more token would not; the younger waits.
    const uint64_t n = pieces[4].count;
    CHECK(n >= 1);
    CHECK(n < 2000);
    StepFeatures more = res.features[0];
    more.add(true, n, 1);
    CHECK(models[0].predict_ms(more) > res.budget_ms);
    CHECK(pieces[5].count == 0);
    // The features handed back are the step as planned.
    CHECK(res.features[0].prefill_tokens == static_cast<double>(n));
    CHECK(res.features[0].decode_rows == 4);
}

TEST_CASE("the budget in ms, a factor, off, and no decode running", "[step-budget]") {
    const Machine m;
    const StepCostModel models[2] = {taught(m), StepCostModel()};
    SECTION("a budget below the decode rows' own time still moves the first prompt one token") {
        auto pieces = arrival(2000, 300);
        StepBudgetConfig c;
        c.max_step_ms = 1.0;
        const auto res = fit_step_to_budget(pieces, models, c);
        CHECK(res.budget_ms == 1.0);
        CHECK(pieces[4].count == 1);
        CHECK(pieces[5].count == 0);
    }
    SECTION("a larger factor takes more of the prompt") {
        auto two = arrival(2000);
        auto four = arrival(2000);
        StepBudgetConfig c;
        fit_step_to_budget(two, models, c);
        c.decode_factor = 4;
        const auto res = fit_step_to_budget(four, models, c);
        CHECK(four[4].count > two[4].count);
        CHECK(res.predicted_ms <= res.budget_ms);
    }
    SECTION("off: pieces as packed") {
        auto pieces = arrival(2000, 300);
        StepBudgetConfig c;
        c.enabled = false;
        const auto res = fit_step_to_budget(pieces, models, c);
        CHECK_FALSE(res.limited);
        CHECK(pieces[4].count == 2000);
        CHECK(pieces[5].count == 300);
        CHECK(res.features[0].prefill_tokens == 2300);
    }
    SECTION("no decode running: prompts at full speed") {
        std::vector<BudgetPiece> pieces = {{0, true, 0, 2000}, {0, true, 0, 300}};
        const auto res = fit_step_to_budget(pieces, models, StepBudgetConfig{});
        CHECK_FALSE(res.limited);
        CHECK(pieces[0].count == 2000);
        CHECK(pieces[1].count == 300);
    }
}

TEST_CASE("a limited step takes at most twice the prompt tokens the models have seen in one forward", "[step-budget]") {
    const Machine m;
    StepCostModel model;
    // Only decodes and one 10-token prompt seen: the model is asked about 20 prompt tokens at most.
    StepFeatures ten;
    ten.add(true, 0, 10);
    model.observe(ten, m.time(ten));
    for (uint64_t i = 0; i < 50; ++i) {
        const StepFeatures f = decode_step(1 + i % 8, 20 + i);
        model.observe(f, m.time(f));
    }
    const StepCostModel models[2] = {model, StepCostModel()};
    auto pieces = arrival(2000);
    StepBudgetConfig c;
    c.max_step_ms = 1e6;  // time is no limit here
    fit_step_to_budget(pieces, models, c);
    CHECK(pieces[4].count == 20);
    // A fresh engine's models have seen nothing: 16 tokens.
    const StepCostModel fresh[2];
    auto first = arrival(2000);
    fit_step_to_budget(first, fresh, c);
    CHECK(first[4].count == 16);
}

TEST_CASE("a whole arrival under the budget: every step within it, the prompt done, the fit refined on the way",
          "[step-budget]") {
    const Machine m;
    StepCostModel models[2];
    // The engine starts: four 16-token prompts at full speed, then the streams decode a few steps.
    {
        StepFeatures f;
        for (int i = 0; i < 4; ++i) f.add(true, 0, 16);
        models[0].observe(f, m.time(f));
    }
    uint64_t position = 16;
    for (int i = 0; i < 8; ++i, ++position)
        models[0].observe(decode_step(4, position), m.time(decode_step(4, position)));
    // A 2,000-token prompt arrives.
    uint64_t done = 0, steps = 0;
    double worst = 0;
    const double decode_ms = m.time(decode_step(4, position + 300));
    while (done < 2000) {
        std::vector<BudgetPiece> pieces;
        for (int i = 0; i < 4; ++i) pieces.push_back({0, false, position, 1});
        pieces.push_back({0, true, done, 2000 - done});
        const auto res = fit_step_to_budget(pieces, models, StepBudgetConfig{});
        REQUIRE(pieces[4].count >= 1);  // progress every step
        const double t = m.time(res.features[0]);
        models[0].observe(res.features[0], t);
        if (steps >= 4) worst = std::max(worst, t / m.time(decode_step(4, position)));
        done += pieces[4].count;
        ++position;
        ++steps;
    }
    // Past the first few steps (the fit learns prompt rows next to decodes), no step exceeds ~2x its decode rows'.
    CHECK(worst <= 2.0 * 1.05);
    // And the prompt got most of the other half: at least 80 % of the steps an exact fit would take.
    const double per_step = (decode_ms - 0) / m.c.prefill_token_ms;  // tokens in one decode step's time, roughly
    CHECK(static_cast<double>(steps) <= 2000.0 / per_step / 0.8 + 8);
}
