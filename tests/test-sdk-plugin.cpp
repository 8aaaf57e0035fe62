// The SDK's declaration helpers (sdk/include/basalt/sdk/sampler-plugin.hpp, decoder-plugin.hpp,
// declare-plugin.hpp), on tests/sdk-plugin/sdk-multi.cpp: one library with two samplers and a decoder. Checked
// through the real plugin host (listing, parameters, state, clone, exceptions) and by calling the generated C
// tables directly with a host that records the reported errors (NULL handles and arguments, struct_size).
#include <basalt/basalt.h>
#include <basalt/plugin_decoder.h>
#include <basalt/plugin_sampler.h>

#include <dlfcn.h>

#include <cmath>
#include <string>
#include <vector>

#include "test-support.hpp"

using Catch::Matchers::Contains;
using test::Cands;
using test::last_error;

namespace {

const basalt_component_info* find(basalt_runtime* rt, basalt_component_kind kind, const char* name,
                                  basalt_component_info& info) {
    size_t i = 0;
    if (basalt_runtime_find_component(rt, kind, name, &i) != BASALT_OK) return nullptr;
    info = basalt_component_info{};
    info.struct_size = sizeof(info);
    if (basalt_runtime_component_info(rt, i, &info) != BASALT_OK) return nullptr;
    return &info;
}

basalt_sampler* make(basalt_runtime* rt, const char* name, const char* key = nullptr, const char* value = nullptr) {
    basalt_params p{};
    p.struct_size = sizeof(p);
    p.count = key != nullptr ? 1 : 0;
    p.keys = &key;
    p.values = &value;
    basalt_sampler* s = nullptr;
    return basalt_sampler_create(rt, name, &p, &s) == BASALT_OK ? s : nullptr;
}

Cands three() {
    return Cands({{5, 1.f, 0.f}, {6, 2.f, 0.f}, {7, 3.f, 0.f}});
}

// The library opened directly, with a host table that records what the plugin reports.
struct Direct {
    void* lib = nullptr;
    const basalt_plugin_desc* desc = nullptr;
    basalt_host host{};
    std::vector<std::string> errors;

    Direct() {
        lib = dlopen(BASALT_TEST_SDK_MULTI_PLUGIN, RTLD_NOW | RTLD_LOCAL);
        REQUIRE(lib != nullptr);
        auto init = reinterpret_cast<basalt_plugin_init_fn>(dlsym(lib, BASALT_PLUGIN_INIT_SYMBOL));
        REQUIRE(init != nullptr);
        host.struct_size = sizeof(host);
        host.abi_major = BASALT_ABI_VERSION_MAJOR;
        host.abi_minor = BASALT_ABI_VERSION_MINOR;
        host.ctx = this;
        host.set_error = [](void* ctx, basalt_status, const char* message) {
            static_cast<Direct*>(ctx)->errors.emplace_back(message);
        };
        REQUIRE(init(BASALT_ABI_VERSION_MAJOR, BASALT_ABI_VERSION_MINOR, &host, &desc) == BASALT_OK);
    }
    ~Direct() { dlclose(lib); }
    Direct(const Direct&) = delete;
    Direct& operator=(const Direct&) = delete;

    const basalt_component_desc& component(size_t i) const { return *desc->components[i]; }
    std::string last() const { return errors.empty() ? std::string() : errors.back(); }
};

}  // namespace

TEST_CASE("sdk plugin: one declaration lists every component with its name, version and flags", "[sdk]") {
    test::Runtime rt;
    REQUIRE(rt.load(BASALT_TEST_SDK_MULTI_PLUGIN) == BASALT_OK);
    CHECK(rt.count() == 3);
    basalt_component_info info{};
    REQUIRE(find(rt.rt, BASALT_COMPONENT_SAMPLER, "sdk_shift", info) != nullptr);
    CHECK(std::string(info.plugin_name) == "sdk-multi");
    CHECK(std::string(info.description) == "adds `by` to every logit; throws on token 666");
    CHECK((info.version_major == 2 && info.version_minor == 3 && info.version_patch == 4));
    CHECK((info.plugin_abi_major == BASALT_ABI_VERSION_MAJOR && info.plugin_abi_minor == BASALT_ABI_VERSION_MINOR));
    REQUIRE(find(rt.rt, BASALT_COMPONENT_SAMPLER, "sdk_ban_recent", info) != nullptr);
    CHECK((info.version_major == 1 && info.version_minor == 0 && info.version_patch == 0));
    REQUIRE(find(rt.rt, BASALT_COMPONENT_DECODER, "sdk_once", info) != nullptr);
    CHECK(std::string(info.plugin_name) == "sdk-multi");

    basalt_sampler* shift = make(rt.rt, "sdk_shift", "by", "0.5");
    REQUIRE(shift != nullptr);
    CHECK(basalt_sampler_flags(shift) == BASALT_SAMPLER_ARGMAX_INVARIANT);
    basalt_sampler_destroy(shift);
}

TEST_CASE("sdk plugin: parameters, apply and exceptions of a stateless sampler", "[sdk]") {
    test::Runtime rt;
    REQUIRE(rt.load(BASALT_TEST_SDK_MULTI_PLUGIN) == BASALT_OK);
    CHECK(make(rt.rt, "sdk_shift", "step", "1") == nullptr);
    CHECK_THAT(last_error(), Contains("sampler 'sdk_shift': unknown parameter 'step' (accepted: by)"));
    CHECK(make(rt.rt, "sdk_shift", "by", "x") == nullptr);
    CHECK_THAT(last_error(), Contains("sampler 'sdk_shift': parameter 'by' = 'x' is not a finite number"));

    basalt_sampler* s = make(rt.rt, "sdk_shift", "by", "0.5");
    REQUIRE(s != nullptr);
    Cands c = three();
    REQUIRE(basalt_sampler_apply(s, &c.c) == BASALT_OK);
    CHECK(c.logit_of(5) == 1.5f);
    CHECK(c.logit_of(7) == 3.5f);
    // accept/reset are NULL (host no-ops); clone is the host's "create again from the same parameters".
    CHECK(basalt_sampler_accept(s, 5) == BASALT_OK);
    CHECK(basalt_sampler_reset(s) == BASALT_OK);
    basalt_sampler* copy = nullptr;
    REQUIRE(basalt_sampler_clone(s, &copy) == BASALT_OK);
    Cands d = three();
    REQUIRE(basalt_sampler_apply(copy, &d.c) == BASALT_OK);
    CHECK(d.logit_of(6) == 2.5f);
    // An exception inside apply becomes BASALT_ERR_INTERNAL with its message, reported through the host.
    Cands bad({{666, 0.f, 0.f}});
    CHECK(basalt_sampler_apply(s, &bad.c) == BASALT_ERR_INTERNAL);
    CHECK_THAT(last_error(), Contains("token 666 is not allowed"));
    basalt_sampler_destroy(copy);
    basalt_sampler_destroy(s);
}

TEST_CASE("sdk plugin: a sampler with accept/reset is cloned with its state", "[sdk]") {
    test::Runtime rt;
    REQUIRE(rt.load(BASALT_TEST_SDK_MULTI_PLUGIN) == BASALT_OK);
    basalt_sampler* s = make(rt.rt, "sdk_ban_recent", "n", "2");
    REQUIRE(s != nullptr);
    REQUIRE(basalt_sampler_accept(s, 6) == BASALT_OK);
    basalt_sampler* copy = nullptr;
    REQUIRE(basalt_sampler_clone(s, &copy) == BASALT_OK);
    REQUIRE(basalt_sampler_reset(s) == BASALT_OK);
    Cands a = three(), b = three();
    REQUIRE(basalt_sampler_apply(s, &a.c) == BASALT_OK);
    REQUIRE(basalt_sampler_apply(copy, &b.c) == BASALT_OK);
    CHECK(a.logit_of(6) == 2.f);                              // reset forgot 6
    CHECK((std::isinf(b.logit_of(6)) && b.logit_of(6) < 0));  // the clone kept it
    // The window holds the last n = 2 tokens.
    REQUIRE(basalt_sampler_accept(copy, 5) == BASALT_OK);
    REQUIRE(basalt_sampler_accept(copy, 7) == BASALT_OK);
    Cands e = three();
    REQUIRE(basalt_sampler_apply(copy, &e.c) == BASALT_OK);
    CHECK(e.logit_of(6) == 2.f);
    CHECK(std::isinf(e.logit_of(5)));
    basalt_sampler_destroy(copy);
    basalt_sampler_destroy(s);
}

TEST_CASE("sdk plugin: a decoder's requirements and parameter errors through the engine API", "[sdk]") {
    test::Runtime rt;
    REQUIRE(rt.load(BASALT_TEST_SDK_MULTI_PLUGIN) == BASALT_OK);
    basalt_decoder_needs needs{};
    needs.struct_size = sizeof(needs);
    REQUIRE(basalt_decoder_requirements(rt.rt, "sdk_once:width=3", &needs) == BASALT_OK);
    CHECK((needs.n_seq == 3 && needs.n_models == 1 && needs.n_outputs == 3));
    CHECK(basalt_decoder_requirements(rt.rt, "sdk_once:width=9", &needs) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(last_error(), Contains("decoder 'sdk_once': parameter 'width' = '9' is not an integer in 1..8"));
}

TEST_CASE("sdk plugin: a decoder that verifies drafts on a recurrent model must restore snapshots (ABI 1.8)", "[sdk]") {
    test::Runtime rt(BASALT_RUNTIME_NO_ENV_PLUGINS);  // the default plugins: the CPU backend
    REQUIRE(rt.load(BASALT_TEST_SDK_MULTI_PLUGIN) == BASALT_OK);
    test::Model model(test::golden_model("tiny-qwen35-f32.gguf"));
    basalt_model_info info{};
    info.struct_size = sizeof(info);
    REQUIRE(basalt_model_describe(model.m, &info) == BASALT_OK);
    CHECK(info.n_layer_recurrent == 3);  // 4 layers, every 4th full attention
    basalt_decoder_needs needs{};
    needs.struct_size = sizeof(needs);
    REQUIRE(basalt_decoder_requirements(rt.rt, "sdk_once:flags=3,snapshots=1", &needs) == BASALT_OK);
    CHECK((needs.n_seq == 1 && needs.n_snapshot_seq == 1));
    // Snapshots are counted only where the decoder says it restores them.
    REQUIRE(basalt_decoder_requirements(rt.rt, "sdk_once:flags=1,snapshots=1", &needs) == BASALT_OK);
    CHECK(needs.n_snapshot_seq == 0);

    basalt_engine_params p{};
    p.struct_size = sizeof(p);
    p.n_parallel = 1;
    p.n_seq_max = 2;
    p.n_ctx = 64;
    test::Engine e(rt.rt, model.m, p);
    std::vector<test::Request> held;
    auto submit = [&](const char* decoder) {
        basalt_request_params rp{};
        rp.struct_size = sizeof(rp);
        rp.prompt = "Once upon a time";
        rp.prompt_len = SIZE_MAX;
        rp.samplers = "greedy";
        rp.decoder = decoder;
        rp.max_tokens = 4;
        rp.seed = -1;
        held.emplace_back();
        return basalt_engine_submit(e.e, &rp, &held.back().r);
    };
    // NEEDS_DRAFT_SAFE without SNAPSHOTS_RECURRENT: it would cut the recurrent state back, refused at submit.
    CHECK(submit("sdk_once:flags=1") == BASALT_ERR_UNSUPPORTED);
    CHECK_THAT(last_error(), Contains("keeps a recurrent state that cannot be cut back"));
    CHECK(submit("sdk_once:flags=3,snapshots=1") == BASALT_OK);
    // Its snapshot sequence counts against n_seq_max.
    CHECK(submit("sdk_once:width=2,flags=3,snapshots=1") == BASALT_ERR_CAPACITY);
    CHECK_THAT(last_error(), Contains("needs 3 sequences (1 of them snapshots of a recurrent state)"));
    REQUIRE(basalt_engine_run(e.e) == BASALT_OK);
    CHECK(basalt_request_finish_reason(held[1].r) == BASALT_FINISH_STOP);
}

TEST_CASE("sdk plugin: the generated tables check handles and arguments and report through the host", "[sdk]") {
    Direct lib;
    REQUIRE(lib.desc->n_components == 3);
    CHECK(std::string(lib.desc->name) == "sdk-multi");
    CHECK(lib.desc->shutdown == nullptr);

    const auto& shift = *static_cast<const basalt_sampler_iface*>(lib.component(0).iface);
    CHECK(shift.struct_size == sizeof(basalt_sampler_iface));
    CHECK((shift.accept == nullptr && shift.reset == nullptr && shift.clone == nullptr));
    const auto& ban = *static_cast<const basalt_sampler_iface*>(lib.component(1).iface);
    CHECK((ban.accept != nullptr && ban.reset != nullptr && ban.clone != nullptr));
    CHECK(shift.create(&lib.host, nullptr, nullptr) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK(lib.last() == "sampler 'sdk_shift': out is NULL");
    shift.destroy(nullptr);

    const basalt_component_desc& once = lib.component(2);
    REQUIRE(once.kind == BASALT_COMPONENT_DECODER);
    const auto& dec = *static_cast<const basalt_decoder_iface*>(once.iface);
    CHECK(dec.struct_size == sizeof(basalt_decoder_iface));
    CHECK(dec.reserved_run == nullptr);
    basalt_decoder_info info{};
    info.struct_size = sizeof(info);
    CHECK(dec.requirements(nullptr, &info) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK(lib.last() == "decoder 'sdk_once': instance is NULL");

    void* d = nullptr;
    REQUIRE(dec.create(&lib.host, nullptr, &d) == BASALT_OK);  // no params: the defaults
    CHECK(dec.requirements(d, nullptr) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK(lib.last() == "decoder 'sdk_once': out is NULL");
    // A 1.1-sized info (no flags field): the helper writes nothing past struct_size.
    info = basalt_decoder_info{};
    info.struct_size = offsetof(basalt_decoder_info, flags);
    info.flags = 0xdead;
    REQUIRE(dec.requirements(d, &info) == BASALT_OK);
    CHECK((info.n_seq == 1 && info.n_models == 1 && info.n_outputs == 1));
    CHECK(info.flags == 0xdead);

    basalt_decoder_host dh{};
    dh.struct_size = sizeof(dh);
    basalt_decoder_request req{};
    req.struct_size = sizeof(req);
    CHECK(dec.begin(d, &dh, &req) == BASALT_ERR_INVALID_ARGUMENT);  // no prompt
    CHECK(lib.last() == "decoder 'sdk_once': begin needs a host and a prompt");
    CHECK(dec.begin(d, nullptr, &req) == BASALT_ERR_INVALID_ARGUMENT);
    const int32_t prompt[] = {1, 2};
    req.prompt = prompt;
    req.n_prompt = 2;
    REQUIRE(dec.begin(d, &dh, &req) == BASALT_OK);

    int32_t finish = -1;
    CHECK(dec.plan(d, nullptr, &finish) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK(lib.last() == "decoder 'sdk_once': plan: NULL argument");
    basalt_decoder_plan plan{};
    plan.struct_size = sizeof(plan);
    CHECK(dec.plan(d, &plan, nullptr) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK(dec.plan(d, &plan, &finish) == BASALT_ERR_CAPACITY);  // capacity 0: asks for one feed
    CHECK(plan.n_feeds == 1);
    CHECK(lib.last() == "decoder 'sdk_once': plan needs 1 feed");
    basalt_decoder_feed feed{};
    plan.feeds = &feed;
    plan.capacity = 1;
    REQUIRE(dec.plan(d, &plan, &finish) == BASALT_OK);
    CHECK((plan.n_feeds == 1 && feed.n_tokens == 2 && finish == BASALT_FINISH_NONE));
    CHECK(dec.consume(d, nullptr, 0) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK(lib.last() == "decoder 'sdk_once': consume expects 1 result");
    CHECK(dec.consume(nullptr, nullptr, 0) == BASALT_ERR_INVALID_ARGUMENT);
    CHECK(lib.last() == "decoder 'sdk_once': instance is NULL");

    // A failing host service: its status comes back and the plugin reports no message over the host's.
    dh.ctx = &lib;
    dh.sample = [](void*, int32_t, const float*, int32_t*) -> basalt_status { return BASALT_ERR_PLUGIN; };
    const size_t reported = lib.errors.size();
    const float logits[] = {0.f};
    const basalt_decoder_result result{logits, 1};
    CHECK(dec.consume(d, &result, 1) == BASALT_ERR_PLUGIN);
    CHECK(lib.errors.size() == reported);
    dec.destroy(d);
    dec.destroy(nullptr);
}
