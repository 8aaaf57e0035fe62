// sampler-greedy through the ABI, loaded from the plugin folder like any third-party sampler; plus the
// host-side sampler API contract (params, clone, batch, misbehaving plugins) using the mock sampler.
#include <basalt/basalt.h>

#include <cmath>
#include <limits>
#include <vector>

#include "test-support.hpp"

using Catch::Matchers::Contains;
using test::Cands;
using test::last_error;

namespace {

struct Sampler {
    basalt_sampler* s = nullptr;
    Sampler(basalt_runtime* rt, const char* name, const basalt_params* p = nullptr) {
        REQUIRE(basalt_sampler_create(rt, name, p, &s) == BASALT_OK);
    }
    ~Sampler() { basalt_sampler_destroy(s); }
};

basalt_params make_params(const std::vector<const char*>& keys, const std::vector<const char*>& values) {
    basalt_params p{};
    p.struct_size = sizeof(p);
    p.count = keys.size();
    p.keys = keys.data();
    p.values = values.data();
    return p;
}

const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

}  // namespace

TEST_CASE("greedy is discovered and picks the highest logit", "[sampler-greedy]") {
    test::Runtime rt(BASALT_RUNTIME_NO_ENV_PLUGINS);
    Sampler g(rt.rt, "greedy");
    CHECK((basalt_sampler_flags(g.s) & BASALT_SAMPLER_ARGMAX_INVARIANT) != 0);
    CHECK((basalt_sampler_flags(g.s) & BASALT_SAMPLER_SELECTS) != 0);

    Cands a({{10, 0.5f, 0}, {11, 2.5f, 0}, {12, -1.f, 0}, {13, 2.4f, 0}});
    REQUIRE(basalt_sampler_apply(g.s, &a.c) == BASALT_OK);
    CHECK(a.c.selected == 1);
    CHECK(a.chosen() == 11);
    CHECK(a.c.size == 4);  // greedy only selects; it does not truncate
}

TEST_CASE("greedy breaks ties by the lowest token id, ignores NaN and handles -inf", "[sampler-greedy]") {
    test::Runtime rt;
    REQUIRE(rt.load(test::greedy_plugin()) == BASALT_OK);
    Sampler g(rt.rt, "greedy");
    Cands ties({{7, 1.f, 0}, {3, 1.f, 0}, {5, 1.f, 0}, {9, 0.f, 0}});
    REQUIRE(basalt_sampler_apply(g.s, &ties.c) == BASALT_OK);
    CHECK(ties.chosen() == 3);

    Cands nan({{1, kNaN, 0}, {2, -kInf, 0}, {3, -5.f, 0}});
    REQUIRE(basalt_sampler_apply(g.s, &nan.c) == BASALT_OK);
    CHECK(nan.chosen() == 3);

    Cands all_inf({{4, -kInf, 0}, {2, -kInf, 0}});
    REQUIRE(basalt_sampler_apply(g.s, &all_inf.c) == BASALT_OK);
    CHECK(all_inf.chosen() == 2);
}

TEST_CASE("greedy rejects empty and all-NaN candidate arrays with a message", "[sampler-greedy]") {
    test::Runtime rt;
    REQUIRE(rt.load(test::greedy_plugin()) == BASALT_OK);
    Sampler g(rt.rt, "greedy");
    Cands empty({}, 4);
    CHECK(basalt_sampler_apply(g.s, &empty.c) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(last_error(), Contains("sampler 'greedy'") && Contains("sequence 4 has no candidates"));
    CHECK(empty.c.selected == -1);
    Cands nan({{1, kNaN, 0}}, 2);
    CHECK(basalt_sampler_apply(g.s, &nan.c) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(last_error(), Contains("sequence 2 has only NaN logits"));
}

TEST_CASE("greedy applies to a batch of sequences in one call", "[sampler-greedy]") {
    test::Runtime rt;
    REQUIRE(rt.load(test::greedy_plugin()) == BASALT_OK);
    Sampler g0(rt.rt, "greedy"), g1(rt.rt, "greedy"), g2(rt.rt, "greedy");
    Cands a({{0, 1.f, 0}, {1, 0.f, 0}}, 0), b({{0, 0.f, 0}, {1, 3.f, 0}}, 1), c({{8, -2.f, 0}}, 2);
    basalt_sampler* const samplers[] = {g0.s, g1.s, g2.s};
    basalt_candidates* const cands[] = {&a.c, &b.c, &c.c};
    REQUIRE(basalt_sampler_apply_batch(samplers, cands, 3) == BASALT_OK);
    CHECK(a.chosen() == 0);
    CHECK(b.chosen() == 1);
    CHECK(c.chosen() == 8);
}

TEST_CASE("greedy takes no parameters and says so", "[sampler-greedy]") {
    test::Runtime rt;
    REQUIRE(rt.load(test::greedy_plugin()) == BASALT_OK);
    std::vector<const char*> k{"temp"}, v{"0.7"};
    const basalt_params p = make_params(k, v);
    basalt_sampler* s = nullptr;
    CHECK(basalt_sampler_create(rt.rt, "greedy", &p, &s) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK(s == nullptr);
    CHECK_THAT(last_error(), Contains("sampler 'greedy': unknown parameter 'temp' (accepted: none)"));
}

TEST_CASE("greedy clones through the host default and accept/reset are no-ops", "[sampler-greedy]") {
    test::Runtime rt;
    REQUIRE(rt.load(test::greedy_plugin()) == BASALT_OK);
    Sampler g(rt.rt, "greedy");
    CHECK(basalt_sampler_accept(g.s, 3) == BASALT_OK);
    CHECK(basalt_sampler_reset(g.s) == BASALT_OK);
    basalt_sampler* c = nullptr;
    REQUIRE(basalt_sampler_clone(g.s, &c) == BASALT_OK);
    Cands a({{0, 1.f, 0}, {1, 2.f, 0}});
    REQUIRE(basalt_sampler_apply(c, &a.c) == BASALT_OK);
    CHECK(a.chosen() == 1);
    basalt_sampler_destroy(c);
}

TEST_CASE("an unknown sampler name lists what is loaded", "[sampler-api]") {
    test::Runtime rt;
    REQUIRE(rt.load(test::greedy_plugin()) == BASALT_OK);
    basalt_sampler* s = nullptr;
    CHECK(basalt_sampler_create(rt.rt, "nucleus", nullptr, &s) == BASALT_ERR_NOT_FOUND);
    CHECK_THAT(last_error(), Contains("no sampler named 'nucleus' is loaded (available: greedy)"));
}

TEST_CASE("stateful samplers: params, accept, reset and clone keep per-sequence state", "[sampler-api]") {
    test::Runtime rt;
    REQUIRE(rt.load(test::mock("current")) == BASALT_OK);
    std::vector<const char*> k{"offset"}, v{"1"};
    const basalt_params p = make_params(k, v);
    Sampler m(rt.rt, "mock", &p);
    Cands a({{0, 0, 0}, {1, 0, 0}, {2, 0, 0}});
    REQUIRE(basalt_sampler_apply(m.s, &a.c) == BASALT_OK);
    CHECK(a.c.selected == 1);
    REQUIRE(basalt_sampler_accept(m.s, 1) == BASALT_OK);
    basalt_sampler* c = nullptr;
    REQUIRE(basalt_sampler_clone(m.s, &c) == BASALT_OK);  // deep copy: offset 1, accepted 1
    REQUIRE(basalt_sampler_accept(m.s, 2) == BASALT_OK);  // original moves on, clone does not
    a.c.selected = -1;
    REQUIRE(basalt_sampler_apply(c, &a.c) == BASALT_OK);
    CHECK(a.c.selected == 2);
    REQUIRE(basalt_sampler_apply(m.s, &a.c) == BASALT_OK);
    CHECK(a.c.selected == 0);  // (1 + 2) % 3
    REQUIRE(basalt_sampler_reset(m.s) == BASALT_OK);
    REQUIRE(basalt_sampler_apply(m.s, &a.c) == BASALT_OK);
    CHECK(a.c.selected == 1);
    basalt_sampler_destroy(c);
}

TEST_CASE("a bad parameter value is named with its value", "[sampler-api]") {
    test::Runtime rt;
    REQUIRE(rt.load(test::mock("current")) == BASALT_OK);
    std::vector<const char*> k{"offset"}, v{"one"};
    const basalt_params p = make_params(k, v);
    basalt_sampler* s = nullptr;
    CHECK(basalt_sampler_create(rt.rt, "mock", &p, &s) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(last_error(), Contains("sampler 'mock': parameter 'offset' = 'one' is not an integer"));
}

TEST_CASE("the sampler API rejects malformed calls without touching outputs", "[sampler-api]") {
    test::Runtime rt;
    REQUIRE(rt.load(test::greedy_plugin()) == BASALT_OK);
    REQUIRE(rt.load(test::mock("current")) == BASALT_OK);
    Sampler g(rt.rt, "greedy"), m(rt.rt, "mock");
    Cands a({{0, 1.f, 0}});
    a.c.struct_size = 8;
    CHECK(basalt_sampler_apply(g.s, &a.c) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(last_error(), Contains("basalt_candidates.struct_size 8 is too small"));
    CHECK(basalt_sampler_apply(g.s, nullptr) == BASALT_ERR_INVALID_ARGUMENT);
    Cands b({{0, 1.f, 0}});
    basalt_sampler* const mixed[] = {g.s, m.s};
    basalt_candidates* const cands[] = {&b.c, &b.c};
    CHECK(basalt_sampler_apply_batch(mixed, cands, 2) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(last_error(), Contains("a batch must use one sampler component"));
    CHECK(b.c.selected == -1);
    CHECK(basalt_sampler_create(rt.rt, nullptr, nullptr, nullptr) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK(basalt_sampler_accept(nullptr, 0) == BASALT_ERR_INVALID_ARGUMENT);
    basalt_sampler_destroy(nullptr);
}
