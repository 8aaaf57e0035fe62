// Sampler chains through the C API (basalt_sampler_chain_*: the chain syntax, errors, sample = apply + accept,
// clone/reset) and samplers registered in process (basalt_runtime_register_sampler), against the standard
// sampler plugins of the build.
#include <basalt/basalt.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "test-support.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using test::last_error;

namespace {

struct Plugins : test::Runtime {
    Plugins() : test::Runtime(BASALT_RUNTIME_NO_ENV_PLUGINS) {}
};

// An owned chain; create() returns the status so failures can be checked.
struct Chain {
    basalt_sampler_chain* c = nullptr;
    Chain() = default;
    Chain(basalt_runtime* rt, const char* spec) { REQUIRE(create(rt, spec) == BASALT_OK); }
    ~Chain() { basalt_sampler_chain_destroy(c); }
    Chain(const Chain&) = delete;
    Chain& operator=(const Chain&) = delete;
    basalt_status create(basalt_runtime* rt, const char* spec) { return basalt_sampler_chain_create(rt, spec, &c); }
    int32_t sample(const std::vector<float>& logits) {
        int32_t t = -1;
        REQUIRE(basalt_sampler_chain_sample(c, logits.data(), logits.size(), &t) == BASALT_OK);
        return t;
    }
};

// Creating the chain fails with `status`; returns the message.
std::string chain_error(basalt_runtime* rt, const char* spec, basalt_status status) {
    basalt_sampler_chain* c = nullptr;
    CHECK(basalt_sampler_chain_create(rt, spec, &c) == status);
    CHECK(c == nullptr);
    basalt_sampler_chain_destroy(c);
    return last_error();
}

std::vector<float> random_logits(std::mt19937& rng, size_t n) {
    std::normal_distribution<float> nd(0.f, 2.f);
    std::vector<float> v(n);
    for (float& x : v) x = nd(rng);
    return v;
}

// ---- an in-process sampler written against the same table a plugin fills ----------------------------------------

// "argmin": selects the candidate with the lowest logit; counts accepted tokens; parameter "fail" = "1" makes
// create fail through host->set_error.
struct Argmin {
    int accepted = 0;
};
const basalt_host* g_host = nullptr;
int g_accepted = 0;  // accept calls over all instances

basalt_status argmin_create(const basalt_host* host, const basalt_params* params, void** out) {
    g_host = host;
    for (size_t i = 0; params != nullptr && i < params->count; ++i) {
        if (std::string(params->keys[i]) == "fail") {
            host->set_error(host->ctx, BASALT_ERR_INVALID_ARGUMENT, "parameter 'fail' was given");
            return BASALT_ERR_INVALID_ARGUMENT;
        }
    }
    *out = new Argmin;
    return BASALT_OK;
}
void argmin_destroy(void* inst) {
    delete static_cast<Argmin*>(inst);
}
basalt_status argmin_apply(void* const* /*instances*/, basalt_candidates* const* cands, size_t n) {
    for (size_t s = 0; s < n; ++s) {
        basalt_candidates* c = cands[s];
        if (c->size == 0) {
            g_host->set_error(g_host->ctx, BASALT_ERR_INVALID_ARGUMENT, "no candidates");
            return BASALT_ERR_INVALID_ARGUMENT;
        }
        size_t best = 0;
        for (size_t i = 1; i < c->size; ++i) {
            if (c->data[i].logit < c->data[best].logit) best = i;
        }
        c->selected = static_cast<int64_t>(best);
    }
    return BASALT_OK;
}
basalt_status argmin_accept(void* inst, int32_t /*token*/) {
    ++static_cast<Argmin*>(inst)->accepted;
    ++g_accepted;
    return BASALT_OK;
}

// A broken selector: with mode=id it rewrites the chosen candidate's id past any vocabulary; with mode=index it
// selects an index past the candidates.
basalt_status rogue_create(const basalt_host*, const basalt_params* params, void** out) {
    bool index = params != nullptr && params->count > 0 && std::string(params->values[0]) == "index";
    *out = new bool(index);
    return BASALT_OK;
}
void rogue_destroy(void* inst) {
    delete static_cast<bool*>(inst);
}
basalt_status rogue_apply(void* const* instances, basalt_candidates* const* cands, size_t n) {
    for (size_t s = 0; s < n; ++s) {
        if (*static_cast<bool*>(instances[s])) {
            cands[s]->selected = static_cast<int64_t>(cands[s]->size) + 5;
        } else {
            cands[s]->data[0].id = 999999;
            cands[s]->selected = 0;
        }
    }
    return BASALT_OK;
}

basalt_sampler_iface argmin_iface() {
    basalt_sampler_iface t{};
    t.struct_size = sizeof(t);
    t.flags = BASALT_SAMPLER_SELECTS;
    t.create = argmin_create;
    t.destroy = argmin_destroy;
    t.apply = argmin_apply;
    t.accept = argmin_accept;
    return t;
}

}  // namespace

TEST_CASE("a chain parses its text: names, bare values, key=value, logit_bias lists, spaces, a trailing semicolon",
          "[sampler-chain]") {
    Plugins rt;
    Chain full(rt.rt, " penalties:repeat=1.1, last_n=64 ; top_k:40;top_p:0.9;temp:0.7;dist:seed=42; ");
    REQUIRE(basalt_sampler_chain_length(full.c) == 5);
    const char* names[] = {"penalties", "top_k", "top_p", "temp", "dist"};
    for (size_t i = 0; i < 5; ++i) CHECK(std::string(basalt_sampler_chain_name(full.c, i)) == names[i]);
    CHECK(basalt_sampler_chain_name(full.c, 5) == nullptr);
    CHECK(basalt_sampler_chain_get(full.c, 5) == nullptr);
    CHECK(basalt_sampler_flags(basalt_sampler_chain_get(full.c, 4)) & BASALT_SAMPLER_SELECTS);

    const std::vector<float> logits = {1.f, 5.f, 3.f, 4.f};
    CHECK(Chain(rt.rt, "greedy").sample(logits) == 1);
    CHECK(Chain(rt.rt, "logit_bias:1:-inf;greedy").sample(logits) == 3);                // bare list
    CHECK(Chain(rt.rt, "logit_bias:bias=1:-inf,3:-inf;greedy").sample(logits) == 2);    // key=value list
    CHECK(Chain(rt.rt, "logit_bias:1:-inf,3:-inf,2:-inf;greedy").sample(logits) == 0);  // commas stay in the list
    CHECK(Chain(rt.rt, "temp:0;greedy").sample(logits) == 1);                           // bare value of temp is t
    // top_k:1 keeps the best only, whatever dist draws: the bare value reached the parameter k
    Chain k1(rt.rt, "top_k:1;dist:seed=5");
    for (int i = 0; i < 10; ++i) CHECK(k1.sample(logits) == 1);
}

TEST_CASE("a malformed chain fails with BASALT_ERR_FORMAT quoting the offending text", "[sampler-chain]") {
    Plugins rt;
    CHECK(chain_error(rt.rt, "", BASALT_ERR_FORMAT) == "bad sampler chain: no samplers in ''");
    CHECK(chain_error(rt.rt, "top_k:40;;dist", BASALT_ERR_FORMAT) ==
          "bad sampler chain: an empty entry in 'top_k:40;;dist'");
    CHECK(chain_error(rt.rt, ":3;dist", BASALT_ERR_FORMAT) == "bad sampler chain: a missing sampler name in ':3'");
    CHECK(chain_error(rt.rt, "top k:3;dist", BASALT_ERR_FORMAT) ==
          "bad sampler chain: the sampler name 'top k' has a bad character in 'top k:3'");
    CHECK(chain_error(rt.rt, "top_k:40,50;dist", BASALT_ERR_FORMAT) ==
          "bad sampler chain: a second value without a key ('50') in 'top_k:40,50'");
    CHECK(chain_error(rt.rt, "top_k:=3;dist", BASALT_ERR_FORMAT) ==
          "bad sampler chain: a parameter without a key ('=3') in 'top_k:=3'");
    CHECK(chain_error(rt.rt, "top_k:k=;dist", BASALT_ERR_FORMAT) ==
          "bad sampler chain: the parameter 'k' has no value in 'top_k:k='");
    CHECK(chain_error(rt.rt, "top_k:40,;dist", BASALT_ERR_FORMAT) ==
          "bad sampler chain: an empty parameter in 'top_k:40,'");
    CHECK(chain_error(rt.rt, "top_k:4", BASALT_ERR_FORMAT) ==
          "the last sampler of the chain ('top_k') does not select a token; end the chain with one that does "
          "(dist, greedy)");
}

TEST_CASE("a chain names an unknown sampler and passes on a sampler's own error", "[sampler-chain]") {
    Plugins rt;
    CHECK_THAT(
        chain_error(rt.rt, "top_k:40;nucleus:0.9;dist", BASALT_ERR_NOT_FOUND),
        StartsWith("no sampler named 'nucleus' is loaded (available: ") && Contains("dist") && Contains("top_k"));
    CHECK(chain_error(rt.rt, "top_p:p=2;dist", BASALT_ERR_INVALID_ARGUMENT) ==
          "sampler 'top_p': parameter 'p' = '2' is not a probability in [0, 1]");
    CHECK_THAT(chain_error(rt.rt, "top_k:k=many;dist", BASALT_ERR_INVALID_ARGUMENT),
               Contains("sampler 'top_k'") && Contains("'k' = 'many' is not an integer"));
    CHECK_THAT(chain_error(rt.rt, "temp:x=1;dist", BASALT_ERR_INVALID_ARGUMENT),
               Contains("sampler 'temp': unknown parameter 'x'"));
    basalt_sampler_chain* c = nullptr;
    CHECK(basalt_sampler_chain_create(nullptr, "greedy", &c) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK(basalt_sampler_chain_create(rt.rt, nullptr, &c) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK(c == nullptr);
}

TEST_CASE("sample = every sampler applied in order, then the token accepted into each", "[sampler-chain]") {
    Plugins rt;
    const char* spec = "penalties:repeat=1.5,freq=0.2,last_n=8;top_k:12;top_p:0.95;temp:0.8;dist:seed=3";
    Chain chain(rt.rt, spec);
    // the same samplers created one by one and driven by hand
    struct Stage {
        const char* name;
        std::vector<std::pair<std::string, std::string>> kv;
    };
    const std::vector<Stage> stages = {{"penalties", {{"repeat", "1.5"}, {"freq", "0.2"}, {"last_n", "8"}}},
                                       {"top_k", {{"k", "12"}}},
                                       {"top_p", {{"p", "0.95"}}},
                                       {"temp", {{"t", "0.8"}}},
                                       {"dist", {{"seed", "3"}}}};
    std::vector<basalt_sampler*> manual;
    for (const Stage& st : stages) {
        std::vector<const char*> k, v;
        for (auto& [a, b] : st.kv) {
            k.push_back(a.c_str());
            v.push_back(b.c_str());
        }
        basalt_params p{};
        p.struct_size = sizeof(p);
        p.count = k.size();
        p.keys = k.data();
        p.values = v.data();
        basalt_sampler* s = nullptr;
        REQUIRE(basalt_sampler_create(rt.rt, st.name, &p, &s) == BASALT_OK);
        manual.push_back(s);
    }
    std::mt19937 rng(7);
    std::vector<int32_t> a, b;
    for (int step = 0; step < 40; ++step) {
        // few distinct logits vectors so the penalties window matters
        const std::vector<float> logits = random_logits(rng, 64);
        a.push_back(chain.sample(logits));
        test::Cands c([&] {
            std::vector<basalt_token_data> d;
            for (size_t i = 0; i < logits.size(); ++i) d.push_back({static_cast<int32_t>(i), logits[i], 0.f});
            return d;
        }());
        for (basalt_sampler* s : manual) REQUIRE(basalt_sampler_apply(s, &c.c) == BASALT_OK);
        b.push_back(c.chosen());
        for (basalt_sampler* s : manual) REQUIRE(basalt_sampler_accept(s, b.back()) == BASALT_OK);
    }
    for (basalt_sampler* s : manual) basalt_sampler_destroy(s);
    CHECK(a == b);
    // the draws are not all the argmax: the chain really samples
    CHECK(std::set<int32_t>(a.begin(), a.end()).size() > 5);
}

TEST_CASE("chain clone continues the same stream, reset rewinds, accept feeds the penalties", "[sampler-chain]") {
    Plugins rt;
    Chain chain(rt.rt, "penalties:repeat=3,last_n=-1;temp:0.9;dist:seed=11");
    std::mt19937 rng(3);
    std::vector<std::vector<float>> steps;
    for (int i = 0; i < 24; ++i) steps.push_back(random_logits(rng, 32));
    std::vector<int32_t> first;
    for (int i = 0; i < 12; ++i) first.push_back(chain.sample(steps[i]));
    Chain copy;
    REQUIRE(basalt_sampler_chain_clone(chain.c, &copy.c) == BASALT_OK);
    REQUIRE(basalt_sampler_chain_length(copy.c) == 3);
    CHECK(std::string(basalt_sampler_chain_name(copy.c, 2)) == "dist");
    for (int i = 12; i < 24; ++i) CHECK(chain.sample(steps[i]) == copy.sample(steps[i]));

    REQUIRE(basalt_sampler_chain_reset(chain.c) == BASALT_OK);
    std::vector<int32_t> again;
    for (int i = 0; i < 12; ++i) again.push_back(chain.sample(steps[i]));
    CHECK(again == first);

    // penalties see tokens accepted from outside: with repeat=1000 an accepted token can no longer be greedy's
    Chain pen(rt.rt, "penalties:repeat=1000,last_n=4;greedy");
    const std::vector<float> logits = {1.f, 9.f, 3.f, 2.f};
    CHECK(pen.sample(logits) == 1);
    CHECK(pen.sample(logits) == 2);  // 1 was accepted by sample()
    REQUIRE(basalt_sampler_chain_reset(pen.c) == BASALT_OK);
    REQUIRE(basalt_sampler_chain_accept(pen.c, 1) == BASALT_OK);
    REQUIRE(basalt_sampler_chain_accept(pen.c, 2) == BASALT_OK);
    CHECK(pen.sample(logits) == 3);
}

TEST_CASE("chain apply transforms candidates without accepting, bad arguments leave outputs untouched",
          "[sampler-chain]") {
    Plugins rt;
    Chain pen(rt.rt, "penalties:repeat=1000,last_n=4;top_k:3;greedy");
    test::Cands c({{0, 1.f, 0.f}, {1, 9.f, 0.f}, {2, 3.f, 0.f}, {3, 2.f, 0.f}, {4, 0.f, 0.f}});
    REQUIRE(basalt_sampler_chain_apply(pen.c, &c.c) == BASALT_OK);
    CHECK(c.c.size == 3);
    CHECK(c.chosen() == 1);
    test::Cands again({{0, 1.f, 0.f}, {1, 9.f, 0.f}, {2, 3.f, 0.f}});
    REQUIRE(basalt_sampler_chain_apply(pen.c, &again.c) == BASALT_OK);
    CHECK(again.chosen() == 1);  // nothing was accepted

    int32_t token = 77;
    const float logits[2] = {0.f, 1.f};
    CHECK(basalt_sampler_chain_sample(pen.c, nullptr, 2, &token) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK(basalt_sampler_chain_sample(pen.c, logits, 0, &token) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(last_error(), Contains("n_vocab 0"));
    CHECK(basalt_sampler_chain_sample(nullptr, logits, 2, &token) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK(basalt_sampler_chain_apply(pen.c, nullptr) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK(basalt_sampler_chain_accept(nullptr, 1) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK(basalt_sampler_chain_reset(nullptr) == BASALT_ERR_INVALID_ARGUMENT);
    basalt_sampler_chain* out = nullptr;
    CHECK(basalt_sampler_chain_clone(nullptr, &out) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK(out == nullptr);
    CHECK(basalt_sampler_chain_length(nullptr) == 0);
    // greedy fails on logits without a finite value, naming itself; the token stays as it was
    const float nan2[2] = {NAN, NAN};
    CHECK(basalt_sampler_chain_sample(pen.c, nan2, 2, &token) != BASALT_OK);
    CHECK_THAT(last_error(), StartsWith("sampler 'greedy'"));
    CHECK(token == 77);
}

TEST_CASE("an in-process sampler is registered, listed, created and chained like a plugin's", "[sampler-chain]") {
    Plugins rt;
    const basalt_sampler_iface iface = argmin_iface();
    REQUIRE(basalt_runtime_register_sampler(rt.rt, "argmin", &iface) == BASALT_OK);
    size_t index = 0;
    REQUIRE(basalt_runtime_find_component(rt.rt, BASALT_COMPONENT_SAMPLER, "argmin", &index) == BASALT_OK);
    basalt_component_info info{};
    info.struct_size = sizeof(info);
    REQUIRE(basalt_runtime_component_info(rt.rt, index, &info) == BASALT_OK);
    CHECK(std::string(info.plugin_name) == "in-process");
    CHECK(std::string(info.file).empty());
    CHECK(info.plugin_abi_major == BASALT_ABI_VERSION_MAJOR);

    // top_k:3 keeps {9, 5, 4}; argmin picks the smallest of those
    g_accepted = 0;
    Chain chain(rt.rt, "top_k:3;argmin");
    CHECK(chain.sample({1.f, 9.f, 4.f, 5.f, 2.f}) == 2);
    CHECK(g_accepted == 1);  // the instance inside the chain got the accept
    REQUIRE(basalt_sampler_chain_get(chain.c, 1) != nullptr);
    CHECK(basalt_sampler_flags(basalt_sampler_chain_get(chain.c, 1)) == BASALT_SAMPLER_SELECTS);
    basalt_sampler* direct = nullptr;
    REQUIRE(basalt_sampler_create(rt.rt, "argmin", nullptr, &direct) == BASALT_OK);
    test::Cands c({{0, 3.f, 0.f}, {1, -2.f, 0.f}, {2, 0.f, 0.f}});
    REQUIRE(basalt_sampler_apply(direct, &c.c) == BASALT_OK);
    CHECK(c.chosen() == 1);

    // the registry reorders as more components arrive; an existing instance still names itself
    for (int i = 0; i < 40; ++i) {
        const std::string name = "argmin" + std::to_string(i);
        REQUIRE(basalt_runtime_register_sampler(rt.rt, name.c_str(), &iface) == BASALT_OK);
    }
    REQUIRE(rt.load(test::mock("current")) == BASALT_OK);
    test::Cands empty({});
    CHECK(basalt_sampler_apply(direct, &empty.c) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK(last_error() == "sampler 'argmin': no candidates");
    basalt_sampler* copy = nullptr;
    REQUIRE(basalt_sampler_clone(direct, &copy) == BASALT_OK);  // no clone entry: created again from its params
    basalt_sampler_destroy(copy);
    basalt_sampler_destroy(direct);

    // create fails through host->set_error like a plugin's
    CHECK(chain_error(rt.rt, "argmin:fail=1", BASALT_ERR_INVALID_ARGUMENT) ==
          "sampler 'argmin': parameter 'fail' was given");
}

TEST_CASE("registering a sampler checks its name and table and refuses a clash", "[sampler-chain]") {
    Plugins rt;
    basalt_sampler_iface iface = argmin_iface();
    CHECK(basalt_runtime_register_sampler(rt.rt, "greedy", &iface) == BASALT_ERR_DUPLICATE);
    CHECK_THAT(last_error(), StartsWith("cannot register sampler 'greedy': it is already provided by '") &&
                                 Contains("basalt-sampler-greedy.so'"));
    REQUIRE(basalt_runtime_register_sampler(rt.rt, "mock", &iface) == BASALT_OK);
    CHECK(basalt_runtime_register_sampler(rt.rt, "mock", &iface) == BASALT_ERR_DUPLICATE);
    CHECK(last_error() ==
          "cannot register sampler 'mock': it is already provided by 'the application (registered in process)'");
    // a plugin loaded later cannot take the name either
    CHECK(rt.load(test::mock("current")) == BASALT_ERR_DUPLICATE);
    CHECK_THAT(last_error(),
               Contains("mock-current.so': sampler 'mock' is already provided by 'the application (registered"));

    CHECK(basalt_runtime_register_sampler(rt.rt, "top k", &iface) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(last_error(), Contains("'top k'") && Contains("1-64 characters"));
    CHECK(basalt_runtime_register_sampler(rt.rt, "x;y", &iface) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK(basalt_runtime_register_sampler(rt.rt, "fine", nullptr) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK(basalt_runtime_register_sampler(nullptr, "fine", &iface) == BASALT_ERR_INVALID_ARGUMENT);
    basalt_sampler_iface small = iface;
    small.struct_size = 16;
    CHECK(basalt_runtime_register_sampler(rt.rt, "fine", &small) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(last_error(), Contains("struct_size 16 is smaller than the minimum 32"));
    basalt_sampler_iface no_apply = iface;
    no_apply.apply = nullptr;
    CHECK(basalt_runtime_register_sampler(rt.rt, "fine", &no_apply) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK(last_error() == "cannot register sampler 'fine': the required entry 'apply' is NULL");
    CHECK_FALSE(rt.has(BASALT_COMPONENT_SAMPLER, "fine"));

    // a table of an older minor (through apply only) is accepted; the missing entries read as NULL
    basalt_sampler_iface old = iface;
    old.struct_size = BASALT_SAMPLER_IFACE_MIN_SIZE;
    REQUIRE(basalt_runtime_register_sampler(rt.rt, "old", &old) == BASALT_OK);
    Chain chain(rt.rt, "old");
    g_accepted = 0;
    CHECK(chain.sample({2.f, 1.f}) == 1);
    CHECK(g_accepted == 0);  // accept lies past the table's struct_size
}

TEST_CASE("a selected token outside the vocabulary or the candidates fails naming the sampler", "[sampler-chain]") {
    Plugins rt;
    basalt_sampler_iface iface{};
    iface.struct_size = sizeof(iface);
    iface.flags = BASALT_SAMPLER_SELECTS;
    iface.create = rogue_create;
    iface.destroy = rogue_destroy;
    iface.apply = rogue_apply;
    REQUIRE(basalt_runtime_register_sampler(rt.rt, "rogue", &iface) == BASALT_OK);
    const float logits[4] = {1.f, 2.f, 3.f, 4.f};
    for (const char* spec : {"top_k:2;rogue:mode=id", "rogue:mode=index"}) {
        CAPTURE(spec);
        basalt_sampler_chain* chain = nullptr;
        REQUIRE(basalt_sampler_chain_create(rt.rt, spec, &chain) == BASALT_OK);
        int32_t token = 77;
        CHECK(basalt_sampler_chain_sample(chain, logits, 4, &token) == BASALT_ERR_PLUGIN);
        CHECK_THAT(last_error(), Contains("sampler 'rogue'"));
        CHECK(token == 77);
        basalt_sampler_chain_destroy(chain);
    }
}
