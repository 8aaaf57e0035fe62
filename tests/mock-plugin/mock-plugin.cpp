// One mock plugin source built many ways (MOCK_VARIANT) to pin the host's behaviour for every ABI case:
// current, smaller tables (as an older minor builds them), newer minor, newer major (refused by the plugin
// or by the host), missing export, throwing / NULL-returning / failing init, duplicate and bad components.
#include <basalt/plugin_sampler.h>
#include <basalt/plugin_steering.h>
#include <basalt/sdk/plugin.hpp>

#include <cstdlib>
#include <stdexcept>
#include <string>

#define MOCK_CURRENT 1
#define MOCK_SMALL_TABLES 2
#define MOCK_NEWER_MINOR 3
#define MOCK_NEWER_MAJOR 4
#define MOCK_NEWER_MAJOR_LENIENT 5
#define MOCK_NO_EXPORT 6
#define MOCK_THROWS 7
#define MOCK_RETURNS_NULL 8
#define MOCK_INIT_FAILS 9
#define MOCK_DUPLICATE_IN_LIB 10
#define MOCK_DUPLICATE_OF_GREEDY 11
#define MOCK_BAD_TABLE 12
#define MOCK_UNKNOWN_KIND 13
#define MOCK_DECODER_V1_0 14  // a decoder table of ABI 1.0 (create, destroy, run): refused since 1.1

#ifndef MOCK_VARIANT
#error "MOCK_VARIANT must be defined"
#endif
#ifndef MOCK_SAMPLER_NAME
#define MOCK_SAMPLER_NAME "mock"
#endif

namespace {

// Sampler "mock": selects candidate (offset + number of accepted tokens) % size. State = accepted count.
struct MockState {
    long long offset = 0;
    long long accepted = 0;
};

basalt_status mock_create(const basalt_host*, const basalt_params* params, void** out) {
    return basalt::sdk::guard([&] {
        basalt::sdk::params p(params, "sampler '" MOCK_SAMPLER_NAME "'");
        p.expect_only({"offset"});
        const long long offset = p.get_int("offset", 0);  // parse first: a bad value must not leak a state
        *out = new MockState{offset, 0};
    });
}

void mock_destroy(void* inst) {
    delete static_cast<MockState*>(inst);
}

basalt_status mock_apply(void* const* inst, basalt_candidates* const* cands, size_t n) {
    return basalt::sdk::guard([&] {
        for (size_t i = 0; i < n; ++i) {
            const auto* s = static_cast<const MockState*>(inst[i]);
            if (cands[i]->size == 0) throw basalt::sdk::error(BASALT_ERR_INVALID_ARGUMENT, "mock: no candidates");
            cands[i]->selected =
                static_cast<int64_t>((s->offset + s->accepted) % static_cast<long long>(cands[i]->size));
        }
    });
}

basalt_status mock_accept(void* inst, int32_t) {
    ++static_cast<MockState*>(inst)->accepted;
    return BASALT_OK;
}

basalt_status mock_reset(void* inst) {
    static_cast<MockState*>(inst)->accepted = 0;
    return BASALT_OK;
}

basalt_status mock_clone(const void* inst, void** out) {
    return basalt::sdk::guard([&] { *out = new MockState(*static_cast<const MockState*>(inst)); });
}

// Stands in for entries past a table's struct_size: the host must never call them.
[[noreturn]] void poison() {
    std::abort();
}
basalt_status poison_accept(void*, int32_t) {
    poison();
}
basalt_status poison_reset(void*) {
    poison();
}
basalt_status poison_clone(const void*, void**) {
    poison();
}
void poison_shutdown() {
    poison();
}

// Steering "mock" (same name, other kind: allowed).
basalt_status steer_create(const basalt_host*, uint32_t, uint32_t, const basalt_params*, void** out) {
    static char tag = 0;
    *out = &tag;
    return BASALT_OK;
}
void steer_destroy(void*) {}
basalt_status steer_mode(void*, uint32_t, uint32_t* mode) {
    *mode = 0;
    return BASALT_OK;
}

// A sampler table followed by an entry from a future minor.
struct NextSamplerIface {
    basalt_sampler_iface base;
    void (*future_entry)(void);
};
// A plugin descriptor followed by a field from a future minor.
struct NextPluginDesc {
    basalt_plugin_desc base;
    const char* future_field;
};

const NextSamplerIface kSampler = {
    {
#if MOCK_VARIANT == MOCK_SMALL_TABLES
        static_cast<uint32_t>(BASALT_SAMPLER_IFACE_MIN_SIZE),
#elif MOCK_VARIANT == MOCK_NEWER_MINOR
        sizeof(NextSamplerIface),
#else
        sizeof(basalt_sampler_iface),
#endif
        BASALT_SAMPLER_SELECTS,
        mock_create,
        mock_destroy,
#if MOCK_VARIANT == MOCK_BAD_TABLE
        nullptr,
#else
        mock_apply,
#endif
#if MOCK_VARIANT == MOCK_SMALL_TABLES
        poison_accept,
        poison_reset,
        poison_clone,
#else
        mock_accept,
        mock_reset,
        mock_clone,
#endif
        nullptr,
        nullptr,
    },
    poison,
};

const basalt_steering_iface kSteering = {
    sizeof(basalt_steering_iface), 0, steer_create, steer_destroy, steer_mode, nullptr, nullptr,
};

const basalt_component_desc kSamplerDesc = {
    sizeof(basalt_component_desc),
    BASALT_COMPONENT_SAMPLER,
    MOCK_SAMPLER_NAME,
    "mock sampler for ABI tests",
    0,
    3,
    1,
    0,
    &kSampler.base,
};
const basalt_component_desc kSteeringDesc = {
    sizeof(basalt_component_desc), BASALT_COMPONENT_STEERING, MOCK_SAMPLER_NAME, nullptr, 1, 0, 0, 0, &kSteering,
};
const basalt_component_desc kFutureKindDesc = {
    sizeof(basalt_component_desc), 99, "mock-future-kind", nullptr, 1, 0, 0, 0, &kSteering,
};

// ABI 1.0's decoder table: struct_size, reserved0, create, destroy, run.
struct DecoderIfaceV10 {
    uint32_t struct_size;
    uint32_t reserved0;
    void* create;
    void* destroy;
    void* run;
};
const DecoderIfaceV10 kDecoderV10 = {sizeof(DecoderIfaceV10), 0, reinterpret_cast<void*>(&mock_create),
                                     reinterpret_cast<void*>(&mock_destroy), reinterpret_cast<void*>(&mock_destroy)};
const basalt_component_desc kDecoderV10Desc = {
    sizeof(basalt_component_desc), BASALT_COMPONENT_DECODER, "mock-1.0", nullptr, 1, 0, 0, 0, &kDecoderV10,
};

#if MOCK_VARIANT == MOCK_DUPLICATE_IN_LIB
const basalt_component_desc* const kComponents[] = {&kSamplerDesc, &kSamplerDesc};
#elif MOCK_VARIANT == MOCK_DECODER_V1_0
const basalt_component_desc* const kComponents[] = {&kDecoderV10Desc};
#elif MOCK_VARIANT == MOCK_UNKNOWN_KIND
const basalt_component_desc* const kComponents[] = {&kFutureKindDesc, &kSamplerDesc};
#elif MOCK_VARIANT == MOCK_CURRENT
const basalt_component_desc* const kComponents[] = {&kSamplerDesc, &kSteeringDesc};
#else
const basalt_component_desc* const kComponents[] = {&kSamplerDesc};
#endif

#if MOCK_VARIANT == MOCK_NEWER_MINOR
constexpr uint32_t kMinor = BASALT_ABI_VERSION_MINOR + 1;
#else
constexpr uint32_t kMinor = BASALT_ABI_VERSION_MINOR;
#endif

const NextPluginDesc kPlugin = {
    {
#if MOCK_VARIANT == MOCK_SMALL_TABLES
        static_cast<uint32_t>(offsetof(basalt_plugin_desc, shutdown)),
#elif MOCK_VARIANT == MOCK_NEWER_MINOR
        sizeof(NextPluginDesc),
#else
        sizeof(basalt_plugin_desc),
#endif
        BASALT_ABI_VERSION_MAJOR,
        kMinor,
        0,
        "mock",
        sizeof(kComponents) / sizeof(kComponents[0]),
        kComponents,
#if MOCK_VARIANT == MOCK_SMALL_TABLES
        poison_shutdown,
#else
        nullptr,
#endif
    },
    "a field this host does not know",
};

}  // namespace

#if MOCK_VARIANT == MOCK_NO_EXPORT
BASALT_EXTERN_C BASALT_EXPORT int basalt_plugin_init_misspelled(void) {
    return 0;
}
#else
BASALT_PLUGIN_INIT {
#if MOCK_VARIANT == MOCK_THROWS
    (void)host_abi_major, (void)host_abi_minor, (void)host, (void)out_desc;
    throw std::runtime_error("mock init exploded");
#elif MOCK_VARIANT == MOCK_RETURNS_NULL
    (void)host_abi_major, (void)host_abi_minor, (void)host;
    *out_desc = nullptr;
    return BASALT_OK;
#elif MOCK_VARIANT == MOCK_INIT_FAILS
    (void)host_abi_major, (void)host_abi_minor, (void)out_desc;
    host->set_error(host->ctx, BASALT_ERR_UNSUPPORTED, "mock: this plugin needs a device this machine lacks");
    return BASALT_ERR_UNSUPPORTED;
#elif MOCK_VARIANT == MOCK_NEWER_MAJOR_LENIENT
    (void)host_abi_major, (void)host_abi_minor, (void)host;
    *out_desc = &kPlugin.base;  // does not check the host's major: the host must refuse
    return BASALT_OK;
#else
    return basalt::sdk::init_plugin(host_abi_major, host_abi_minor, host, &kPlugin.base, out_desc);
#endif
}
#endif
