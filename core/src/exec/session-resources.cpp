#include "exec/session-resources.hpp"

#include <algorithm>

#include <basalt/blocks/kivi.hpp>

#include "exec/session.hpp"
#include "graph/arch.hpp"
#include "host/host-services.hpp"
#include "model/dtype.hpp"
#include "model/model.hpp"
#include "support/error.hpp"
#include "support/host-memory.hpp"
#include "support/log.hpp"
#include "support/progress.hpp"

namespace basalt {
namespace {

// The K or V type a kv-paged-style "k_type"/"v_type" parameter names (the default manager's F16 otherwise): the
// memory check before anything is created needs the types the manager will choose.
basalt_dtype guess_kv_type(const SessionConfig& config, const char* key) {
    basalt_dtype type = BASALT_DTYPE_F16;
    for (const auto& [k, v] : config.kv_params) {  // the last value given wins, as in the manager's parameters
        if (k != key) continue;
        if (const DtypeTraits* t = dtype_from_name(v); t != nullptr) type = t->id;
    }
    return type;
}

// The residual window a kv-paged-style "residual" parameter names (0 otherwise), for the same early check.
uint32_t guess_kv_residual(const SessionConfig& config) {
    for (const auto& [k, v] : config.kv_params) {
        if (k != "residual") continue;
        try {
            const unsigned long r = std::stoul(v);
            return r <= UINT32_MAX ? static_cast<uint32_t>(r) : 0;
        } catch (const std::exception&) {
            return 0;  // the manager names the bad value
        }
    }
    return 0;
}

PlanRequest plan_request(const SessionConfig& config, SessionShape shape) {
    PlanRequest request;
    request.n_ctx = shape.n_ctx;
    request.n_batch = shape.n_batch;
    request.n_seq_max = config.n_seq_max;
    request.k_type = guess_kv_type(config, "k_type");
    request.v_type = guess_kv_type(config, "v_type");
    request.kv_residual = guess_kv_residual(config);
    request.state_checkpoint_bytes = config.state_checkpoint_bytes;
    return request;
}

// Fail fast: a plan the machine cannot hold is refused before anything is created or allocated.
MemoryPlan first_plan(const basalt_model& model, const SessionConfig& config, SessionShape shape) {
    MemoryPlan plan;
    try {
        plan = plan_memory(model.gguf.file, model.hparams, plan_request(config, shape));
    } catch (const Error&) {
        plan = MemoryPlan{};  // a K/V type the rows cannot hold: the manager names it below
    }
    if (plan.n_ctx != 0) SessionResources::check_fits(plan);
    return plan;
}

const Component& find_backend(const PluginHost& plugins, const SessionConfig& config) {
    const Component* c = plugins.find(BASALT_COMPONENT_BACKEND, config.backend);
    if (c == nullptr) {
        fail(BASALT_ERR_NOT_FOUND, "no backend named '{}' is loaded (is its plugin installed? see basalt plugins)",
             config.backend);
    }
    return *c;
}

const Component& find_kv(const PluginHost& plugins, const SessionConfig& config) {
    const Component* c = plugins.find(BASALT_COMPONENT_KV_CACHE, config.kv_cache);
    if (c == nullptr) {
        fail(BASALT_ERR_NOT_FOUND, "no KV cache manager named '{}' is loaded (see basalt plugins)", config.kv_cache);
    }
    return *c;
}

std::vector<std::pair<std::string, std::string>> backend_params(const SessionConfig& config) {
    auto params = config.backend_params;
    if (config.n_threads != 0) params.emplace_back("threads", std::to_string(config.n_threads));
    return params;
}

// Weights: zero-copy when the backend can use host memory, else one upload of the data section.
LoadedWeights load_weights(const BackendInstance& backend, const basalt_model& model) {
    const auto& file = model.gguf.file;
    const auto& be = backend.iface();
    const uint64_t data_begin = file.data_offset();
    const uint64_t file_size = model.gguf.map->size();
    LoadedWeights w;
    // The mapping is read-only and private: wrap_file lets the backend drop pages it stops reading (repacked
    // weights); wrap_host is the same without that.
    const bool as_file = be.buffer_wrap_file != nullptr;
    const auto wrap = as_file ? be.buffer_wrap_file : be.buffer_wrap_host;
    if (wrap != nullptr && file_size > 0) {
        basalt_buffer* b = nullptr;
        backend.check(wrap(backend.get(), model.gguf.map->data(), file_size, &b),
                      as_file ? "buffer_wrap_file" : "buffer_wrap_host");
        w.buffer = DeviceBuffer(backend, b);
        w.view = std::make_unique<ModelWeights>(file, b, data_begin);
        w.bytes = file_size;
        return w;
    }
    const uint64_t data_size = file_size > data_begin ? file_size - data_begin : 0;
    w.buffer = DeviceBuffer(backend, std::max<uint64_t>(data_size, 1), BASALT_BUFFER_WEIGHTS, "buffer_alloc(weights)");
    w.bytes = std::max<uint64_t>(data_size, 1);
    if (data_size > 0) {
        // In pieces, so that a big model's upload can report its progress.
        constexpr uint64_t kPiece = uint64_t{64} << 20;
        progress::report("upload", 0, data_size);
        for (uint64_t at = 0; at < data_size; at += kPiece) {
            const uint64_t n = std::min(kPiece, data_size - at);
            backend.check(
                be.buffer_write(backend.get(), w.buffer.get(), at, model.gguf.map->data() + data_begin + at, n),
                "buffer_write(weights)");
            progress::report("upload", at + n, data_size);
        }
        model.gguf.map->release_resident();  // uploaded: the backend holds its own copy
    }
    w.view = std::make_unique<ModelWeights>(file, w.buffer.get(), 0);
    return w;
}

}  // namespace

SessionShape session_shape(const basalt_model& model, const SessionConfig& config) {
    const ModelHparams& hp = model.hparams;
    // Refused before anything is created: an architecture without a builder, a missing or unusable tensor.
    check_runnable(model.gguf.file, hp);
    SessionShape s;
    s.n_ctx =
        config.n_ctx != 0 ? config.n_ctx : (hp.n_ctx_train != 0 ? std::min<uint32_t>(hp.n_ctx_train, 4096) : 4096);
    // One sequence past the trained context: positions the model never saw (several sequences sharing more
    // slots is fine; the engine warns about its per-request context itself).
    if (config.warn_context && config.n_seq_max <= 1 && hp.n_ctx_train != 0 && s.n_ctx > hp.n_ctx_train &&
        !hp.learned_positions) {
        log::warn("context {} is above the {} positions the model was trained with: output past them degrades", s.n_ctx,
                  hp.n_ctx_train);
    }
    // Learned position embeddings end at n_ctx_train: one sequence may not go past them (several sequences may
    // share more slots than that; decode checks each position).
    if (hp.learned_positions && hp.n_ctx_train != 0 && s.n_ctx > hp.n_ctx_train && config.n_seq_max <= 1) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "context {} exceeds {}'s {} learned positions", s.n_ctx, hp.arch,
             hp.n_ctx_train);
    }
    if (config.n_batch == 0) fail(BASALT_ERR_INVALID_ARGUMENT, "batch size must be at least 1");
    if (config.n_seq_max == 0) fail(BASALT_ERR_INVALID_ARGUMENT, "n_seq_max must be at least 1");
    s.n_batch = std::min(config.n_batch, s.n_ctx);
    s.moe_router = MoeRouter::parse(config.moe_router);
    if (s.moe_router.capacity && hp.n_expert == 0) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "MoE router '{}': the {} model has no experts to route", config.moe_router,
             hp.arch);
    }
    return s;
}

SessionResources::SessionResources(const PluginHost& plugins, const basalt_model& model_in, const SessionConfig& config,
                                   SessionShape shape)
    : model(model_in),
      hp(model_in.hparams),
      n_ctx(shape.n_ctx),
      n_batch(shape.n_batch),
      n_seq_max(config.n_seq_max),
      plan(first_plan(model_in, config, shape)),
      backend_component(find_backend(plugins, config)),
      kv_component(find_kv(plugins, config)),
      backend(backend_component, config.backend, backend_params(config)),
      weights(load_weights(backend, model_in)),
      kv(kv_component, config.kv_cache, hp, cache_layers(), n_ctx, n_seq_max, n_batch, config.kv_params),
      layout(kv.read_layout()) {
    check_layout(config, shape);
    allocate_caches();
}

uint32_t SessionResources::cache_layers() const {
    return hp.encoder_decoder ? hp.n_layer_dec : hp.n_layer;
}

void SessionResources::check_layout(const SessionConfig& config, SessionShape shape) {
    // One K and one V row width per cache layer (gemma4's layers differ; elsewhere all equal).
    k_row_bytes.clear();
    v_row_bytes.clear();
    for (uint32_t il = 0; il < cache_layers(); ++il) {
        const auto kb = dtype_bytes(layout.k_type, hp.n_embd_k_gqa(il));
        const auto vb = dtype_bytes(layout.v_type, hp.n_embd_v_gqa(il));
        if (!kb || !vb) {
            fail(BASALT_ERR_UNSUPPORTED, "KV types {}/{} cannot hold rows of {}/{} values", dtype_name(layout.k_type),
                 dtype_name(layout.v_type), hp.n_embd_k_gqa(il), hp.n_embd_v_gqa(il));
        }
        k_row_bytes.push_back(*kb);
        v_row_bytes.push_back(*vb);
    }
    residual = BASALT_HAS_FIELD(&layout, basalt_kv_cache_layout, residual) ? layout.residual : 0;
    if (residual % 32 != 0 || (residual != 0 && layout.block_size % residual != 0)) {
        fail(BASALT_ERR_PLUGIN,
             "KV cache manager '{}': residual window {} is not a multiple of 32 dividing its "
             "block size {}",
             config.kv_cache, residual, layout.block_size);
    }
    for (const basalt_dtype t : {layout.k_type, layout.v_type}) {
        if (blocks::kivi_per_channel(t) && residual == 0) {
            fail(BASALT_ERR_UNSUPPORTED,
                 "KV type {} quantizes each channel over 32 tokens: it needs a residual "
                 "window, which KV cache manager '{}' did not set",
                 dtype_name(t), config.kv_cache);
        }
    }
    if (residual != 0 && hp.encoder_decoder) {
        fail(BASALT_ERR_UNSUPPORTED, "a KV residual window is not supported for encoder-decoder models");
    }
    if (residual != 0 && layout.n_window_slots != 0) {
        fail(BASALT_ERR_UNSUPPORTED, "a KV residual window does not compose with capped sliding-window storage");
    }
    if (layout.stream_window != 0) check_streaming(config);
    // Attention at cache positions (streaming), the K/V residual window and encoder-decoder attention (not
    // causal, position bias) are ATTENTION parameters of ABI 1.4 that a backend built for 1.3 would ignore.
    const char* needs_1_4 = layout.stream_window != 0 ? "a streaming KV cache (attention at cache positions)"
                            : residual != 0           ? "a KV residual window"
                            : hp.encoder_decoder      ? "an encoder-decoder model (non-causal attention)"
                            : hp.encoder_only         ? "an encoder-only model (non-causal attention)"
                                                      : nullptr;
    if (needs_1_4 != nullptr && backend_component.plugin_abi_major == 1 && backend_component.plugin_abi_minor < 4) {
        fail(BASALT_ERR_UNSUPPORTED,
             "{} needs attention parameters of ABI 1.4, but backend '{}' was built for ABI {}.{}", needs_1_4,
             config.backend, backend_component.plugin_abi_major, backend_component.plugin_abi_minor);
    }
    // The exact plan for the types the manager chose; the machine must hold it.
    PlanRequest request = plan_request(config, shape);
    request.k_type = layout.k_type;
    request.v_type = layout.v_type;
    request.kv_residual = residual;
    // State checkpoints serve prefix attaches: a manager without prefix_attach keeps none.
    if (kv.iface().prefix_attach == nullptr) request.state_checkpoint_bytes = 0;
    plan = plan_memory(model.gguf.file, hp, request);
    check_fits(plan);
}

// Refuses a streaming manager on a model it cannot serve (no rotary positions, own sliding windows); caps the batch
// at the manager's stream_batch.
void SessionResources::check_streaming(const SessionConfig& config) {
    // Cache positions come from rotating keys (RoPE): learned or absent position embeddings cannot be shifted.
    if (hp.n_rot == 0) {
        fail(BASALT_ERR_UNSUPPORTED,
             "KV cache manager '{}' streams (attention sinks + window) and needs rotary positions, but {} has none",
             config.kv_cache, hp.arch);
    }
    // Sink keys are re-rotated with ATTENTION's plain rope parameters (base, linear scale): frequency factors, YaRN
    // and a cos/sin magnitude have no place there.
    if (hp.rope_scaling.needs_scaled_op() || hp.rope_scaling.attn_temp_scale != 0.0f) {
        fail(BASALT_ERR_UNSUPPORTED,
             "KV cache manager '{}' streams and re-rotates sink keys with plain rope (base and linear scale), but "
             "this model's rope scaling ({}) is not implemented there",
             config.kv_cache, hp.rope_description);
    }
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        if (hp.layer_sliding[il]) {
            fail(BASALT_ERR_UNSUPPORTED, "KV cache manager '{}' streams, but layer {} of {} has its own sliding window",
                 config.kv_cache, il, hp.arch);
        }
    }
    if (layout.stream_window + layout.stream_sinks > n_ctx) {
        fail(BASALT_ERR_PLUGIN, "KV cache manager '{}' streams {} sinks + a window of {}, more than the {} slots",
             config.kv_cache, layout.stream_sinks, layout.stream_window, n_ctx);
    }
    // The manager's ring holds one batch of stream_batch tokens per sequence: split larger ones.
    if (layout.stream_batch != 0) n_batch = std::min(n_batch, layout.stream_batch);
}

void SessionResources::allocate_caches() {
    const uint32_t n_cache_layers = cache_layers();
    // Sliding-window layers in the manager's capped storage when it has one (the layout says how many rows).
    n_window_slots = layout.n_window_slots;
    sliding.assign(n_cache_layers, 0);
    window_storage.assign(n_cache_layers, 0);
    for (uint32_t il = 0; il < n_cache_layers; ++il) {
        sliding[il] = il < hp.layer_sliding.size() && hp.layer_sliding[il] ? 1 : 0;
        window_storage[il] = sliding[il] && n_window_slots != 0;
    }
    k_storage_rows = kv_storage_rows(layout.k_type, layout.v_type, n_ctx);
    v_storage_rows = k_storage_rows;
    auto alloc = [&](std::vector<DeviceBuffer>& to, uint64_t bytes, const char* what) {
        to.emplace_back(backend, bytes, BASALT_BUFFER_KV, what);
        kv_bytes += bytes;
    };
    if (hp.encoder_only) return;  // every pass attends over its own rows: nothing is cached
    for (uint32_t il = 0; il < n_cache_layers; ++il) {
        if (!hp.owns_kv(il)) {
            // KV shared between layers (gemma4): this layer attends over an earlier layer's storage and has none.
            k.emplace_back();
            v.emplace_back();
            if (residual != 0) {
                k_residual.emplace_back();
                v_residual.emplace_back();
            }
            continue;
        }
        alloc(k, k_row_bytes[il] * (window_storage[il] ? n_window_slots : k_storage_rows), "buffer_alloc(K cache)");
        alloc(v, v_row_bytes[il] * (window_storage[il] ? n_window_slots : v_storage_rows), "buffer_alloc(V cache)");
        if (residual != 0) {
            // F32 residual rows: R per sequence, for K and for V.
            const uint64_t res_rows = static_cast<uint64_t>(residual) * n_seq_max;
            alloc(k_residual, 4ull * hp.n_embd_k_gqa(il) * res_rows, "buffer_alloc(KV residual)");
            alloc(v_residual, 4ull * hp.n_embd_v_gqa(il) * res_rows, "buffer_alloc(KV residual)");
        }
    }
    for (uint32_t il = 0; il < hp.layer_recurrent.size(); ++il) {
        // Hybrid models: each sequence's recurrent state (one row per sequence) beside the K/V.
        const bool r = hp.layer_recurrent[il];
        conv_state.emplace_back();
        delta_state.emplace_back();
        if (!r) continue;
        const uint64_t conv = 4ull * hp.conv_state_floats() * n_seq_max;
        const uint64_t delta = 4ull * hp.delta_state_floats() * n_seq_max;
        conv_state.back() = DeviceBuffer(backend, conv, BASALT_BUFFER_KV, "buffer_alloc(conv state)");
        delta_state.back() = DeviceBuffer(backend, delta, BASALT_BUFFER_KV, "buffer_alloc(delta-rule state)");
        kv_bytes += conv + delta;
        state_bytes += conv + delta;
    }
    if (hp.encoder_decoder) {
        // Cross-attention K/V of encoded sources: n_ctx rows per decoder layer (the plan counts them with the
        // decoder's own cache), handed out per source.
        for (uint32_t il = 0; il < hp.n_layer_dec; ++il) {
            alloc(cross_k, k_row_bytes[il] * n_ctx, "buffer_alloc(cross K)");
            alloc(cross_v, v_row_bytes[il] * n_ctx, "buffer_alloc(cross V)");
        }
    }
}

void SessionResources::check_fits(const MemoryPlan& p) {
    // The plan's total holds a generation's logits; those of every batch row are allocated only by steps that
    // ask for them: not counted here.
    const uint64_t need = p.total_bytes;
    const std::optional<HostMemory> mem = host_memory();
    if (!mem || need <= mem->usable()) return;  // no /proc/meminfo (not Linux): nothing to check against
    fail(BASALT_ERR_OUT_OF_MEMORY,
         "the memory plan for ctx {}, batch {}, {} sequence(s), K/V {}/{} needs {} (weights {}, KV cache {}, work "
         "memory {}), but this machine has {} available (MemAvailable {} + SwapFree {}); use a smaller context",
         p.n_ctx, p.n_batch, p.n_seq_max, dtype_name(p.k_type), dtype_name(p.v_type), describe_bytes(need),
         describe_bytes(p.weight_bytes), describe_bytes(p.kv_bytes), describe_bytes(p.scratch_bytes),
         describe_bytes(mem->usable()), describe_bytes(mem->available), describe_bytes(mem->swap_free));
}

void SessionResources::ensure_io(uint64_t bytes) {
    if (bytes <= io_bytes && io.get() != nullptr) return;
    // Grown by doubling (each new buffer costs the backend its kept graph plan), never past the plan's worst case.
    const uint64_t size = std::max<uint64_t>(bytes, std::min<uint64_t>(io_bytes * 2, plan.io_bytes));
    DeviceBuffer b(backend, size, BASALT_BUFFER_IO, "buffer_alloc(io)");
    io = std::move(b);
    io_bytes = size;
}

void SessionResources::bind_storage(ForwardContext& c, bool encoder_pass) const {
    GraphBuilder& g = c.g;
    if (!encoder_pass) {
        for (uint32_t il = 0; il < cache_layers(); ++il) {
            if (!hp.owns_kv(il)) {  // a layer sharing an earlier layer's K/V: that layer's tensors
                const int32_t k_src = c.k_cache[hp.kv_source(il)], v_src = c.v_cache[hp.kv_source(il)];
                c.k_cache.push_back(k_src);
                c.v_cache.push_back(v_src);
                continue;
            }
            const auto k_rows = static_cast<int64_t>(window_storage[il] != 0 ? n_window_slots : k_storage_rows);
            const auto v_rows = static_cast<int64_t>(window_storage[il] != 0 ? n_window_slots : v_storage_rows);
            c.k_cache.push_back(g.tensor(layout.k_type, {hp.n_embd_k_gqa(il), k_rows}, "cache_k." + std::to_string(il),
                                         k[il].get(), 0));
            c.v_cache.push_back(g.tensor(layout.v_type, {hp.n_embd_v_gqa(il), v_rows}, "cache_v." + std::to_string(il),
                                         v[il].get(), 0));
        }
    }
    if (!encoder_pass && residual != 0) {
        const auto res_rows = static_cast<int64_t>(residual) * static_cast<int64_t>(n_seq_max);
        c.kv_residual = static_cast<int32_t>(residual);
        for (uint32_t il = 0; il < hp.n_layer; ++il) {
            if (!hp.owns_kv(il)) {
                const int32_t k_src = c.k_residual[hp.kv_source(il)], v_src = c.v_residual[hp.kv_source(il)];
                c.k_residual.push_back(k_src);
                c.v_residual.push_back(v_src);
                continue;
            }
            c.k_residual.push_back(g.tensor(BASALT_DTYPE_F32, {hp.n_embd_k_gqa(il), res_rows},
                                            "residual_k." + std::to_string(il), k_residual[il].get(), 0));
            c.v_residual.push_back(g.tensor(BASALT_DTYPE_F32, {hp.n_embd_v_gqa(il), res_rows},
                                            "residual_v." + std::to_string(il), v_residual[il].get(), 0));
        }
    }
    if (!encoder_pass && hp.recurrent()) {
        const auto seqs = static_cast<int64_t>(n_seq_max);
        for (uint32_t il = 0; il < hp.n_layer; ++il) {
            const bool r = hp.layer_recurrent[il];
            const std::string n = std::to_string(il);
            c.conv_state.push_back(r ? g.tensor(BASALT_DTYPE_F32, {static_cast<int64_t>(hp.conv_state_floats()), seqs},
                                                "state_conv." + n, conv_state[il].get(), 0)
                                     : -1);
            c.delta_state.push_back(r ? g.tensor(BASALT_DTYPE_F32,
                                                 {static_cast<int64_t>(hp.delta_state_floats()), seqs},
                                                 "state_delta." + n, delta_state[il].get(), 0)
                                      : -1);
        }
    }
    for (uint32_t il = 0; il < cross_k.size(); ++il) {
        c.cross_k.push_back(g.tensor(layout.k_type, {hp.n_embd_k_gqa(), static_cast<int64_t>(n_ctx)},
                                     "cross_k." + std::to_string(il), cross_k[il].get(), 0));
        c.cross_v.push_back(g.tensor(layout.v_type, {hp.n_embd_v_gqa(), static_cast<int64_t>(n_ctx)},
                                     "cross_v." + std::to_string(il), cross_v[il].get(), 0));
    }
}

void SessionResources::copy_residual_rows(int32_t src, int32_t dst) const {
    const auto& be = backend.iface();
    for (size_t il = 0; il < k_residual.size(); ++il) {
        if (k_residual[il].get() == nullptr) continue;  // a layer sharing another's K/V
        for (int kv_index = 0; kv_index < 2; ++kv_index) {
            basalt_buffer* b = kv_index == 0 ? k_residual[il].get() : v_residual[il].get();
            const auto l = static_cast<uint32_t>(il);
            const uint64_t row = 4ull * (kv_index == 0 ? hp.n_embd_k_gqa(l) : hp.n_embd_v_gqa(l));
            const uint64_t bytes = row * residual;
            std::vector<uint8_t> tmp(bytes);
            backend.check(be.buffer_read(backend.get(), b, bytes * static_cast<uint64_t>(src), tmp.data(), bytes),
                          "buffer_read(KV residual)");
            backend.check(be.buffer_write(backend.get(), b, bytes * static_cast<uint64_t>(dst), tmp.data(), bytes),
                          "buffer_write(KV residual)");
        }
    }
}

std::vector<std::pair<basalt_buffer*, uint64_t>> SessionResources::state_buffers() const {
    std::vector<std::pair<basalt_buffer*, uint64_t>> out;
    for (size_t il = 0; il < conv_state.size(); ++il) {
        if (conv_state[il].get() == nullptr) continue;
        out.emplace_back(conv_state[il].get(), 4ull * hp.conv_state_floats());
        out.emplace_back(delta_state[il].get(), 4ull * hp.delta_state_floats());
    }
    return out;
}

uint64_t SessionResources::state_row_bytes() const {
    return hp.recurrent_state_bytes();
}

std::vector<uint8_t> SessionResources::read_state(int32_t seq) const {
    std::vector<uint8_t> out;
    read_state(seq, out);
    return out;
}

void SessionResources::read_state(int32_t seq, std::vector<uint8_t>& out) const {
    const auto& be = backend.iface();
    out.resize(state_row_bytes());
    uint8_t* at = out.data();
    for (const auto& [buffer, row] : state_buffers()) {
        backend.check(be.buffer_read(backend.get(), buffer, row * static_cast<uint64_t>(seq), at, row),
                      "buffer_read(recurrent state)");
        at += row;
    }
}

void SessionResources::write_state(int32_t seq, const std::vector<uint8_t>& state) const {
    if (state.size() != state_row_bytes()) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "a recurrent state of {} bytes for rows of {}", state.size(),
             state_row_bytes());
    }
    const auto& be = backend.iface();
    const uint8_t* at = state.data();
    for (const auto& [buffer, row] : state_buffers()) {
        backend.check(be.buffer_write(backend.get(), buffer, row * static_cast<uint64_t>(seq), at, row),
                      "buffer_write(recurrent state)");
        at += row;
    }
}

void SessionResources::copy_state_rows(int32_t src, int32_t dst) const {
    write_state(dst, read_state(src));
}

MemoryPlan SessionResources::allocated(uint64_t logits_floats, uint64_t io_logits_bytes) const {
    MemoryPlan m;
    m.n_ctx = n_ctx;
    m.n_batch = n_batch;
    m.n_seq_max = n_seq_max;
    m.k_type = layout.k_type;
    m.v_type = layout.v_type;
    m.kv_residual = residual;
    m.kv_residual_bytes = 0;
    for (uint32_t il = 0; il < k_residual.size(); ++il) {
        if (k_residual[il].get() == nullptr) continue;  // a layer sharing another's K/V
        m.kv_residual_bytes += static_cast<uint64_t>(residual) * n_seq_max * 4ull *
                               (static_cast<uint64_t>(hp.n_embd_k_gqa(il)) + hp.n_embd_v_gqa(il));
    }
    m.state_bytes = state_bytes;
    m.n_params = plan.n_params;
    m.types = plan.types;
    m.weight_bytes = weights.bytes;
    m.kv_bytes_per_token = 0;
    for (uint32_t il = 0; il < k_row_bytes.size() && !hp.encoder_only; ++il) {
        if (!hp.owns_kv(il)) continue;  // attends over another layer's K/V (gemma4)
        m.kv_bytes_per_token += (k_row_bytes[il] + v_row_bytes[il]) * (hp.encoder_decoder ? 2 : 1);  // + cross rows
    }
    m.kv_bytes = kv_bytes;
    m.kv_cells_full = hp.encoder_only ? 0 : n_ctx;
    bool any_sliding = false;
    for (uint8_t s : sliding) any_sliding = any_sliding || s != 0;
    m.kv_cells_window = !any_sliding ? 0 : n_window_slots != 0 ? n_window_slots : n_ctx;
    m.logits_bytes = 4 * logits_floats + io_logits_bytes;
    m.scratch_bytes = io_bytes + 4 * logits_floats;
    m.total_bytes = m.weight_bytes + m.kv_bytes + m.scratch_bytes;
    return m;
}

}  // namespace basalt
