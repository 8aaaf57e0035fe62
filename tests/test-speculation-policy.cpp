// The speculative decoder's adaptive policy (plugins/decoder-speculative/speculation-policy.hpp) on chosen costs:
// plain decoding when the pair accepts nothing or the draft costs as much as the target, the longest draft when
// a cheap draft is always accepted, drafting off as the batch fills, the break-even acceptance, the probes.
#include <catch2/catch.hpp>

#include "speculation-policy.hpp"

using basalt::speculative::ProbeSchedule;
using basalt::speculative::SpeculationPolicy;

namespace {

// Feeds target forwards costing base + per_row x (rows - 1) ms for 1..9 rows and draft steps of draft_ms.
void measure(SpeculationPolicy& p, double base, double per_row, double draft_ms) {
    for (int i = 0; i < 20; ++i) {
        for (int rows = 1; rows <= 9; ++rows) p.observe_target(rows, base + per_row * (rows - 1));
        p.observe_draft(draft_ms);
    }
}

void rounds(SpeculationPolicy& p, int k, int accepted, int n = 40) {
    for (int i = 0; i < n; ++i) p.observe_round(k, accepted);
}

}  // namespace

TEST_CASE("the adaptive policy drafts only when drafting pays", "[decoder][speculative][policy]") {
    SECTION("unmeasured: the first round drafts the longest draft (it measures)") {
        SpeculationPolicy p(4, true);
        CHECK(p.choose(0, 100) == 4);
        CHECK(p.choose(0, 2) == 2);
        CHECK(p.choose(0, 0) == 0);
    }
    SECTION("a pair that accepts nothing decodes plainly") {
        SpeculationPolicy p(4, true);
        measure(p, 10, 2, 1);
        rounds(p, 4, 0);
        CHECK(p.acceptance(1) < 0.01);
        CHECK(p.expected_tokens(4) == Approx(1.0).margin(0.02));
        CHECK(p.choose(0, 100) == 0);
    }
    SECTION("a cheap draft that is always accepted drafts the longest draft") {
        SpeculationPolicy p(4, true);
        measure(p, 10, 2, 1);
        rounds(p, 4, 4);
        CHECK(p.expected_tokens(4) == Approx(5.0).margin(0.02));
        CHECK(p.target_ms(5) == Approx(18.0).margin(0.1));  // the fitted line recovers the costs
        CHECK(p.choose(0, 100) == 4);
        CHECK(p.choose(0, 3) == 3);  // the room left caps it
    }
    SECTION("a draft as costly as the target loses even when always accepted (draft == target)") {
        SpeculationPolicy p(4, true);
        measure(p, 10, 2, 10);
        rounds(p, 4, 4);
        CHECK(p.choose(0, 100) == 0);
        CHECK(p.break_even_acceptance(4, 0) > 1.0);
    }
    SECTION("prompt lookup drafts cost nothing: verifying pays once a token in a few is accepted") {
        SpeculationPolicy p(4, false);
        measure(p, 10, 2, 0);
        rounds(p, 4, 1);
        CHECK(p.choose(0, 4) > 0);
        // ... and when every draft is accepted it drafts whatever the timings say, even rows that seem to cost
        // as much as a one-row forward each (a busy machine's noise): k + 1 tokens for k more rows cannot lose.
        SpeculationPolicy all(4, false);
        measure(all, 10, 10, 0);
        rounds(all, 4, 4);
        CHECK(all.choose(0, 4) == 4);
        CHECK(all.choose(0, 2) == 2);
        CHECK(all.choose(8, 4) == 4);
        SpeculationPolicy none(4, false);
        measure(none, 10, 2, 0);
        rounds(none, 4, 0);
        CHECK(none.choose(0, 4) == 0);
    }
    SECTION("prompt lookup keeps the acceptance per matched n-gram length: each decides on its own") {
        SpeculationPolicy p(4, false, 4);  // contexts 0..3: the n-gram length a draft continues
        measure(p, 10, 4, 0);
        for (int i = 0; i < 40; ++i) {
            p.observe_round(4, 0, 1);  // 1-gram matches: never continued
            p.observe_round(4, 4, 3);  // 3-gram matches: always
        }
        CHECK(p.acceptance(1, 1) < 0.01);
        CHECK(p.acceptance(4, 3) > 0.99);
        CHECK(p.choose(0, 4, false, 1) == 0);
        CHECK(p.choose(0, 4, false, 3) == 4);
        CHECK(p.choose(0, 4, false, 2) == 4);      // never observed: it measures with the longest draft
        CHECK(p.acceptance(1, 0) == Approx(0.5));  // the prior: context 0 saw nothing
        CHECK(p.choose(0, 4, false, 9) == 4);      // out of range: the last context's (3) estimates
    }
    SECTION("drafting turns itself off as the batch fills") {
        SpeculationPolicy p(4, true);
        measure(p, 10, 2, 1);
        rounds(p, 4, 3);
        CHECK(p.choose(0, 100) > 0);
        CHECK(p.choose(8, 100) == 0);  // k draft steps of the others' rows cost more than the drafts give
    }
    SECTION("the break-even acceptance rises with k's cost") {
        SpeculationPolicy p(8, true);
        measure(p, 10, 2, 2);
        const double a1 = p.break_even_acceptance(1, 0), a4 = p.break_even_acceptance(4, 0);
        CHECK(a1 > 0.0);
        CHECK(a1 < 1.0);
        // At its break-even acceptance a round of k drafts gives what plain decoding gives in the same time.
        auto tokens = [](double a, int k) {
            double e = 1, run = 1;
            for (int i = 0; i < k; ++i) e += (run *= a);
            return e;
        };
        CHECK(tokens(a4, 4) == Approx((4 * p.draft_ms() + p.target_ms(5)) / p.target_ms(1)).epsilon(1e-6));
        CHECK(tokens(a1, 1) == Approx((p.draft_ms() + p.target_ms(2)) / p.target_ms(1)).epsilon(1e-6));
    }
}

TEST_CASE("plain decoding probes the acceptance now and then, less often while probes keep choosing plain",
          "[decoder][speculative][policy]") {
    ProbeSchedule s(32, 512);
    int first = 0;
    while (!s.plain_token()) ++first;
    CHECK(first + 1 == 32);
    s.probed(false);
    int second = 0;
    while (!s.plain_token()) ++second;
    CHECK(second + 1 == 64);
    s.probed(true);
    int third = 0;
    while (!s.plain_token()) ++third;
    CHECK(third + 1 == 32);
}
