// kv-paged: the default KV cache manager, component kv_cache 'paged'. This file holds the parameter parsing and
// the C interface table; every entry point converts exceptions into a status through basalt::sdk::guard.
//
// Params: block_size (tokens per block, 1..65536; default: the largest divisor of n_slots up to 16, so no slot is
// wasted; with a residual window: residual), k_type / v_type (f32 | f16 | q8_0 | q4_0 | kivi_t8 | kivi_t4 | kivi_t2
// | kivi_c8 | kivi_c4 | kivi_c2, default f16), residual (0 or a multiple of 32: the most recent tokens of each
// sequence the session keeps in F32 until their unit of R tokens is full; needed by kivi_c*).
// Component 'sink' (sink-cache.hpp, StreamingLLM): n_sink (default 4), window (default: the rows of a sequence minus
// n_sink), k_type / v_type as above except the per-channel kivi_c* (a ring overwrites single rows; no residual window).
#include <basalt/plugin_kv_cache.h>
#include <basalt/blocks/dtype.hpp>
#include <basalt/sdk/declare-plugin.hpp>
#include <basalt/sdk/plugin.hpp>

#include <climits>
#include <memory>
#include <string>

#include "paged-cache.hpp"
#include "sink-cache.hpp"

namespace {

using basalt::kv_paged::kDefaultBlockSize;
using basalt::kv_paged::kLabel;
using basalt::kv_paged::Options;
using basalt::kv_paged::PagedCache;
using basalt::kv_paged::SinkCache;
using basalt::kv_paged::SinkOptions;

constexpr long long kMaxBlockSize = 65536;

basalt_dtype parse_type(const basalt::sdk::params& p, const char* key, basalt_dtype fallback) {
    const auto v = p.find(key);
    if (!v) return fallback;
    if (*v == "f32") return BASALT_DTYPE_F32;
    if (*v == "f16") return BASALT_DTYPE_F16;
    if (*v == "q8_0") return BASALT_DTYPE_Q8_0;
    if (*v == "q4_0") return BASALT_DTYPE_Q4_0;
    for (basalt_dtype t : {BASALT_DTYPE_KIVI_T8, BASALT_DTYPE_KIVI_T4, BASALT_DTYPE_KIVI_T2, BASALT_DTYPE_KIVI_C8,
                           BASALT_DTYPE_KIVI_C4, BASALT_DTYPE_KIVI_C2}) {
        if (*v == basalt::blocks::dtype_name(t)) return t;
    }
    p.bad(key, *v, "one of f32, f16, q8_0, q4_0, kivi_t8, kivi_t4, kivi_t2, kivi_c8, kivi_c4, kivi_c2");
}

Options parse_options(const basalt_params* params) {
    const basalt::sdk::params p(params, kLabel);
    p.expect_only({"block_size", "k_type", "v_type", "residual"});
    Options o;
    const long long bs = p.get_int("block_size", kDefaultBlockSize);
    if (bs < 1 || bs > kMaxBlockSize) p.bad("block_size", *p.find("block_size"), "an integer from 1 to 65536");
    if (p.find("block_size")) o.block_size = static_cast<uint32_t>(bs);
    o.k_type = parse_type(p, "k_type", o.k_type);
    o.v_type = parse_type(p, "v_type", o.v_type);
    const long long res = p.get_int("residual", 0);
    if (res < 0 || res > kMaxBlockSize || res % 32 != 0) {
        p.bad("residual", *p.find("residual"), "0 or a multiple of 32 up to 65536");
    }
    o.residual = static_cast<uint32_t>(res);
    return o;
}

PagedCache& self(void* cache) {
    if (cache == nullptr)
        throw basalt::sdk::error(BASALT_ERR_INVALID_ARGUMENT, std::string(kLabel) + ": cache is NULL");
    return *static_cast<PagedCache*>(cache);
}

basalt_status paged_create(const basalt_host* /*host*/, const basalt_kv_cache_config* config,
                           const basalt_params* params, void** out_cache) {
    return basalt::sdk::guard([&] {
        if (config == nullptr || out_cache == nullptr) {
            throw basalt::sdk::error(
                BASALT_ERR_INVALID_ARGUMENT,
                std::string(kLabel) + ": create: " + (config == nullptr ? "config" : "out_cache") + " is NULL");
        }
        const Options o = parse_options(params);
        auto cache = std::make_unique<PagedCache>(*config, o);
        *out_cache = cache.release();
    });
}

void paged_destroy(void* cache) {
    delete static_cast<PagedCache*>(cache);
}

basalt_status paged_layout(void* cache, basalt_kv_cache_layout* out) {
    return basalt::sdk::guard([&] { self(cache).layout(out); });
}

basalt_status paged_reserve(void* cache, basalt_kv_reservation* reservation) {
    return basalt::sdk::guard([&] { self(cache).reserve(reservation); });
}

// On BASALT_ERR_CAPACITY (capacity below the sequence's length) nothing is written except *out_count, which
// receives the number of entries needed, so the caller can grow its arrays and call again.
basalt_status paged_visible(void* cache, int32_t seq_id, uint32_t layer, int32_t* out_slots, int32_t* out_positions,
                            size_t capacity, size_t* out_count) {
    return basalt::sdk::guard(
        [&] { self(cache).visible(seq_id, layer, out_slots, out_positions, capacity, out_count); });
}

basalt_status paged_seq_drop(void* cache, int32_t seq_id) {
    return basalt::sdk::guard([&] { self(cache).drop(seq_id); });
}

basalt_status paged_seq_fork(void* cache, int32_t src_seq_id, int32_t dst_seq_id) {
    return basalt::sdk::guard([&] { self(cache).fork(src_seq_id, dst_seq_id); });
}

basalt_status paged_prefix_attach(void* cache, int32_t seq_id, const int32_t* tokens, size_t n_tokens,
                                  size_t* out_n_matched) {
    return basalt::sdk::guard([&] { self(cache).prefix_attach(seq_id, tokens, n_tokens, out_n_matched); });
}

basalt_status paged_seq_truncate(void* cache, int32_t seq_id, uint32_t n_keep) {
    return basalt::sdk::guard([&] { self(cache).truncate(seq_id, n_keep); });
}

basalt_status paged_seq_set_salt(void* cache, int32_t seq_id, uint64_t salt) {
    return basalt::sdk::guard([&] { self(cache).set_salt(seq_id, salt); });
}

size_t paged_free_slots(void* cache) {
    return cache == nullptr ? 0 : static_cast<const PagedCache*>(cache)->free_slots();
}

const basalt_kv_cache_iface kIface = {
    sizeof(basalt_kv_cache_iface),
    0,
    paged_create,
    paged_destroy,
    paged_layout,
    paged_reserve,
    paged_visible,
    paged_seq_drop,
    paged_seq_fork,
    paged_prefix_attach,
    paged_free_slots,
    paged_seq_truncate,
    paged_seq_set_salt,
};

const basalt_component_desc kComponent = {
    sizeof(basalt_component_desc),
    BASALT_COMPONENT_KV_CACHE,
    "paged",
    "paged KV cache: reference-counted blocks, copy on write, prefix caching with LRU reuse",
    1,
    0,
    0,
    0,
    &kIface,
};

// ---- component 'sink' ----

SinkOptions parse_sink_options(const basalt_params* params) {
    const basalt::sdk::params p(params, basalt::kv_paged::kSinkLabel);
    p.expect_only({"n_sink", "window", "k_type", "v_type"});
    SinkOptions o;
    o.n_sink = p.get_int("n_sink", o.n_sink);
    if (o.n_sink < 0 || o.n_sink > INT32_MAX) p.bad("n_sink", *p.find("n_sink"), "an integer from 0 up");
    o.window = p.get_int("window", o.window);
    if (p.find("window") && (o.window < 1 || o.window > INT32_MAX)) {
        p.bad("window", *p.find("window"), "an integer from 1 up");
    }
    o.k_type = parse_type(p, "k_type", o.k_type);
    o.v_type = parse_type(p, "v_type", o.v_type);
    return o;
}

SinkCache& sink_self(void* cache) {
    if (cache == nullptr) {
        throw basalt::sdk::error(BASALT_ERR_INVALID_ARGUMENT,
                                 std::string(basalt::kv_paged::kSinkLabel) + ": cache is NULL");
    }
    return *static_cast<SinkCache*>(cache);
}

basalt_status sink_create(const basalt_host* /*host*/, const basalt_kv_cache_config* config,
                          const basalt_params* params, void** out_cache) {
    return basalt::sdk::guard([&] {
        if (config == nullptr || out_cache == nullptr) {
            throw basalt::sdk::error(BASALT_ERR_INVALID_ARGUMENT,
                                     std::string(basalt::kv_paged::kSinkLabel) +
                                         ": create: " + (config == nullptr ? "config" : "out_cache") + " is NULL");
        }
        auto cache = std::make_unique<SinkCache>(*config, parse_sink_options(params));
        *out_cache = cache.release();
    });
}

void sink_destroy(void* cache) {
    delete static_cast<SinkCache*>(cache);
}

basalt_status sink_layout(void* cache, basalt_kv_cache_layout* out) {
    return basalt::sdk::guard([&] { sink_self(cache).layout(out); });
}

basalt_status sink_reserve(void* cache, basalt_kv_reservation* reservation) {
    return basalt::sdk::guard([&] { sink_self(cache).reserve(reservation); });
}

basalt_status sink_visible(void* cache, int32_t seq_id, uint32_t layer, int32_t* out_slots, int32_t* out_positions,
                           size_t capacity, size_t* out_count) {
    return basalt::sdk::guard(
        [&] { sink_self(cache).visible(seq_id, layer, out_slots, out_positions, capacity, out_count); });
}

basalt_status sink_seq_drop(void* cache, int32_t seq_id) {
    return basalt::sdk::guard([&] { sink_self(cache).drop(seq_id); });
}

basalt_status sink_seq_fork(void* cache, int32_t src_seq_id, int32_t dst_seq_id) {
    return basalt::sdk::guard([&] { sink_self(cache).fork(src_seq_id, dst_seq_id); });
}

basalt_status sink_seq_truncate(void* cache, int32_t seq_id, uint32_t n_keep) {
    return basalt::sdk::guard([&] { sink_self(cache).truncate(seq_id, n_keep); });
}

basalt_status sink_seq_set_salt(void* cache, int32_t seq_id, uint64_t /*salt*/) {
    return basalt::sdk::guard([&] { sink_self(cache).set_salt(seq_id); });
}

size_t sink_free_slots(void* cache) {
    return cache == nullptr ? 0 : static_cast<const SinkCache*>(cache)->free_slots();
}

const basalt_kv_cache_iface kSinkIface = {
    sizeof(basalt_kv_cache_iface),
    0,
    sink_create,
    sink_destroy,
    sink_layout,
    sink_reserve,
    sink_visible,
    sink_seq_drop,
    sink_seq_fork,
    nullptr,  // no prefix caching: a ring holds no shared prefix
    sink_free_slots,
    sink_seq_truncate,
    sink_seq_set_salt,
};

const basalt_component_desc kSinkComponent = {
    sizeof(basalt_component_desc),
    BASALT_COMPONENT_KV_CACHE,
    "sink",
    "streaming KV cache (StreamingLLM): the first n_sink tokens plus a window of recent ones, at cache positions",
    1,
    0,
    0,
    0,
    &kSinkIface,
};

}  // namespace

BASALT_DECLARE_PLUGIN("kv-paged", basalt::sdk::component<kComponent>, basalt::sdk::component<kSinkComponent>)
