// The standard sampler plugins (temp, top_k, top_p, min_p, typical, penalties, logit_bias, dist, no_repeat_ngram),
// discovered from the build's plugin folder and driven through the public C API, against hand-computed expectations.
#include <basalt/basalt.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "test-support.hpp"

using Catch::Matchers::Contains;
using test::Cands;
using test::last_error;

namespace {

// Candidates with the given probabilities (logit = ln p), ids 0..n-1.
Cands from_probs(const std::vector<double>& probs) {
    std::vector<basalt_token_data> d;
    for (size_t i = 0; i < probs.size(); ++i) {
        d.push_back({static_cast<int32_t>(i), static_cast<float>(std::log(probs[i])), 0.f});
    }
    return Cands(d);
}

struct Params {
    std::vector<std::string> k, v;
    std::vector<const char*> kp, vp;
    basalt_params p{};
    explicit Params(const std::vector<std::pair<const char*, const char*>>& kv) {
        for (auto& [a, b] : kv) {
            k.emplace_back(a);
            v.emplace_back(b);
        }
        for (size_t i = 0; i < k.size(); ++i) {
            kp.push_back(k[i].c_str());
            vp.push_back(v[i].c_str());
        }
        p.struct_size = sizeof(p);
        p.count = kp.size();
        p.keys = kp.data();
        p.values = vp.data();
    }
};

struct Sampler {
    basalt_sampler* s = nullptr;
    Sampler(basalt_runtime* rt, const char* name, const std::vector<std::pair<const char*, const char*>>& kv = {}) {
        Params p(kv);
        REQUIRE(basalt_sampler_create(rt, name, &p.p, &s) == BASALT_OK);
    }
    ~Sampler() { basalt_sampler_destroy(s); }
    Sampler(const Sampler&) = delete;
    Sampler& operator=(const Sampler&) = delete;
    void apply(Cands& c) const { REQUIRE(basalt_sampler_apply(s, &c.c) == BASALT_OK); }
    uint32_t flags() const { return basalt_sampler_flags(s); }
};

// Creating `name` with key=value fails with INVALID_ARGUMENT; returns the message.
std::string create_error(basalt_runtime* rt, const char* name, const char* key, const char* value) {
    Params p(std::vector<std::pair<const char*, const char*>>{{key, value}});
    basalt_sampler* s = nullptr;
    CHECK(basalt_sampler_create(rt, name, &p.p, &s) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK(s == nullptr);
    return last_error();
}

const float kInf = std::numeric_limits<float>::infinity();

struct Plugins : test::Runtime {
    Plugins() : test::Runtime(BASALT_RUNTIME_NO_ENV_PLUGINS) {}
};

}  // namespace

TEST_CASE("every standard sampler is discovered with the right flags", "[samplers]") {
    Plugins rt;
    constexpr uint32_t AI = BASALT_SAMPLER_ARGMAX_INVARIANT, DS = BASALT_SAMPLER_DRAFT_SAFE,
                       SEL = BASALT_SAMPLER_SELECTS;
    const std::vector<std::pair<const char*, uint32_t>> expected = {
        {"temp", AI | DS}, {"top_k", AI | DS}, {"top_p", AI | DS}, {"min_p", AI | DS},        {"typical", DS},
        {"penalties", 0},  {"logit_bias", DS}, {"dist", DS | SEL}, {"greedy", AI | DS | SEL}, {"no_repeat_ngram", 0}};
    for (const auto& [name, flags] : expected) {
        INFO(name);
        Sampler s(rt.rt, name);
        CHECK(s.flags() == flags);
    }
}

TEST_CASE("temp divides the logits, t = 0 keeps only the maximum, t < 0 is refused", "[samplers]") {
    Plugins rt;
    Sampler t2(rt.rt, "temp", {{"t", "2"}});
    Cands a({{0, 1.f, 0}, {1, 3.f, 0}, {2, -kInf, 0}});
    a.c.sorted = 0;
    a.c.probs_valid = 1;
    t2.apply(a);
    CHECK(a.data[0].logit == 0.5f);
    CHECK(a.data[1].logit == 1.5f);
    CHECK(a.data[2].logit == -kInf);
    CHECK(a.c.size == 3);
    CHECK(a.c.probs_valid == 0);

    Sampler t0(rt.rt, "temp", {{"t", "0"}});
    Cands ties({{7, 2.f, 0}, {3, 2.f, 0}, {5, -kInf, 0}, {1, 1.f, 0}});
    t0.apply(ties);
    REQUIRE(ties.c.size == 1);
    CHECK(ties.data[0].id == 3);  // ties: the lowest id
    CHECK(ties.data[0].p == 1.f);
    CHECK(ties.c.probs_valid == 1);
    CHECK(ties.c.sorted == 1);
    CHECK(ties.c.selected == -1);  // temp never selects

    Cands e({});
    t2.apply(e);
    CHECK(e.c.size == 0);
    CHECK_THAT(create_error(rt.rt, "temp", "t", "-1"), Contains("'t' = '-1' is not a temperature >= 0"));
    CHECK_THAT(create_error(rt.rt, "temp", "t", "hot"),
               Contains("sampler 'temp'") && Contains("parameter 't' = 'hot' is not a finite number"));
    CHECK_THAT(create_error(rt.rt, "temp", "temperature", "1"), Contains("unknown parameter 'temperature'"));
}

TEST_CASE("top_k keeps the k best, ties by lower id, k = 0 or k >= size is a no-op, k < 0 is refused", "[samplers]") {
    Plugins rt;
    Sampler k2(rt.rt, "top_k", {{"k", "2"}});
    Cands a({{0, 1.f, 0}, {1, 3.f, 0}, {2, 3.f, 0}, {3, 2.f, 0}, {4, -kInf, 0}});
    k2.apply(a);
    CHECK(a.ids() == std::vector<int32_t>{1, 2});
    CHECK(a.c.sorted == 1);

    Sampler k1(rt.rt, "top_k", {{"k", "1"}});
    Cands ties({{9, 5.f, 0}, {4, 5.f, 0}, {6, 5.f, 0}});
    k1.apply(ties);
    CHECK(ties.ids() == std::vector<int32_t>{4});

    CHECK_THAT(create_error(rt.rt, "top_k", "k", "-3"), Contains("'k' = '-3' is not a count >= 0"));
    for (const char* k : {"0", "5", "1000"}) {
        INFO(k);
        Sampler s(rt.rt, "top_k", {{"k", k}});
        Cands b({{3, 1.f, 0}, {1, 2.f, 0}, {2, -kInf, 0}, {0, 0.f, 0}, {4, 1.f, 0}});
        s.apply(b);
        CHECK(b.ids() == std::vector<int32_t>{3, 1, 2, 0, 4});  // untouched, order kept
        CHECK(b.c.sorted == 0);
    }
    Cands e({});
    k2.apply(e);
    CHECK(e.c.size == 0);
    CHECK_THAT(create_error(rt.rt, "top_k", "k", "4.5"), Contains("sampler 'top_k'") && Contains("'k' = '4.5'"));
}

TEST_CASE("top_p keeps the smallest prefix reaching p, renormalised", "[samplers]") {
    Plugins rt;
    auto run = [&](const char* p, std::vector<std::pair<const char*, const char*>> kv = {}) {
        kv.emplace_back("p", p);
        Sampler s(rt.rt, "top_p", kv);
        Cands c = from_probs({0.2, 0.5, 0.3});  // ids 0, 1, 2
        s.apply(c);
        return c;
    };
    Cands a = run("0.7");
    CHECK(a.ids() == std::vector<int32_t>{1, 2});  // 0.5 + 0.3 >= 0.7
    CHECK(a.c.sorted == 1);
    CHECK(a.c.probs_valid == 1);
    CHECK(a.data[0].p == Approx(0.625));
    CHECK(a.data[1].p == Approx(0.375));
    CHECK(run("0.45").ids() == std::vector<int32_t>{1});
    CHECK(run("0.85").ids() == std::vector<int32_t>{1, 2, 0});
    CHECK(run("0").ids() == std::vector<int32_t>{1});
    CHECK(run("0", {{"min_keep", "2"}}).ids() == std::vector<int32_t>{1, 2});
    Cands one = run("1");
    CHECK(one.ids() == std::vector<int32_t>{0, 1, 2});  // p = 1: untouched
    CHECK(one.c.sorted == 0);

    Sampler s(rt.rt, "top_p", {{"p", "0.9"}});
    Cands inf({{0, -kInf, 0}, {1, 0.f, 0}, {2, -kInf, 0}});
    s.apply(inf);
    CHECK(inf.ids() == std::vector<int32_t>{1});
    Cands ties({{5, 1.f, 0}, {2, 1.f, 0}});
    Sampler s0(rt.rt, "top_p", {{"p", "0"}});
    s0.apply(ties);
    CHECK(ties.ids() == std::vector<int32_t>{2});
    Cands e({});
    s.apply(e);
    CHECK(e.c.size == 0);
    CHECK_THAT(create_error(rt.rt, "top_p", "p", "1.5"),
               Contains("sampler 'top_p'") && Contains("parameter 'p' = '1.5' is not a probability in [0, 1]"));
    CHECK_THAT(create_error(rt.rt, "top_p", "min_keep", "0"), Contains("'min_keep' = '0'"));
}

TEST_CASE("min_p keeps candidates with p >= p_min * p_max, in their order", "[samplers]") {
    Plugins rt;
    Sampler half(rt.rt, "min_p", {{"p", "0.5"}});
    Cands a = from_probs({0.2, 0.5, 0.3});
    half.apply(a);
    CHECK(a.ids() == std::vector<int32_t>{1, 2});  // 0.3 >= 0.25, 0.2 < 0.25
    Cands b = from_probs({0.2, 0.5, 0.3});
    Sampler zero(rt.rt, "min_p", {{"p", "0"}});
    zero.apply(b);
    CHECK(b.c.size == 3);
    Sampler one(rt.rt, "min_p", {{"p", "1"}});
    Cands ties({{4, 2.f, 0}, {1, 1.f, 0}, {0, 2.f, 0}, {3, -kInf, 0}});
    one.apply(ties);
    CHECK(ties.ids() == std::vector<int32_t>{4, 0});
    Cands e({});
    one.apply(e);
    CHECK(e.c.size == 0);
    CHECK_THAT(create_error(rt.rt, "min_p", "p", "-0.1"), Contains("sampler 'min_p'") && Contains("'p' = '-0.1'"));
}

TEST_CASE("typical keeps the tokens closest to the entropy and may drop the argmax", "[samplers]") {
    Plugins rt;
    // p = .5 .3 .2: H = 1.0297; |-ln p - H| = .336, .174, .580 -> order 1 (.3), 0 (.5), 2 (.2).
    Sampler half(rt.rt, "typical", {{"p", "0.5"}});
    Cands a = from_probs({0.5, 0.3, 0.2});
    half.apply(a);
    CHECK(a.ids() == std::vector<int32_t>{1, 0});
    CHECK(a.c.sorted == 0);
    CHECK(a.c.probs_valid == 1);
    CHECK(a.data[0].p == Approx(0.375));
    Sampler small(rt.rt, "typical", {{"p", "0.2"}});
    Cands b = from_probs({0.5, 0.3, 0.2});
    small.apply(b);
    CHECK(b.ids() == std::vector<int32_t>{1});  // the argmax (id 0) is gone
    Sampler one(rt.rt, "typical", {{"p", "1"}});
    Cands c = from_probs({0.5, 0.3, 0.2});
    one.apply(c);
    CHECK(c.ids() == std::vector<int32_t>{0, 1, 2});
    Cands inf({{0, -kInf, 0}, {1, 0.f, 0}, {2, 0.f, 0}});
    half.apply(inf);
    CHECK(inf.ids() == std::vector<int32_t>{1});  // uniform: equal scores, lower id first; -inf last
    Cands e({});
    half.apply(e);
    CHECK(e.c.size == 0);
}

TEST_CASE("penalties follow llama.cpp, sign-aware, over the last_n accepted tokens", "[samplers]") {
    Plugins rt;
    Sampler pen(rt.rt, "penalties", {{"repeat", "2"}, {"freq", "0.5"}, {"present", "1"}, {"last_n", "3"}});
    auto fresh = [] { return Cands({{5, 4.f, 0}, {7, -1.f, 0}, {9, 2.f, 0}, {11, -kInf, 0}, {13, 0.f, 0}}); };
    Cands none = fresh();
    none.c.sorted = 1;
    pen.apply(none);
    CHECK(none.logit_of(5) == 4.f);  // nothing accepted yet
    CHECK(none.c.sorted == 1);
    for (int32_t t : {5, 5, 7, 11, 13}) REQUIRE(basalt_sampler_accept(pen.s, t) == BASALT_OK);
    // window (last 3): 7, 11, 13
    Cands a = fresh();
    pen.apply(a);
    CHECK(a.logit_of(5) == 4.f);     // left the window
    CHECK(a.logit_of(7) == -3.5f);   // -1 * 2 - 0.5 - 1
    CHECK(a.logit_of(9) == 2.f);     // never seen
    CHECK(a.logit_of(11) == -kInf);  // stays -inf
    CHECK(a.logit_of(13) == -1.5f);  // 0 * 2 - 0.5 - 1

    Sampler rep(rt.rt, "penalties", {{"repeat", "2"}, {"freq", "0.5"}, {"present", "1"}, {"last_n", "64"}});
    for (int32_t t : {5, 5, 7}) REQUIRE(basalt_sampler_accept(rep.s, t) == BASALT_OK);
    basalt_sampler* copy = nullptr;
    REQUIRE(basalt_sampler_clone(rep.s, &copy) == BASALT_OK);
    REQUIRE(basalt_sampler_accept(rep.s, 9) == BASALT_OK);  // the original moves on, the clone does not
    Cands b = fresh();
    b.c.probs_valid = 1;
    rep.apply(b);
    CHECK(b.logit_of(5) == 0.f);    // 4 / 2 - 2 * 0.5 - 1: positive logits are divided
    CHECK(b.logit_of(7) == -3.5f);  // negative logits are multiplied
    CHECK(b.logit_of(9) == -0.5f);  // 2 / 2 - 0.5 - 1
    CHECK(b.c.probs_valid == 0);
    CHECK(b.c.sorted == 0);
    Cands c = fresh();
    REQUIRE(basalt_sampler_apply(copy, &c.c) == BASALT_OK);
    CHECK(c.logit_of(5) == 0.f);
    CHECK(c.logit_of(9) == 2.f);
    basalt_sampler_destroy(copy);
    REQUIRE(basalt_sampler_reset(rep.s) == BASALT_OK);
    Cands d = fresh();
    rep.apply(d);
    CHECK(d.logit_of(5) == 4.f);
    CHECK(d.logit_of(7) == -1.f);

    Sampler off(rt.rt, "penalties", {{"repeat", "1.5"}, {"last_n", "0"}});
    REQUIRE(basalt_sampler_accept(off.s, 5) == BASALT_OK);
    Cands f = fresh();
    off.apply(f);
    CHECK(f.logit_of(5) == 4.f);
    Cands e({});
    rep.apply(e);
    CHECK_THAT(create_error(rt.rt, "penalties", "repeat", "0"),
               Contains("sampler 'penalties'") && Contains("parameter 'repeat' = '0' is not a number > 0"));
    CHECK_THAT(create_error(rt.rt, "penalties", "last_n", "-2"), Contains("'last_n' = '-2'"));
    CHECK_THAT(create_error(rt.rt, "penalties", "window", "3"), Contains("unknown parameter 'window'"));
}

TEST_CASE("logit_bias adds per-token values, -inf bans", "[samplers]") {
    Plugins rt;
    Sampler b(rt.rt, "logit_bias", {{"bias", "1:+2.5,2:-inf,1:0.5,99:3"}});
    Cands a({{0, 1.f, 0}, {1, 1.f, 0}, {2, 5.f, 0}});
    a.c.sorted = 1;
    b.apply(a);
    CHECK(a.logit_of(0) == 1.f);
    CHECK(a.logit_of(1) == 4.f);
    CHECK(a.logit_of(2) == -kInf);
    CHECK(a.c.sorted == 0);
    Sampler g(rt.rt, "greedy");
    g.apply(a);
    CHECK(a.chosen() == 1);
    for (const char* bad : {"1:abc", "x:1", "1:+inf", "1:", ":2", "1:2,", "-1:2", "1=2"}) {
        INFO(bad);
        CHECK_THAT(create_error(rt.rt, "logit_bias", "bias", bad),
                   Contains("sampler 'logit_bias'") && Contains(std::string("parameter 'bias' = '") + bad + "'"));
    }
    CHECK_THAT(create_error(rt.rt, "logit_bias", "bias", "3:1,4:zz"), Contains("bad entry '4:zz'"));
}

TEST_CASE("dist draws reproducibly from a seed, clone continues, reset rewinds", "[samplers]") {
    Plugins rt;
    auto draws = [](basalt_sampler* s, int n) {
        std::vector<int32_t> out;
        for (int i = 0; i < n; ++i) {
            Cands c({{0, 0.f, 0}, {1, 0.5f, 0}, {2, 1.f, 0}, {3, -kInf, 0}, {4, 0.2f, 0}});
            REQUIRE(basalt_sampler_apply(s, &c.c) == BASALT_OK);
            CHECK(c.c.probs_valid == 1);
            out.push_back(c.chosen());
        }
        return out;
    };
    Sampler a(rt.rt, "dist", {{"seed", "42"}}), b(rt.rt, "dist", {{"seed", "42"}}), c(rt.rt, "dist", {{"seed", "43"}});
    const auto da = draws(a.s, 200);
    CHECK(da == draws(b.s, 200));
    CHECK(da != draws(c.s, 200));
    for (int32_t t : da) CHECK(t != 3);  // -inf is never drawn
    basalt_sampler* copy = nullptr;
    REQUIRE(basalt_sampler_clone(a.s, &copy) == BASALT_OK);
    CHECK(draws(copy, 50) == draws(a.s, 50));
    basalt_sampler_destroy(copy);
    REQUIRE(basalt_sampler_reset(a.s) == BASALT_OK);
    CHECK(draws(a.s, 200) == da);

    Cands one({{8, -kInf, 0}, {6, -3.f, 0}});
    a.apply(one);
    CHECK(one.chosen() == 6);
    Cands e({}, 3);
    CHECK(basalt_sampler_apply(a.s, &e.c) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(last_error(), Contains("sampler 'dist'") && Contains("sequence 3 has no candidates"));
    Cands inf({{0, -kInf, 0}});
    CHECK(basalt_sampler_apply(a.s, &inf.c) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(last_error(), Contains("no finite logit"));
    CHECK_THAT(create_error(rt.rt, "dist", "seed", "-2"), Contains("sampler 'dist'") && Contains("'seed' = '-2'"));
    CHECK_THAT(create_error(rt.rt, "dist", "seed", "lucky"), Contains("'seed' = 'lucky' is not an integer"));
}

TEST_CASE("temp then dist draws from softmax(logits / T) (chi-square, p = 0.001)", "[samplers]") {
    Plugins rt;
    const std::vector<float> logits = {0.1f, 0.5f, -0.3f, 1.2f, 0.f, -1.f, 0.8f, 0.3f};
    const double T = 0.7;
    Sampler temp(rt.rt, "temp", {{"t", "0.7"}}), dist(rt.rt, "dist", {{"seed", "20240601"}});
    std::vector<double> expected(logits.size());
    double z = 0;
    for (size_t i = 0; i < logits.size(); ++i) z += expected[i] = std::exp(logits[i] / T);
    const int n = 20000;
    std::vector<int> counts(logits.size(), 0);
    for (int d = 0; d < n; ++d) {
        std::vector<basalt_token_data> data;
        for (size_t i = 0; i < logits.size(); ++i) data.push_back({static_cast<int32_t>(i), logits[i], 0.f});
        Cands c(data);
        temp.apply(c);
        dist.apply(c);
        REQUIRE(c.chosen() >= 0);
        ++counts[static_cast<size_t>(c.chosen())];
    }
    double chi2 = 0;
    for (size_t i = 0; i < logits.size(); ++i) {
        const double e = n * expected[i] / z;
        chi2 += (counts[i] - e) * (counts[i] - e) / e;
    }
    INFO("chi2 = " << chi2);
    CHECK(chi2 < 24.322);  // chi-square, 7 degrees of freedom, p = 0.001
}

TEST_CASE("a chain top_k -> top_p -> temp -> dist keeps the fields consistent", "[samplers]") {
    Plugins rt;
    Sampler k(rt.rt, "top_k", {{"k", "3"}}), p(rt.rt, "top_p", {{"p", "0.9"}}), t(rt.rt, "temp", {{"t", "0.5"}}),
        d(rt.rt, "dist", {{"seed", "1"}});
    Cands c({{0, 0.f, 0}, {1, 3.f, 0}, {2, 2.f, 0}, {3, 1.f, 0}, {4, -1.f, 0}});
    k.apply(c);
    CHECK(c.ids() == std::vector<int32_t>{1, 2, 3});
    p.apply(c);
    CHECK(c.c.probs_valid == 1);
    t.apply(c);
    CHECK(c.c.probs_valid == 0);
    CHECK(c.c.sorted == 1);
    d.apply(c);
    CHECK(c.c.probs_valid == 1);
    CHECK(c.chosen() >= 1);
    CHECK(c.chosen() <= 3);
}

namespace {

void accept_all(const Sampler& s, const std::vector<int32_t>& tokens) {
    for (int32_t t : tokens) REQUIRE(basalt_sampler_accept(s.s, t) == BASALT_OK);
}

// Five candidates 1..5 with distinct logits, sorted.
Cands five() {
    Cands c({{5, 5.f, 0.3f}, {4, 4.f, 0.2f}, {3, 3.f, 0.2f}, {2, 2.f, 0.2f}, {1, 1.f, 0.1f}});
    c.c.sorted = 1;
    c.c.probs_valid = 1;
    return c;
}

}  // namespace

TEST_CASE("no_repeat_ngram bans the tokens that would repeat an n-gram of the history (HF semantics)", "[samplers]") {
    Plugins rt;
    Sampler tri(rt.rt, "no_repeat_ngram", {{"n", "3"}});
    accept_all(tri, {1, 2});  // one trigram needs three tokens: nothing seen yet
    Cands a = five();
    tri.apply(a);
    for (int32_t id = 1; id <= 5; ++id) CHECK(std::isfinite(a.logit_of(id)));
    CHECK(a.c.sorted == 1);
    CHECK(a.c.probs_valid == 1);
    accept_all(tri, {3, 1, 2});  // history 1 2 3 1 2: the last two tokens (1, 2) were followed by 3
    Cands b = five();
    tri.apply(b);
    CHECK(b.logit_of(3) == -kInf);
    CHECK(b.data[2].p == 0.f);
    for (int32_t id : {1, 2, 4, 5}) CHECK(b.logit_of(id) == static_cast<float>(id));
    CHECK(b.c.sorted == 0);
    CHECK(b.c.probs_valid == 0);
    CHECK(b.c.selected == -1);
    accept_all(tri, {4});  // ... 1 2 4: (2, 4) is new, nothing to ban
    Cands c = five();
    tri.apply(c);
    CHECK(std::isfinite(c.logit_of(3)));
    accept_all(tri, {1, 2});  // ... 2 4 1 2: (1, 2) has been followed by 3 and by 4
    Cands d = five();
    tri.apply(d);
    CHECK(d.logit_of(3) == -kInf);
    CHECK(d.logit_of(4) == -kInf);
    CHECK(d.logit_of(5) == 5.f);

    // n = 2: every bigram; a candidate array that does not hold the banned token is left alone
    Sampler bi(rt.rt, "no_repeat_ngram", {{"n", "2"}});
    accept_all(bi, {7, 9, 7});
    Cands e({{9, 0.5f, 0}, {7, 2.f, 0}, {8, 1.f, 0}});
    bi.apply(e);
    CHECK(e.logit_of(9) == -kInf);
    CHECK(e.logit_of(7) == 2.f);  // (7, 7) never occurred
    Cands f({{8, 1.f, 0}});
    f.c.sorted = 1;
    bi.apply(f);
    CHECK(f.c.sorted == 1);
    // like HF it bans even the last candidate; -inf stays -inf
    Cands g({{9, 3.f, 0}, {4, -kInf, 0}});
    bi.apply(g);
    CHECK(g.logit_of(9) == -kInf);
    CHECK(g.logit_of(4) == -kInf);
}

TEST_CASE("no_repeat_ngram with n = 1 bans every token seen, clone keeps the history, reset forgets it", "[samplers]") {
    Plugins rt;
    Sampler uni(rt.rt, "no_repeat_ngram", {{"n", "1"}});
    Cands none = five();
    uni.apply(none);
    for (int32_t id = 1; id <= 5; ++id) CHECK(std::isfinite(none.logit_of(id)));
    accept_all(uni, {2, 4, 2});
    Cands a = five();
    uni.apply(a);
    CHECK(a.logit_of(2) == -kInf);
    CHECK(a.logit_of(4) == -kInf);
    for (int32_t id : {1, 3, 5}) CHECK(std::isfinite(a.logit_of(id)));

    basalt_sampler* copy = nullptr;
    REQUIRE(basalt_sampler_clone(uni.s, &copy) == BASALT_OK);
    REQUIRE(basalt_sampler_accept(uni.s, 5) == BASALT_OK);  // the original moves on, the copy does not
    Cands b = five();
    REQUIRE(basalt_sampler_apply(copy, &b.c) == BASALT_OK);
    CHECK(b.logit_of(2) == -kInf);
    CHECK(b.logit_of(4) == -kInf);
    CHECK(b.logit_of(5) == 5.f);
    REQUIRE(basalt_sampler_accept(copy, 1) == BASALT_OK);  // and the copy's history is its own
    Cands c = five();
    uni.apply(c);
    CHECK(c.logit_of(5) == -kInf);
    CHECK(c.logit_of(1) == 1.f);
    basalt_sampler_destroy(copy);

    REQUIRE(basalt_sampler_reset(uni.s) == BASALT_OK);
    Cands d = five();
    uni.apply(d);
    for (int32_t id = 1; id <= 5; ++id) CHECK(std::isfinite(d.logit_of(id)));
    accept_all(uni, {3});  // the configuration survives the reset
    Cands e = five();
    uni.apply(e);
    CHECK(e.logit_of(3) == -kInf);
    CHECK(e.logit_of(2) == 2.f);

    CHECK_THAT(
        create_error(rt.rt, "no_repeat_ngram", "n", "0"),
        Contains("sampler 'no_repeat_ngram'") && Contains("parameter 'n' = '0' is not an n-gram size in 1..1024"));
    CHECK_THAT(create_error(rt.rt, "no_repeat_ngram", "n", "two"), Contains("'n' = 'two' is not an integer"));
    CHECK_THAT(create_error(rt.rt, "no_repeat_ngram", "size", "3"), Contains("unknown parameter 'size' (accepted: n)"));
}

TEST_CASE("no_repeat_ngram in a chain takes n as its bare value", "[samplers]") {
    Plugins rt;
    basalt_sampler_chain* chain = nullptr;
    REQUIRE(basalt_sampler_chain_create(rt.rt, "no_repeat_ngram:1;greedy", &chain) == BASALT_OK);
    const float logits[] = {0.f, 3.f, 2.f, 1.f};
    std::vector<int32_t> picked;
    for (int i = 0; i < 4; ++i) {
        int32_t t = -1;
        REQUIRE(basalt_sampler_chain_sample(chain, logits, 4, &t) == BASALT_OK);
        picked.push_back(t);
    }
    CHECK(picked == std::vector<int32_t>{1, 2, 3, 0});  // each token once, best first
    basalt_sampler_chain_destroy(chain);
}
