#include "exec/session.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include <basalt/blocks/kivi.hpp>

#include "exec/sampler-chain.hpp"
#include "graph/arch.hpp"
#include "host/host-services.hpp"
#include "model/dtype.hpp"
#include "model/model.hpp"
#include "support/error.hpp"
#include "support/host-memory.hpp"
#include "support/log.hpp"
#include "support/params.hpp"
#include "support/progress.hpp"

namespace basalt {
namespace {

// Attention slot lists are padded to a multiple of this many (slot, position) pairs (see decode_chunk).
constexpr size_t kVisibleStep = 64;

template <typename T>
void put(std::vector<uint8_t>& io, uint64_t offset, const std::vector<T>& v) {
    if (!v.empty()) std::memcpy(io.data() + offset, v.data(), v.size() * sizeof(T));
}

uint64_t align64(uint64_t x) {
    return (x + 63) & ~uint64_t{63};
}

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

// Splits "NAME:key=value,..." into the manager's name and parameters (appended to the given ones).
SessionConfig with_kv_spec(const SessionConfig& in) {
    SessionConfig c = in;
    if (in.kv_cache.find_first_of(":;") == std::string::npos) return c;
    std::vector<SamplerSpec> spec;
    try {
        spec = parse_sampler_chain(in.kv_cache);
    } catch (const Error& e) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "KV cache spec '{}': {}", in.kv_cache, e.what());
    }
    if (spec.size() != 1) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "KV cache spec '{}' names {} managers; give one NAME[:key=value,...]",
             in.kv_cache, spec.size());
    }
    c.kv_cache = spec[0].name;
    for (auto& kv : spec[0].params) c.kv_params.push_back(std::move(kv));
    return c;
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

}  // namespace

Session::Session(const PluginHost& plugins, const basalt_model& model, const SessionConfig& config_in)
    : model_(model), config_(with_kv_spec(config_in)) {
    const SessionConfig& config = config_;
    const ModelHparams& hp = model.hparams;
    // Refused before anything is created: an architecture without a builder, a missing or unusable tensor.
    check_runnable(model.gguf.file, hp);
    n_ctx_ = config.n_ctx != 0 ? config.n_ctx : (hp.n_ctx_train != 0 ? std::min<uint32_t>(hp.n_ctx_train, 4096) : 4096);
    // One sequence past the trained context: positions the model never saw (several sequences sharing more
    // slots is fine; the engine warns about its per-request context itself).
    if (config.warn_context && config.n_seq_max <= 1 && hp.n_ctx_train != 0 && n_ctx_ > hp.n_ctx_train &&
        hp.arch != "gpt2") {
        log::warn("context {} is above the {} positions the model was trained with: output past them degrades", n_ctx_,
                  hp.n_ctx_train);
    }
    // Learned position embeddings end at n_ctx_train: one sequence may not go past them (several sequences may
    // share more slots than that; decode checks each position).
    if (hp.arch == "gpt2" && hp.n_ctx_train != 0 && n_ctx_ > hp.n_ctx_train && config.n_seq_max <= 1) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "context {} exceeds gpt2's {} learned positions", n_ctx_, hp.n_ctx_train);
    }
    if (config.n_batch == 0) fail(BASALT_ERR_INVALID_ARGUMENT, "batch size must be at least 1");
    if (config.n_seq_max == 0) fail(BASALT_ERR_INVALID_ARGUMENT, "n_seq_max must be at least 1");
    n_batch_ = std::min(config.n_batch, n_ctx_);
    seq_len_.assign(config.n_seq_max, 0);
    seq_steer_.assign(config.n_seq_max, -1);
    moe_router_ = MoeRouter::parse(config.moe_router);
    if (moe_router_.capacity && hp.n_expert == 0) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "MoE router '{}': the {} model has no experts to route", config.moe_router,
             hp.arch);
    }

    // Fail fast: a plan the machine cannot hold is refused before anything is created or allocated.
    PlanRequest request;
    request.n_ctx = n_ctx_;
    request.n_batch = n_batch_;
    request.n_seq_max = config.n_seq_max;
    request.k_type = guess_kv_type(config, "k_type");
    request.v_type = guess_kv_type(config, "v_type");
    request.kv_residual = guess_kv_residual(config);
    try {
        plan_ = plan_memory(model.gguf.file, hp, request);
    } catch (const Error&) {
        plan_ = MemoryPlan{};  // a K/V type the rows cannot hold: the manager names it below
    }
    if (plan_.n_ctx != 0) check_fits(plan_);

    backend_component_ = plugins.find(BASALT_COMPONENT_BACKEND, config.backend);
    if (backend_component_ == nullptr) {
        fail(BASALT_ERR_NOT_FOUND, "no backend named '{}' is loaded (is its plugin installed? see basalt plugins)",
             config.backend);
    }
    kv_component_ = plugins.find(BASALT_COMPONENT_KV_CACHE, config.kv_cache);
    if (kv_component_ == nullptr) {
        fail(BASALT_ERR_NOT_FOUND, "no KV cache manager named '{}' is loaded (see basalt plugins)", config.kv_cache);
    }
    backend_ = read_table<basalt_backend_iface>(*backend_component_);
    kv_ = read_table<basalt_kv_cache_iface>(*kv_component_);

    size_t n_devices = 0;
    check_status(backend_.device_count(host_services(), &n_devices), "device_count");
    if (n_devices == 0) {
        fail(BASALT_ERR_UNSUPPORTED, "backend '{}' has no usable device{}", config.backend,
             plugin_error_message().empty() ? "" : ": " + plugin_error_message());
    }
    auto backend_params = config.backend_params;
    if (config.n_threads != 0) backend_params.emplace_back("threads", std::to_string(config.n_threads));
    ParamsView bp(backend_params);
    check_status(backend_.create(host_services(), 0, &bp.params, &backend_instance_), "create");

    try {
        // Weights: zero-copy when the backend can use host memory, else one upload of the data section.
        const auto& file = model.gguf.file;
        const uint64_t data_begin = file.data_offset();
        const uint64_t file_size = model.gguf.map->size();
        // The mapping is read-only and private: wrap_file lets the backend drop pages it stops reading (repacked
        // weights); wrap_host is the same without that.
        const bool as_file = backend_.buffer_wrap_file != nullptr;
        const auto wrap = as_file ? backend_.buffer_wrap_file : backend_.buffer_wrap_host;
        if (wrap != nullptr && file_size > 0) {
            check_status(wrap(backend_instance_, model.gguf.map->data(), file_size, &weights_buffer_),
                         as_file ? "buffer_wrap_file" : "buffer_wrap_host");
            owned_buffers_.push_back(weights_buffer_);
            weights_ = std::make_unique<ModelWeights>(file, weights_buffer_, data_begin);
            weight_buffer_bytes_ = file_size;
        } else {
            const uint64_t data_size = file_size > data_begin ? file_size - data_begin : 0;
            check_status(backend_.buffer_alloc(backend_instance_, std::max<uint64_t>(data_size, 1),
                                               BASALT_BUFFER_WEIGHTS, &weights_buffer_),
                         "buffer_alloc(weights)");
            weight_buffer_bytes_ = std::max<uint64_t>(data_size, 1);
            owned_buffers_.push_back(weights_buffer_);
            if (data_size > 0) {
                // In pieces, so that a big model's upload can report its progress.
                constexpr uint64_t kPiece = uint64_t{64} << 20;
                progress::report("upload", 0, data_size);
                for (uint64_t at = 0; at < data_size; at += kPiece) {
                    const uint64_t n = std::min(kPiece, data_size - at);
                    check_status(backend_.buffer_write(backend_instance_, weights_buffer_, at,
                                                       model.gguf.map->data() + data_begin + at, n),
                                 "buffer_write(weights)");
                    progress::report("upload", at + n, data_size);
                }
                model.gguf.map->release_resident();  // uploaded: the backend holds its own copy
            }
            weights_ = std::make_unique<ModelWeights>(file, weights_buffer_, 0);
        }

        // KV cache manager and its storage.
        const uint32_t n_cache_layers = cache_layers();
        std::vector<int32_t> windows(n_cache_layers, 0);
        sliding_.assign(n_cache_layers, 0);
        for (uint32_t il = 0; il < n_cache_layers && il < hp.layer_sliding.size(); ++il) {
            if (hp.layer_sliding[il]) windows[il] = static_cast<int32_t>(hp.sliding_window);
            sliding_[il] = hp.layer_sliding[il] ? 1 : 0;
        }
        basalt_kv_cache_config kc{};
        kc.struct_size = sizeof(kc);
        kc.n_layers = n_cache_layers;
        kc.n_kv_heads = hp.n_head_kv;
        kc.head_dim_k = hp.head_dim_k;
        kc.head_dim_v = hp.head_dim_v;
        kc.n_slots = n_ctx_;
        kc.n_seq_max = config.n_seq_max;
        kc.layer_window = windows.data();
        kc.n_batch = n_batch_;
        ParamsView kp(config.kv_params);
        clear_plugin_error();
        const basalt_status st = kv_.create(host_services(), &kc, &kp.params, &kv_instance_);
        if (st != BASALT_OK) {
            fail(st, "KV cache manager '{}': {}", config.kv_cache,
                 plugin_error_message().empty() ? status_name(st) : plugin_error_message());
        }
        layout_.struct_size = sizeof(layout_);
        clear_plugin_error();
        if (kv_.layout(kv_instance_, &layout_) != BASALT_OK) {
            fail(BASALT_ERR_PLUGIN, "KV cache manager '{}': layout failed: {}", config.kv_cache,
                 plugin_error_message());
        }
        const auto kb = dtype_bytes(layout_.k_type, hp.n_embd_k_gqa());
        const auto vb = dtype_bytes(layout_.v_type, hp.n_embd_v_gqa());
        if (!kb || !vb) {
            fail(BASALT_ERR_UNSUPPORTED, "KV types {}/{} cannot hold rows of {}/{} values", dtype_name(layout_.k_type),
                 dtype_name(layout_.v_type), hp.n_embd_k_gqa(), hp.n_embd_v_gqa());
        }
        k_row_bytes_ = *kb;
        v_row_bytes_ = *vb;
        residual_ = BASALT_HAS_FIELD(&layout_, basalt_kv_cache_layout, residual) ? layout_.residual : 0;
        if (residual_ % 32 != 0 || (residual_ != 0 && layout_.block_size % residual_ != 0)) {
            fail(BASALT_ERR_PLUGIN,
                 "KV cache manager '{}': residual window {} is not a multiple of 32 dividing its "
                 "block size {}",
                 config.kv_cache, residual_, layout_.block_size);
        }
        for (const basalt_dtype t : {layout_.k_type, layout_.v_type}) {
            if (blocks::kivi_per_channel(t) && residual_ == 0) {
                fail(BASALT_ERR_UNSUPPORTED,
                     "KV type {} quantizes each channel over 32 tokens: it needs a residual "
                     "window, which KV cache manager '{}' did not set",
                     dtype_name(t), config.kv_cache);
            }
        }
        if (residual_ != 0 && hp.encoder_decoder) {
            fail(BASALT_ERR_UNSUPPORTED, "a KV residual window is not supported for encoder-decoder models");
        }
        if (residual_ != 0 && layout_.n_window_slots != 0) {
            fail(BASALT_ERR_UNSUPPORTED, "a KV residual window does not compose with capped sliding-window storage");
        }
        if (layout_.stream_window != 0) check_streaming();
        // Attention at cache positions (streaming), the K/V residual window and encoder-decoder attention (not
        // causal, position bias) are ATTENTION parameters of ABI 1.4 that a backend built for 1.3 would ignore.
        const char* needs_1_4 = layout_.stream_window != 0 ? "a streaming KV cache (attention at cache positions)"
                                : residual_ != 0           ? "a KV residual window"
                                : hp.encoder_decoder       ? "an encoder-decoder model (non-causal attention)"
                                                           : nullptr;
        if (needs_1_4 != nullptr && backend_component_->plugin_abi_major == 1 &&
            backend_component_->plugin_abi_minor < 4) {
            fail(BASALT_ERR_UNSUPPORTED,
                 "{} needs attention parameters of ABI 1.4, but backend '{}' was built for ABI {}.{}", needs_1_4,
                 config.backend, backend_component_->plugin_abi_major, backend_component_->plugin_abi_minor);
        }
        // Sliding-window layers in the manager's capped storage when it has one (the layout says how many rows).
        n_window_slots_ = layout_.n_window_slots;
        window_storage_.assign(n_cache_layers, 0);
        for (uint32_t il = 0; il < n_cache_layers; ++il) window_storage_[il] = sliding_[il] && n_window_slots_ != 0;
        // The exact plan for the types the manager chose; the machine must hold it.
        request.k_type = layout_.k_type;
        request.v_type = layout_.v_type;
        request.kv_residual = residual_;
        plan_ = plan_memory(model.gguf.file, hp, request);
        check_fits(plan_);
        k_storage_rows_ = kv_storage_rows(layout_.k_type, layout_.v_type, n_ctx_);
        v_storage_rows_ = k_storage_rows_;
        for (uint32_t il = 0; il < n_cache_layers; ++il) {
            basalt_buffer* k = nullptr;
            basalt_buffer* v = nullptr;
            const uint64_t k_rows = window_storage_[il] ? n_window_slots_ : k_storage_rows_;
            const uint64_t v_rows = window_storage_[il] ? n_window_slots_ : v_storage_rows_;
            check_status(backend_.buffer_alloc(backend_instance_, k_row_bytes_ * k_rows, BASALT_BUFFER_KV, &k),
                         "buffer_alloc(K cache)");
            owned_buffers_.push_back(k);
            kv_bytes_ += k_row_bytes_ * k_rows;
            check_status(backend_.buffer_alloc(backend_instance_, v_row_bytes_ * v_rows, BASALT_BUFFER_KV, &v),
                         "buffer_alloc(V cache)");
            kv_bytes_ += v_row_bytes_ * v_rows;
            owned_buffers_.push_back(v);
            k_buffers_.push_back(k);
            v_buffers_.push_back(v);
            if (residual_ != 0) {
                // F32 residual rows: R per sequence, for K and for V.
                const uint64_t res_rows = static_cast<uint64_t>(residual_) * config.n_seq_max;
                for (int kv = 0; kv < 2; ++kv) {
                    basalt_buffer* r = nullptr;
                    const uint64_t bytes = 4ull * (kv == 0 ? hp.n_embd_k_gqa() : hp.n_embd_v_gqa()) * res_rows;
                    check_status(backend_.buffer_alloc(backend_instance_, bytes, BASALT_BUFFER_KV, &r),
                                 "buffer_alloc(KV residual)");
                    owned_buffers_.push_back(r);
                    kv_bytes_ += bytes;
                    (kv == 0 ? k_residual_buffers_ : v_residual_buffers_).push_back(r);
                }
            }
        }
        if (hp.encoder_decoder) {
            // Cross-attention K/V of encoded sources: n_ctx rows per decoder layer (the plan counts them with the
            // decoder's own cache), handed out per source.
            for (uint32_t il = 0; il < hp.n_layer_dec; ++il) {
                for (int kv = 0; kv < 2; ++kv) {
                    basalt_buffer* b = nullptr;
                    const uint64_t bytes = (kv == 0 ? k_row_bytes_ : v_row_bytes_) * n_ctx_;
                    check_status(backend_.buffer_alloc(backend_instance_, bytes, BASALT_BUFFER_KV, &b),
                                 kv == 0 ? "buffer_alloc(cross K)" : "buffer_alloc(cross V)");
                    owned_buffers_.push_back(b);
                    kv_bytes_ += bytes;
                    (kv == 0 ? cross_k_buffers_ : cross_v_buffers_).push_back(b);
                }
            }
            for (uint32_t r = n_ctx_; r-- > 0;) cross_free_.push_back(static_cast<int32_t>(r));  // lowest rows first
            seq_source_.assign(config.n_seq_max, nullptr);
        }
    } catch (...) {
        for (auto* b : owned_buffers_) backend_.buffer_free(backend_instance_, b);
        owned_buffers_.clear();
        if (kv_instance_ != nullptr) kv_.destroy(kv_instance_);
        backend_.destroy(backend_instance_);
        throw;
    }
    log::info("session: {} on backend '{}', ctx {}, batch {}, {} sequence(s), KV {}/{}{}: {} allocated{}", hp.arch,
              config.backend, n_ctx_, n_batch_, seq_len_.size(), dtype_name(layout_.k_type), dtype_name(layout_.v_type),
              residual_ != 0 ? fmt::format(" (residual window {})", residual_) : "", describe_bytes(kv_bytes_),
              n_window_slots_ != 0 ? fmt::format(" (sliding-window layers: {} rows)", n_window_slots_) : "");
}

Session::~Session() {
    if (steer_buffer_ != nullptr) backend_.buffer_free(backend_instance_, steer_buffer_);
    for (auto* b : owned_buffers_) backend_.buffer_free(backend_instance_, b);
    if (io_buffer_ != nullptr) backend_.buffer_free(backend_instance_, io_buffer_);
    if (kv_instance_ != nullptr) kv_.destroy(kv_instance_);
    if (backend_instance_ != nullptr) backend_.destroy(backend_instance_);
}

void Session::check_streaming() {
    const ModelHparams& hp = model_.hparams;
    // Cache positions come from rotating keys (RoPE): learned or absent position embeddings cannot be shifted.
    if (hp.n_rot == 0) {
        fail(BASALT_ERR_UNSUPPORTED,
             "KV cache manager '{}' streams (attention sinks + window) and needs rotary positions, but {} has none",
             config_.kv_cache, hp.arch);
    }
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        if (hp.layer_sliding[il]) {
            fail(BASALT_ERR_UNSUPPORTED, "KV cache manager '{}' streams, but layer {} of {} has its own sliding window",
                 config_.kv_cache, il, hp.arch);
        }
    }
    if (layout_.stream_window + layout_.stream_sinks > n_ctx_) {
        fail(BASALT_ERR_PLUGIN, "KV cache manager '{}' streams {} sinks + a window of {}, more than the {} slots",
             config_.kv_cache, layout_.stream_sinks, layout_.stream_window, n_ctx_);
    }
    // The manager's ring holds one batch of stream_batch tokens per sequence: split larger ones.
    if (layout_.stream_batch != 0) n_batch_ = std::min(n_batch_, layout_.stream_batch);
}

void Session::check_fits(const MemoryPlan& p) const {
    // The logits of every batch row are allocated only by steps that ask for them: not counted here.
    const uint64_t need = p.total_bytes - p.logits_bytes;
    const std::optional<HostMemory> mem = host_memory();
    if (!mem || need <= mem->usable()) return;  // no /proc/meminfo (not Linux): nothing to check against
    fail(BASALT_ERR_OUT_OF_MEMORY,
         "the memory plan for ctx {}, batch {}, {} sequence(s), K/V {}/{} needs {} (weights {}, KV cache {}, work "
         "memory {}), but this machine has {} available (MemAvailable {} + SwapFree {}); use a smaller context",
         p.n_ctx, p.n_batch, p.n_seq_max, dtype_name(p.k_type), dtype_name(p.v_type), describe_bytes(need),
         describe_bytes(p.weight_bytes), describe_bytes(p.kv_bytes), describe_bytes(p.scratch_bytes - p.logits_bytes),
         describe_bytes(mem->usable()), describe_bytes(mem->available), describe_bytes(mem->swap_free));
}

MemoryPlan Session::allocated() const {
    const ModelHparams& hp = model_.hparams;
    MemoryPlan m;
    m.n_ctx = n_ctx_;
    m.n_batch = n_batch_;
    m.n_seq_max = static_cast<uint32_t>(seq_len_.size());
    m.k_type = layout_.k_type;
    m.v_type = layout_.v_type;
    m.kv_residual = residual_;
    m.kv_residual_bytes = static_cast<uint64_t>(k_residual_buffers_.size()) * residual_ * seq_len_.size() * 4ull *
                          (static_cast<uint64_t>(hp.n_embd_k_gqa()) + hp.n_embd_v_gqa());
    m.n_params = plan_.n_params;
    m.types = plan_.types;
    m.weight_bytes = weight_buffer_bytes_;
    m.kv_bytes_per_token = static_cast<uint64_t>(cache_layers()) * (k_row_bytes_ + v_row_bytes_) *
                           (hp.encoder_decoder ? 2 : 1);  // + the cross-attention rows
    m.kv_bytes = kv_bytes_;
    m.kv_cells_full = n_ctx_;
    bool any_sliding = false;
    for (uint8_t s : sliding_) any_sliding = any_sliding || s != 0;
    m.kv_cells_window = !any_sliding ? 0 : n_window_slots_ != 0 ? n_window_slots_ : n_ctx_;
    m.logits_bytes = 4 * static_cast<uint64_t>(logits_.capacity()) + io_logits_bytes_;
    m.scratch_bytes = io_bytes_ + 4 * static_cast<uint64_t>(logits_.capacity());
    m.total_bytes = m.weight_bytes + m.kv_bytes + m.scratch_bytes;
    return m;
}

void Session::check_status(basalt_status st, const std::string& what) const {
    if (st == BASALT_OK) return;
    std::string msg = plugin_error_message();
    if (msg.empty()) msg = std::string(status_name(st));
    fail(st, "backend '{}': {}: {}", config_.backend, what, msg);
}

size_t Session::n_vocab() const {
    return model_.hparams.n_vocab;
}

uint32_t Session::seq_length(int32_t seq) const {
    if (seq < 0 || static_cast<size_t>(seq) >= seq_len_.size()) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "sequence id {} out of range (0..{})", seq, seq_len_.size() - 1);
    }
    return seq_len_[static_cast<size_t>(seq)];
}

size_t Session::n_embd() const {
    return model_.hparams.n_embd;
}

const float* Session::logits(size_t row) const {
    if (row >= n_out_) fail(BASALT_ERR_INVALID_ARGUMENT, "logits row {} out of range ({} rows)", row, n_out_);
    return logits_.data() + row * n_vocab();
}

void Session::seq_drop(int32_t seq) {
    seq_length(seq);
    clear_plugin_error();
    const basalt_status st = kv_.seq_drop(kv_instance_, seq);
    if (st != BASALT_OK) fail(st, "KV cache manager '{}': seq_drop: {}", config_.kv_cache, plugin_error_message());
    seq_len_[static_cast<size_t>(seq)] = 0;
    release_source(seq);
}

void Session::seq_fork(int32_t src, int32_t dst) {
    const uint32_t len = seq_length(src);
    if (seq_length(dst) != 0 || seq_source_length(dst) != 0)
        fail(BASALT_ERR_INVALID_ARGUMENT, "fork target sequence {} is not empty", dst);
    clear_plugin_error();
    const basalt_status st = kv_.seq_fork(kv_instance_, src, dst);
    if (st != BASALT_OK) fail(st, "KV cache manager '{}': seq_fork: {}", config_.kv_cache, plugin_error_message());
    seq_len_[static_cast<size_t>(dst)] = len;
    seq_steer_[static_cast<size_t>(dst)] = seq_steer_[static_cast<size_t>(src)];
    if (!seq_source_.empty()) seq_source_[static_cast<size_t>(dst)] = seq_source_[static_cast<size_t>(src)];
    // The fork shares the source's sealed units (blocks); its open unit lives in the residual rows: copy them.
    if (residual_ != 0 && len % residual_ != 0) {
        const ModelHparams& hp = model_.hparams;
        for (size_t il = 0; il < k_residual_buffers_.size(); ++il) {
            for (int kv = 0; kv < 2; ++kv) {
                basalt_buffer* b = kv == 0 ? k_residual_buffers_[il] : v_residual_buffers_[il];
                const uint64_t row = 4ull * (kv == 0 ? hp.n_embd_k_gqa() : hp.n_embd_v_gqa());
                const uint64_t bytes = row * residual_;
                std::vector<uint8_t> tmp(bytes);
                check_status(
                    backend_.buffer_read(backend_instance_, b, bytes * static_cast<uint64_t>(src), tmp.data(), bytes),
                    "buffer_read(KV residual)");
                check_status(
                    backend_.buffer_write(backend_instance_, b, bytes * static_cast<uint64_t>(dst), tmp.data(), bytes),
                    "buffer_write(KV residual)");
            }
        }
    }
}

int32_t Session::steer_acquire(const std::vector<float>& vectors, const std::vector<uint8_t>& layers) {
    const ModelHparams& hp = model_.hparams;
    if (hp.encoder_decoder) fail(BASALT_ERR_UNSUPPORTED, "steering is not supported for encoder-decoder models (t5)");
    const size_t n_embd = hp.n_embd;
    if (vectors.size() != static_cast<size_t>(hp.n_layer) * n_embd || layers.size() != hp.n_layer) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "steering vectors of {} floats and {} layer flags do not fit {} layers of {}",
             vectors.size(), layers.size(), hp.n_layer, n_embd);
    }
    if (steer_buffer_ == nullptr) {
        n_steer_slots_ = static_cast<uint32_t>(seq_len_.size()) + 1;  // one spare: a re-set acquires before it frees
        const uint64_t bytes = 4ull * n_embd * n_steer_slots_ * hp.n_layer;
        check_status(backend_.buffer_alloc(backend_instance_, bytes, BASALT_BUFFER_WEIGHTS, &steer_buffer_),
                     "buffer_alloc(steering)");
        const std::vector<float> zeros(bytes / 4, 0.f);
        check_status(backend_.buffer_write(backend_instance_, steer_buffer_, 0, zeros.data(), bytes),
                     "buffer_write(steering)");
        steer_layers_.assign(n_steer_slots_, {});
    }
    int32_t slot = -1;
    for (uint32_t i = 0; i < n_steer_slots_ && slot < 0; ++i)
        if (steer_layers_[i].empty()) slot = static_cast<int32_t>(i);
    if (slot < 0) fail(BASALT_ERR_CAPACITY, "all {} steering slots (n_seq_max) are in use", n_steer_slots_);
    // Layer il's table is [n_embd, n_steer_slots_]: the slot's vector is column `slot` of it.
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const uint64_t off = 4ull * n_embd * (static_cast<uint64_t>(il) * n_steer_slots_ + static_cast<uint64_t>(slot));
        check_status(
            backend_.buffer_write(backend_instance_, steer_buffer_, off, vectors.data() + il * n_embd, 4ull * n_embd),
            "buffer_write(steering)");
    }
    steer_layers_[static_cast<size_t>(slot)] = layers;
    steer_layers_[static_cast<size_t>(slot)].push_back(1);  // never empty while taken
    return slot;
}

void Session::steer_release(int32_t slot) {
    if (slot < 0) return;
    if (static_cast<uint32_t>(slot) >= n_steer_slots_)
        fail(BASALT_ERR_INVALID_ARGUMENT, "steering slot {} does not exist (0..{})", slot, n_steer_slots_);
    steer_layers_[static_cast<size_t>(slot)].clear();
    for (auto& s : seq_steer_)
        if (s == slot) s = -1;
}

void Session::seq_set_steer(int32_t seq, int32_t slot) {
    seq_length(seq);
    if (slot >= 0 &&
        (static_cast<uint32_t>(slot) >= n_steer_slots_ || steer_layers_[static_cast<size_t>(slot)].empty()))
        fail(BASALT_ERR_INVALID_ARGUMENT, "steering slot {} is not in use", slot);
    seq_steer_[static_cast<size_t>(seq)] = slot < 0 ? -1 : slot;
}

void Session::seq_set_steer_vectors(int32_t seq, const std::vector<float>& vectors,
                                    const std::vector<uint8_t>& layers) {
    const int32_t old = seq_steer(seq);
    const int32_t slot = vectors.empty() ? -1 : steer_acquire(vectors, layers);
    seq_steer_[static_cast<size_t>(seq)] = slot;
    if (old >= 0 && std::find(seq_steer_.begin(), seq_steer_.end(), old) == seq_steer_.end()) steer_release(old);
}

void Session::set_observe(const std::vector<uint8_t>& layers) {
    const ModelHparams& hp = model_.hparams;
    if (hp.encoder_decoder && std::find(layers.begin(), layers.end(), 1) != layers.end())
        fail(BASALT_ERR_UNSUPPORTED, "observing layers is not supported for encoder-decoder models (t5)");
    if (!layers.empty() && layers.size() != hp.n_layer)
        fail(BASALT_ERR_INVALID_ARGUMENT, "observe: {} layer flags for a model of {} layers", layers.size(),
             hp.n_layer);
    observe_layers_.clear();
    for (uint8_t f : layers) observe_layers_.push_back(f != 0 ? 1 : 0);
    if (std::find(observe_layers_.begin(), observe_layers_.end(), 1) == observe_layers_.end()) observe_layers_.clear();
    observed_.assign(hp.n_layer, {});
}

void Session::set_moe_stats(bool on) {
    const ModelHparams& hp = model_.hparams;
    if (on && (hp.n_expert == 0 || hp.n_expert_used == 0)) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "MoE statistics: the {} model has no experts", hp.arch);
    }
    moe_stats_ = on;
    moe_stats_data_.clear();
    if (on) {
        moe_stats_data_.resize(hp.n_layer);
        for (auto& l : moe_stats_data_) l.per_expert.assign(hp.n_expert, 0);
    }
}

const std::vector<float>& Session::observed(uint32_t layer) const {
    if (layer >= model_.hparams.n_layer)
        fail(BASALT_ERR_INVALID_ARGUMENT, "observed: layer {} is not in 0..{}", layer, model_.hparams.n_layer - 1);
    static const std::vector<float> kNone;
    return layer < observed_.size() ? observed_[layer] : kNone;
}

int32_t Session::seq_steer(int32_t seq) const {
    seq_length(seq);
    return seq_steer_[static_cast<size_t>(seq)];
}

void Session::seq_truncate(int32_t seq, uint32_t n_keep) {
    const uint32_t len = seq_length(seq);
    if (kv_.seq_truncate == nullptr) {
        fail(BASALT_ERR_UNSUPPORTED, "KV cache manager '{}' does not implement seq_truncate (an ABI 1.1 entry)",
             config_.kv_cache);
    }
    if (n_keep > len) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "cannot truncate sequence {} to {} tokens: it holds only {}", seq, n_keep,
             len);
    }
    if (n_keep == len) return;
    // A sealed unit of the residual window no longer has its F32 rows: a cut may end only on a unit boundary or
    // inside the open unit.
    if (residual_ != 0 && n_keep < len / residual_ * residual_ && n_keep % residual_ != 0) {
        fail(BASALT_ERR_UNSUPPORTED,
             "cannot truncate sequence {} to {} tokens: with KV types {}/{} and a residual window of {}, tokens "
             "before {} are already quantized in units of {} (cut at a multiple of {} or after {})",
             seq, n_keep, dtype_name(layout_.k_type), dtype_name(layout_.v_type), residual_,
             len / residual_ * residual_, residual_, residual_, len / residual_ * residual_);
    }
    clear_plugin_error();
    const basalt_status st = kv_.seq_truncate(kv_instance_, seq, n_keep);
    if (st != BASALT_OK) {
        fail(st, "KV cache manager '{}': seq_truncate: {}", config_.kv_cache,
             plugin_error_message().empty() ? status_name(st) : plugin_error_message());
    }
    seq_len_[static_cast<size_t>(seq)] = n_keep;
}

uint32_t Session::prefix_attach(int32_t seq, const int32_t* tokens, size_t n) {
    if (seq_length(seq) != 0) fail(BASALT_ERR_INVALID_ARGUMENT, "prefix_attach: sequence {} is not empty", seq);
    if (tokens == nullptr && n > 0) fail(BASALT_ERR_INVALID_ARGUMENT, "prefix_attach: tokens is NULL");
    // An encoder-decoder decoder's K/V depend on the source (through cross-attention): no sharing by tokens.
    if (kv_.prefix_attach == nullptr || n == 0 || model_.hparams.encoder_decoder) return 0;
    size_t matched = 0;
    clear_plugin_error();
    const basalt_status st = kv_.prefix_attach(kv_instance_, seq, tokens, std::min<size_t>(n, n_ctx_), &matched);
    if (st != BASALT_OK) {
        fail(st, "KV cache manager '{}': prefix_attach: {}", config_.kv_cache,
             plugin_error_message().empty() ? status_name(st) : plugin_error_message());
    }
    if (matched > n)
        fail(BASALT_ERR_PLUGIN, "KV cache manager '{}' matched {} of {} tokens", config_.kv_cache, matched, n);
    if (residual_ != 0 && matched % residual_ != 0) {
        kv_.seq_drop(kv_instance_, seq);
        fail(BASALT_ERR_PLUGIN, "KV cache manager '{}' matched {} tokens, not whole units of the residual window {}",
             config_.kv_cache, matched, residual_);
    }
    seq_len_[static_cast<size_t>(seq)] = static_cast<uint32_t>(matched);
    return static_cast<uint32_t>(matched);
}

void Session::seq_set_salt(int32_t seq, uint64_t salt) {
    if (seq_length(seq) != 0) fail(BASALT_ERR_INVALID_ARGUMENT, "seq_set_salt: sequence {} is not empty", seq);
    if (kv_.seq_set_salt == nullptr) {
        if (salt == 0) return;
        fail(BASALT_ERR_UNSUPPORTED, "KV cache manager '{}' does not implement seq_set_salt (an ABI 1.2 entry)",
             config_.kv_cache);
    }
    clear_plugin_error();
    const basalt_status st = kv_.seq_set_salt(kv_instance_, seq, salt);
    if (st != BASALT_OK) {
        fail(st, "KV cache manager '{}': seq_set_salt: {}", config_.kv_cache,
             plugin_error_message().empty() ? status_name(st) : plugin_error_message());
    }
}

size_t Session::free_slots() const {
    if (kv_.free_slots != nullptr) return kv_.free_slots(kv_instance_);
    uint64_t used = 0;
    for (uint32_t len : seq_len_) used += len;
    return used >= n_ctx_ ? 0 : static_cast<size_t>(n_ctx_ - used);
}

void Session::ensure_io(uint64_t bytes) {
    if (bytes <= io_bytes_ && io_buffer_ != nullptr) return;
    // Grown by doubling (each new buffer costs the backend its kept graph plan), never past the plan's worst case.
    const uint64_t size = std::max<uint64_t>(bytes, std::min<uint64_t>(io_bytes_ * 2, plan_.io_bytes));
    basalt_buffer* b = nullptr;
    check_status(backend_.buffer_alloc(backend_instance_, size, BASALT_BUFFER_IO, &b), "buffer_alloc(io)");
    if (io_buffer_ != nullptr) backend_.buffer_free(backend_instance_, io_buffer_);
    io_buffer_ = b;
    io_bytes_ = size;
}

void Session::decode(const basalt_batch& batch) {
    const ModelHparams& hp = model_.hparams;
    if (batch.struct_size < offsetof(basalt_batch, want_logits) + sizeof(batch.want_logits)) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_batch.struct_size {} is too small", batch.struct_size);
    }
    const size_t n = batch.n_tokens;
    if (n == 0) fail(BASALT_ERR_INVALID_ARGUMENT, "empty batch");
    if (batch.tokens == nullptr || batch.positions == nullptr || batch.seq_ids == nullptr) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "batch needs tokens, positions and seq_ids");
    }
    // Validate everything before any work: ids, sequences, positions in order, context room.
    std::vector<uint32_t> expected = seq_len_;
    // Learned position embeddings (gpt2) end at the trained context.
    const uint32_t learned_positions = hp.arch == "gpt2" && hp.n_ctx_train != 0 ? hp.n_ctx_train : UINT32_MAX;
    for (size_t i = 0; i < n; ++i) {
        const int32_t tok = batch.tokens[i], seq = batch.seq_ids[i], pos = batch.positions[i];
        if (tok < 0 || static_cast<uint32_t>(tok) >= hp.n_vocab) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "batch token {} = {} is not in the vocabulary (0..{})", i, tok,
                 hp.n_vocab - 1);
        }
        if (seq < 0 || static_cast<size_t>(seq) >= seq_len_.size()) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "batch token {} has sequence id {} (session allows 0..{})", i, seq,
                 seq_len_.size() - 1);
        }
        if (hp.encoder_decoder && seq_source_[static_cast<size_t>(seq)] == nullptr) {
            fail(BASALT_ERR_INVALID_ARGUMENT,
                 "batch token {}: sequence {} has no encoded source (encode it first: basalt_session_encode)", i, seq);
        }
        auto& e = expected[static_cast<size_t>(seq)];
        if (pos < 0 || static_cast<uint32_t>(pos) != e) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "batch token {} of sequence {} has position {}, expected {}", i, seq, pos,
                 e);
        }
        e += 1;
        if (e > learned_positions) {
            fail(BASALT_ERR_CAPACITY, "sequence {} would hold {} tokens, more than gpt2's {} learned positions", seq, e,
                 learned_positions);
        }
        if (e > n_ctx_ && !streaming()) {
            fail(BASALT_ERR_CAPACITY, "sequence {} would hold {} tokens, more than the context of {} (n_ctx)", seq, e,
                 n_ctx_);
        }
        if (e >= static_cast<uint32_t>(INT32_MAX)) {
            fail(BASALT_ERR_CAPACITY, "sequence {} would pass the position range", seq);
        }
    }
    uint64_t total = 0;
    for (uint32_t e : expected) total += e;
    if (total > n_ctx_ && !streaming()) {
        fail(BASALT_ERR_CAPACITY, "the batch needs {} cache slots in all, more than the context of {} (n_ctx)", total,
             n_ctx_);
    }

    std::vector<float> out;
    size_t n_out = 0;
    const bool report = n > n_batch_;  // one forward pass is not long work
    if (report) progress::report("prefill", 0, n);
    for (auto& o : observed_) o.clear();
    for (size_t begin = 0; begin < n; begin += n_batch_) {
        decode_chunk(batch, begin, std::min(n, begin + n_batch_), out, n_out);
        if (report) progress::report("prefill", std::min(n, begin + n_batch_), n);
    }
    logits_ = std::move(out);
    n_out_ = n_out;
}

void Session::build_graph(const std::vector<basalt_kv_copy>& copies, const std::vector<basalt_kv_copy>& window_copies,
                          const GraphShape& shape, const IoLayout& io) {
    const ModelHparams& hp = model_.hparams;
    const int64_t T = shape.tokens;
    const int64_t n_rows = shape.outputs;
    built_ = GraphShape{};  // nothing valid until the build completes
    graph_.clear();
    // Copies first: copy on write of the blocks (full-attention layers, or every layer without window storage),
    // then the window storage's copies (forked sequences' rings).
    for (int pass = 0; pass < 2; ++pass) {
        const auto& list = pass == 0 ? copies : window_copies;
        for (const auto& cp : list) {
            for (uint32_t il = 0; il < cache_layers(); ++il) {
                if ((window_storage_[il] != 0) != (pass == 1)) continue;
                const std::string p = "blk." + std::to_string(il) + (pass == 0 ? ".kv_copy" : ".kv_window_copy");
                for (int kv = 0; kv < 2; ++kv) {
                    basalt_buffer* buf = kv == 0 ? k_buffers_[il] : v_buffers_[il];
                    const uint64_t row = kv == 0 ? k_row_bytes_ : v_row_bytes_;
                    const basalt_dtype type = kv == 0 ? layout_.k_type : layout_.v_type;
                    const int64_t width = kv == 0 ? hp.n_embd_k_gqa() : hp.n_embd_v_gqa();
                    const int32_t src =
                        graph_.tensor(type, {width, cp.n_slots}, p, buf, row * static_cast<uint64_t>(cp.src_slot));
                    const int32_t dst =
                        graph_.tensor(type, {width, cp.n_slots}, p, buf, row * static_cast<uint64_t>(cp.dst_slot));
                    graph_.node(BASALT_OP_COPY, p, dst, {src});
                }
            }
        }
    }
    ForwardContext c{graph_, hp, *weights_};
    c.stream_sinks = static_cast<int32_t>(layout_.stream_sinks);
    c.stream_window = static_cast<int32_t>(layout_.stream_window);
    c.n_tokens = T;
    c.n_outputs = n_rows;
    c.tokens = graph_.tensor(BASALT_DTYPE_I32, {T}, "inp_tokens", io_buffer_, io.tokens);
    c.positions = graph_.tensor(BASALT_DTYPE_I32, {T}, "inp_positions", io_buffer_, io.pos);
    c.kv_slots = graph_.tensor(BASALT_DTYPE_I32, {T}, "inp_kv_slots", io_buffer_, io.slots);
    c.attn_query = graph_.tensor(BASALT_DTYPE_I32, {2, T}, "inp_attn_query", io_buffer_, io.query);
    c.attn_lists =
        graph_.tensor(BASALT_DTYPE_I32, {static_cast<int64_t>(2 * shape.n_vis), static_cast<int64_t>(shape.n_lists)},
                      "inp_attn_lists", io_buffer_, io.lists);
    if (n_window_slots_ != 0) {
        c.kv_slots_window = graph_.tensor(BASALT_DTYPE_I32, {T}, "inp_kv_window_slots", io_buffer_, io.window_slots);
        c.attn_lists_window = graph_.tensor(
            BASALT_DTYPE_I32, {static_cast<int64_t>(2 * shape.n_vis_window), static_cast<int64_t>(shape.n_lists)},
            "inp_attn_window_lists", io_buffer_, io.window_lists);
        c.window_storage.assign(window_storage_.begin(), window_storage_.end());
    }
    c.out_rows = graph_.tensor(BASALT_DTYPE_I32, {std::max<int64_t>(1, n_rows)}, "inp_out_rows", io_buffer_, io.rows);
    if (n_rows > 0) {
        c.logits = graph_.tensor(BASALT_DTYPE_F32, {static_cast<int64_t>(hp.n_vocab), n_rows}, "logits", io_buffer_,
                                 io.logits);
    }
    for (uint32_t il = 0; il < cache_layers(); ++il) {
        const auto k_rows = static_cast<int64_t>(window_storage_[il] != 0 ? n_window_slots_ : k_storage_rows_);
        const auto v_rows = static_cast<int64_t>(window_storage_[il] != 0 ? n_window_slots_ : v_storage_rows_);
        c.k_cache.push_back(graph_.tensor(layout_.k_type, {hp.n_embd_k_gqa(), k_rows}, "cache_k." + std::to_string(il),
                                          k_buffers_[il], 0));
        c.v_cache.push_back(graph_.tensor(layout_.v_type, {hp.n_embd_v_gqa(), v_rows}, "cache_v." + std::to_string(il),
                                          v_buffers_[il], 0));
    }
    if (residual_ != 0) {
        const auto res_rows = static_cast<int64_t>(residual_) * static_cast<int64_t>(seq_len_.size());
        c.kv_residual = static_cast<int32_t>(residual_);
        c.kv_residual_rows = graph_.tensor(BASALT_DTYPE_I32, {T}, "inp_kv_residual_rows", io_buffer_, io.residual_rows);
        c.attn_residual = graph_.tensor(BASALT_DTYPE_I32, {2, static_cast<int64_t>(shape.n_lists)}, "inp_attn_residual",
                                        io_buffer_, io.residual_table);
        for (uint32_t il = 0; il < hp.n_layer; ++il) {
            c.k_residual.push_back(graph_.tensor(BASALT_DTYPE_F32, {hp.n_embd_k_gqa(), res_rows},
                                                 "residual_k." + std::to_string(il), k_residual_buffers_[il], 0));
            c.v_residual.push_back(graph_.tensor(BASALT_DTYPE_F32, {hp.n_embd_v_gqa(), res_rows},
                                                 "residual_v." + std::to_string(il), v_residual_buffers_[il], 0));
        }
    }
    if (!shape.steer_layers.empty()) {
        c.steer_rows = graph_.tensor(BASALT_DTYPE_I32, {T}, "inp_steer_slots", io_buffer_, io.steer);
        c.steer_tables.assign(hp.n_layer, -1);
        for (uint32_t il = 0; il < hp.n_layer; ++il) {
            if (shape.steer_layers[il] == 0) continue;
            const uint64_t off = 4ull * hp.n_embd * n_steer_slots_ * il;
            c.steer_tables[il] =
                graph_.tensor(BASALT_DTYPE_F32, {static_cast<int64_t>(hp.n_embd), static_cast<int64_t>(n_steer_slots_)},
                              "steer." + std::to_string(il), steer_buffer_, off);
        }
    }
    if (!shape.observe_layers.empty()) {
        c.observe_out.assign(hp.n_layer, -1);
        uint64_t off = io.observe;
        for (uint32_t il = 0; il < hp.n_layer; ++il) {
            if (shape.observe_layers[il] == 0) continue;
            c.observe_out[il] = graph_.tensor(BASALT_DTYPE_F32, {static_cast<int64_t>(hp.n_embd), T},
                                              "observe." + std::to_string(il), io_buffer_, off);
            off += 4ull * hp.n_embd * static_cast<uint64_t>(T);
        }
    }
    c.moe_router = moe_router_;
    if (shape.moe_stats) {
        // Per layer: the expert ids [k, T], then (capacity mode) the status [k, T].
        c.moe_ids_out.assign(hp.n_layer, -1);
        c.moe_status_out.assign(hp.n_layer, -1);
        const auto k = static_cast<int64_t>(hp.n_expert_used);
        const uint64_t bytes = 4ull * static_cast<uint64_t>(k * T);
        uint64_t off = io.moe;
        for (uint32_t il = 0; il < hp.n_layer; ++il) {
            c.moe_ids_out[il] =
                graph_.tensor(BASALT_DTYPE_I32, {k, T}, "moe_ids." + std::to_string(il), io_buffer_, off);
            off += bytes;
            if (moe_router_.capacity) {
                c.moe_status_out[il] =
                    graph_.tensor(BASALT_DTYPE_I32, {k, T}, "moe_status." + std::to_string(il), io_buffer_, off);
                off += bytes;
            }
        }
    }
    if (hp.encoder_decoder) {
        c.rel_index = graph_.tensor(BASALT_DTYPE_I32, {2 * static_cast<int64_t>(hp.rel_max_distance) + 1},
                                    "inp_rel_index", io_buffer_, io.rel);
        c.cross_lists = graph_.tensor(
            BASALT_DTYPE_I32, {static_cast<int64_t>(2 * shape.n_vis_cross), static_cast<int64_t>(shape.n_lists)},
            "inp_cross_lists", io_buffer_, io.cross_lists);
        for (uint32_t il = 0; il < hp.n_layer_dec; ++il) {
            c.cross_k.push_back(graph_.tensor(layout_.k_type, {hp.n_embd_k_gqa(), static_cast<int64_t>(n_ctx_)},
                                              "cross_k." + std::to_string(il), cross_k_buffers_[il], 0));
            c.cross_v.push_back(graph_.tensor(layout_.v_type, {hp.n_embd_v_gqa(), static_cast<int64_t>(n_ctx_)},
                                              "cross_v." + std::to_string(il), cross_v_buffers_[il], 0));
        }
    }
    build_forward(c);
    if (copies.empty() && window_copies.empty()) built_ = shape;
}

void Session::decode_chunk(const basalt_batch& batch, size_t begin, size_t end, std::vector<float>& out_logits,
                           size_t& n_out) {
    const ModelHparams& hp = model_.hparams;
    const auto T = static_cast<int64_t>(end - begin);
    std::vector<int32_t> tokens(batch.tokens + begin, batch.tokens + end);
    std::vector<int32_t> positions(batch.positions + begin, batch.positions + end);
    std::vector<int32_t> seqs(batch.seq_ids + begin, batch.seq_ids + end);

    // 1. Slots for the new tokens (all or nothing), and copy-on-write / window copies to do first.
    std::vector<int32_t> slots(static_cast<size_t>(T), -1);
    std::vector<int32_t> window_slots(n_window_slots_ != 0 ? static_cast<size_t>(T) : 0, -1);
    std::vector<basalt_kv_copy> copies(static_cast<size_t>(T) + 8);
    std::vector<basalt_kv_copy> window_copies(n_window_slots_ != 0 ? 8 : 0);
    basalt_kv_reservation r{};
    r.struct_size = sizeof(r);
    r.n_tokens = static_cast<size_t>(T);
    r.tokens = tokens.data();
    r.positions = positions.data();
    r.seq_ids = seqs.data();
    r.out_slots = slots.data();
    r.out_window_slots = window_slots.empty() ? nullptr : window_slots.data();
    basalt_status st = BASALT_OK;
    for (int attempt = 0; attempt < 3; ++attempt) {  // grown once per copy array at most
        r.out_copies = copies.data();
        r.copies_capacity = copies.size();
        r.out_window_copies = window_copies.empty() ? nullptr : window_copies.data();
        r.window_copies_capacity = window_copies.size();
        r.out_n_copies = 0;
        r.out_n_window_copies = 0;
        clear_plugin_error();
        st = kv_.reserve(kv_instance_, &r);
        if (st != BASALT_ERR_CAPACITY) break;
        if (r.out_n_copies > copies.size()) {
            copies.resize(r.out_n_copies);
        } else if (r.out_n_window_copies > window_copies.size()) {
            window_copies.resize(r.out_n_window_copies);
        } else {
            break;  // out of slots: not a matter of array sizes
        }
    }
    if (st != BASALT_OK) {
        fail(st, "KV cache manager '{}': {}", config_.kv_cache,
             plugin_error_message().empty() ? status_name(st) : plugin_error_message());
    }
    copies.resize(r.out_n_copies);
    window_copies.resize(n_window_slots_ != 0 ? r.out_n_window_copies : 0);

    // 2. Visible (slot, position) lists of each sequence in the chunk: of a full-attention layer, and of a
    // sliding-window layer when those keep their own storage.
    std::vector<int32_t> list_of_seq(seq_len_.size(), -1);
    std::vector<int32_t> order;  // sequences in list order
    for (int32_t s : seqs) {
        if (list_of_seq[static_cast<size_t>(s)] >= 0) continue;
        list_of_seq[static_cast<size_t>(s)] = static_cast<int32_t>(order.size());
        order.push_back(s);
    }
    uint32_t full_layer = 0, window_layer = 0;
    while (full_layer + 1 < cache_layers() && window_storage_[full_layer] != 0) ++full_layer;
    while (window_layer + 1 < cache_layers() && window_storage_[window_layer] == 0) ++window_layer;
    // Pairs of every sequence's list of `layer`, each padded (slot -1) to n_vis pairs: a multiple of kVisibleStep
    // (at most `cap`), so consecutive decode steps build graphs of one shape, which a backend can run again from
    // what it recorded (Vulkan replays its command buffer).
    // A sequence sees at most what it holds after this chunk: the (slot, position) buffers are sized to the longest
    // such sequence, once per call, not to the whole cache per sequence (a step of many short sequences over a big
    // cache would zero megabytes).
    size_t longest = 0;
    {
        std::vector<uint32_t> after(seq_len_);
        for (int32_t s : seqs) longest = std::max<size_t>(longest, ++after[static_cast<size_t>(s)]);
    }
    auto collect = [&](uint32_t layer, size_t cap, size_t& n_vis) {
        std::vector<std::vector<int32_t>> lists;
        std::vector<int32_t> sl(std::min(cap, longest)), ps(sl.size());
        for (int32_t s : order) {
            size_t count = 0;
            clear_plugin_error();
            const basalt_status vs = kv_.visible(kv_instance_, s, layer, sl.data(), ps.data(), sl.size(), &count);
            if (vs != BASALT_OK) {
                fail(vs, "KV cache manager '{}': visible: {}", config_.kv_cache, plugin_error_message());
            }
            std::vector<int32_t> pairs;
            pairs.reserve(count * 2);
            for (size_t i = 0; i < count; ++i) {
                pairs.push_back(sl[i]);
                pairs.push_back(ps[i]);
            }
            lists.push_back(std::move(pairs));
        }
        n_vis = 1;
        for (const auto& l : lists) n_vis = std::max(n_vis, l.size() / 2);
        n_vis = std::max(n_vis, std::min<size_t>((n_vis + kVisibleStep - 1) / kVisibleStep * kVisibleStep, cap));
        std::vector<int32_t> data(2 * n_vis * lists.size(), -1);
        for (size_t g = 0; g < lists.size(); ++g)
            std::copy(lists[g].begin(), lists[g].end(), data.begin() + static_cast<std::ptrdiff_t>(2 * n_vis * g));
        return data;
    };
    size_t n_vis = 0, n_vis_window = 0;
    const std::vector<int32_t> list_data = collect(full_layer, n_ctx_, n_vis);
    std::vector<int32_t> window_list_data;
    if (n_window_slots_ != 0) window_list_data = collect(window_layer, n_window_slots_, n_vis_window);
    // Encoder-decoder: each sequence's cross-attention (row, position) pairs over its source, padded like the
    // self-attention lists; the causal position-bias buckets.
    size_t n_vis_cross = 0;
    std::vector<int32_t> cross_data, rel;
    if (hp.encoder_decoder) {
        for (int32_t s : order) n_vis_cross = std::max(n_vis_cross, seq_source_[static_cast<size_t>(s)]->size());
        n_vis_cross = std::min<size_t>((n_vis_cross + kVisibleStep - 1) / kVisibleStep * kVisibleStep, n_ctx_);
        cross_data.assign(2 * n_vis_cross * order.size(), -1);
        for (size_t g = 0; g < order.size(); ++g) {
            const auto& src = *seq_source_[static_cast<size_t>(order[g])];
            for (size_t i = 0; i < src.size(); ++i) {
                cross_data[2 * (n_vis_cross * g + i)] = src[i];
                cross_data[2 * (n_vis_cross * g + i) + 1] = static_cast<int32_t>(i);
            }
        }
        rel = t5_bucket_table(hp, false);
    }
    std::vector<int32_t> query(2 * static_cast<size_t>(T));
    std::vector<int32_t> out_rows;
    for (int64_t t = 0; t < T; ++t) {
        const auto tt = static_cast<size_t>(t);
        query[2 * tt] = list_of_seq[static_cast<size_t>(seqs[tt])];
        query[2 * tt + 1] = positions[tt];
        if (batch.want_logits == nullptr ? (begin + tt + 1 == batch.n_tokens) : batch.want_logits[begin + tt] != 0) {
            out_rows.push_back(static_cast<int32_t>(t));
        }
    }
    const auto n_rows = static_cast<int64_t>(out_rows.size());
    // Each row's steering slot, and the layers any of them steers (none: the graph has no STEER node at all).
    std::vector<int32_t> steer_rows;
    std::vector<uint8_t> steer_layers;
    for (int64_t t = 0; t < T; ++t) {
        const int32_t slot = seq_steer_[static_cast<size_t>(seqs[static_cast<size_t>(t)])];
        if (slot < 0) continue;
        if (steer_layers.empty()) {
            steer_layers.assign(hp.n_layer, 0);
            steer_rows.assign(static_cast<size_t>(T), -1);
        }
        steer_rows[static_cast<size_t>(t)] = slot;
        const auto& flags = steer_layers_[static_cast<size_t>(slot)];
        for (uint32_t il = 0; il < hp.n_layer; ++il) steer_layers[il] |= flags[il];
    }
    if (!steer_layers.empty() && std::find(steer_layers.begin(), steer_layers.end(), 1) == steer_layers.end()) {
        steer_layers.clear();  // steered sequences whose vectors hook no layer
        steer_rows.clear();
    }

    // The residual window: each token's F32 row (R per sequence), and per list its base row and the first position
    // of its open unit after this chunk (earlier units are sealed, i.e. quantized, by this chunk's writes).
    std::vector<int32_t> residual_rows, residual_table;
    if (residual_ != 0) {
        const auto R = static_cast<int32_t>(residual_);
        residual_rows.resize(static_cast<size_t>(T));
        for (int64_t t = 0; t < T; ++t) {
            const auto tt = static_cast<size_t>(t);
            residual_rows[tt] = seqs[tt] * R + positions[tt] % R;
        }
        std::vector<uint32_t> after(seq_len_);
        for (int32_t s : seqs) ++after[static_cast<size_t>(s)];
        for (int32_t s : order) {
            residual_table.push_back(s * R);
            residual_table.push_back(static_cast<int32_t>(after[static_cast<size_t>(s)] / residual_ * residual_));
        }
    }

    // 3. IO buffer layout: inputs, then logits.
    IoLayout io{};
    io.tokens = 0;
    io.pos = align64(io.tokens + 4 * static_cast<uint64_t>(T));
    io.slots = align64(io.pos + 4 * static_cast<uint64_t>(T));
    io.query = align64(io.slots + 4 * static_cast<uint64_t>(T));
    io.lists = align64(io.query + 8 * static_cast<uint64_t>(T));
    io.window_slots = align64(io.lists + 4 * list_data.size());
    io.window_lists = align64(io.window_slots + 4 * window_slots.size());
    io.steer = align64(io.window_lists + 4 * window_list_data.size());
    io.rel = align64(io.steer + 4 * steer_rows.size());
    io.cross_lists = align64(io.rel + 4 * rel.size());
    io.rows = align64(io.cross_lists + 4 * cross_data.size());
    io.residual_rows = align64(io.rows + 4 * std::max<uint64_t>(1, out_rows.size()));
    io.residual_table = align64(io.residual_rows + 4 * residual_rows.size());
    io.logits = residual_rows.empty() ? io.residual_rows : align64(io.residual_table + 4 * residual_table.size());
    const uint64_t logits_end = io.logits + 4 * static_cast<uint64_t>(hp.n_vocab) * static_cast<uint64_t>(n_rows);
    io_logits_bytes_ = std::max(io_logits_bytes_, logits_end - io.logits);
    io.observe = align64(logits_end);
    const auto n_observed = static_cast<uint64_t>(std::count(observe_layers_.begin(), observe_layers_.end(), 1));
    const uint64_t observe_end =
        n_observed == 0 ? logits_end : io.observe + 4ull * hp.n_embd * static_cast<uint64_t>(T) * n_observed;
    io.moe = align64(observe_end);
    const uint64_t moe_bytes =
        moe_stats_ ? 4ull * hp.n_expert_used * static_cast<uint64_t>(T) * hp.n_layer * (moe_router_.capacity ? 2 : 1)
                   : 0;
    const uint64_t io_size = moe_stats_ ? io.moe + moe_bytes : observe_end;
    ensure_io(io_size);
    std::vector<uint8_t> staged(io.logits, 0);
    put(staged, io.tokens, tokens);
    put(staged, io.pos, positions);
    put(staged, io.slots, slots);
    put(staged, io.query, query);
    put(staged, io.lists, list_data);
    put(staged, io.window_slots, window_slots);
    put(staged, io.window_lists, window_list_data);
    put(staged, io.steer, steer_rows);
    put(staged, io.rel, rel);
    put(staged, io.cross_lists, cross_data);
    put(staged, io.rows, out_rows);
    put(staged, io.residual_rows, residual_rows);
    put(staged, io.residual_table, residual_table);
    check_status(backend_.buffer_write(backend_instance_, io_buffer_, 0, staged.data(), staged.size()),
                 "buffer_write(inputs)");

    // 4. The graph: copies, then the forward pass (reused as it is when the shape is the last one's).
    const GraphShape shape{T,
                           n_rows,
                           n_vis,
                           n_window_slots_ != 0 ? n_vis_window : 0,
                           order.size(),
                           io_buffer_,
                           steer_layers,
                           observe_layers_,
                           moe_stats_,
                           n_vis_cross};
    if (!copies.empty() || !window_copies.empty() || !(shape == built_)) build_graph(copies, window_copies, shape, io);
    clear_plugin_error();
    st = backend_.graph_compute(backend_instance_, &graph_.graph());
    if (st != BASALT_OK) {
        // The reserved slots hold no valid K/V now: forget the affected sequences rather than keep a corrupt cache
        // (every sequence when window copies, which may target sequences outside the batch, did not run).
        std::string dropped;
        for (size_t s = 0; s < list_of_seq.size(); ++s) {
            if (list_of_seq[s] < 0 && (window_copies.empty() || seq_len_[s] == 0)) continue;
            kv_.seq_drop(kv_instance_, static_cast<int32_t>(s));
            seq_len_[s] = 0;
            dropped += (dropped.empty() ? "" : ", ") + std::to_string(s);
        }
        fail(st, "backend '{}': graph_compute: {} (sequences {} were reset)", config_.backend,
             plugin_error_message().empty() ? status_name(st) : plugin_error_message(), dropped);
    }
    for (int64_t t = 0; t < T; ++t) seq_len_[static_cast<size_t>(seqs[static_cast<size_t>(t)])] += 1;

    // 5. Logits of the requested rows.
    if (n_rows > 0) {
        const size_t old = out_logits.size();
        out_logits.resize(old + static_cast<size_t>(n_rows) * hp.n_vocab);
        check_status(backend_.buffer_read(backend_instance_, io_buffer_, io.logits, out_logits.data() + old,
                                          4 * static_cast<uint64_t>(n_rows) * hp.n_vocab),
                     "buffer_read(logits)");
        n_out += static_cast<size_t>(n_rows);
    }
    // 6. Observed residual rows.
    uint64_t off = io.observe;
    for (uint32_t il = 0; il < observe_layers_.size(); ++il) {
        if (observe_layers_[il] == 0) continue;
        auto& dst = observed_[il];
        const size_t old = dst.size();
        const size_t count = static_cast<size_t>(hp.n_embd) * static_cast<size_t>(T);
        dst.resize(old + count);
        check_status(backend_.buffer_read(backend_instance_, io_buffer_, off, dst.data() + old, 4 * count),
                     "buffer_read(observed)");
        off += 4 * count;
    }
    // 7. MoE routing record: counts per expert, dropped and rerouted assignments.
    if (moe_stats_) {
        const size_t n = static_cast<size_t>(hp.n_expert_used) * static_cast<size_t>(T);
        std::vector<int32_t> rec(n * (moe_router_.capacity ? 2 : 1) * hp.n_layer);
        check_status(backend_.buffer_read(backend_instance_, io_buffer_, io.moe, rec.data(), 4 * rec.size()),
                     "buffer_read(moe routing)");
        const int32_t* at = rec.data();
        for (uint32_t il = 0; il < hp.n_layer; ++il) {
            MoeLayerStats& ls = moe_stats_data_[il];
            const int32_t* ids = at;
            const int32_t* status = moe_router_.capacity ? at + n : nullptr;
            at += moe_router_.capacity ? 2 * n : n;
            ls.passes += 1;
            ls.tokens += static_cast<uint64_t>(T);
            for (size_t i = 0; i < n; ++i) {
                const int32_t s = status != nullptr ? status[i] : 0;
                if (s == 1) {
                    ls.dropped += 1;
                    continue;
                }
                if (s >= 2) ls.rerouted += 1;
                if (ids[i] >= 0 && static_cast<size_t>(ids[i]) < ls.per_expert.size())
                    ls.per_expert[static_cast<size_t>(ids[i])] += 1;
            }
        }
    }
}

uint32_t Session::cache_layers() const {
    const ModelHparams& hp = model_.hparams;
    return hp.encoder_decoder ? hp.n_layer_dec : hp.n_layer;
}

uint32_t Session::seq_source_length(int32_t seq) const {
    seq_length(seq);
    if (seq_source_.empty() || seq_source_[static_cast<size_t>(seq)] == nullptr) return 0;
    return static_cast<uint32_t>(seq_source_[static_cast<size_t>(seq)]->size());
}

void Session::release_source(int32_t seq) {
    if (seq_source_.empty()) return;
    auto& src = seq_source_[static_cast<size_t>(seq)];
    if (src != nullptr && src.use_count() == 1) cross_free_.insert(cross_free_.end(), src->rbegin(), src->rend());
    src.reset();
}

void Session::encode(const basalt_batch& batch) {
    const ModelHparams& hp = model_.hparams;
    if (!hp.encoder_decoder) {
        fail(BASALT_ERR_UNSUPPORTED, "encode: '{}' is not an encoder-decoder model (it has no encoder)", hp.arch);
    }
    if (batch.struct_size < offsetof(basalt_batch, want_logits) + sizeof(batch.want_logits)) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_batch.struct_size {} is too small", batch.struct_size);
    }
    const size_t n = batch.n_tokens;
    if (n == 0) fail(BASALT_ERR_INVALID_ARGUMENT, "encode: empty batch");
    if (batch.tokens == nullptr || batch.positions == nullptr || batch.seq_ids == nullptr) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "encode: the batch needs tokens, positions and seq_ids");
    }
    // Validate everything before any work: each sequence empty, its source whole (positions 0..n-1 in order).
    std::vector<std::vector<size_t>> rows(seq_len_.size());
    std::vector<int32_t> order;
    for (size_t i = 0; i < n; ++i) {
        const int32_t tok = batch.tokens[i], seq = batch.seq_ids[i], pos = batch.positions[i];
        if (tok < 0 || static_cast<uint32_t>(tok) >= hp.n_vocab) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "encode: token {} = {} is not in the vocabulary (0..{})", i, tok,
                 hp.n_vocab - 1);
        }
        if (seq < 0 || static_cast<size_t>(seq) >= seq_len_.size()) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "encode: token {} has sequence id {} (session allows 0..{})", i, seq,
                 seq_len_.size() - 1);
        }
        auto& r = rows[static_cast<size_t>(seq)];
        if (r.empty()) {
            if (seq_len_[static_cast<size_t>(seq)] != 0 || seq_source_[static_cast<size_t>(seq)] != nullptr) {
                fail(BASALT_ERR_INVALID_ARGUMENT,
                     "encode: sequence {} is not empty (a source starts a sequence; drop it first)", seq);
            }
            order.push_back(seq);
        }
        if (pos < 0 || static_cast<size_t>(pos) != r.size()) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "encode: token {} of sequence {} has position {}, expected {}", i, seq,
                 pos, r.size());
        }
        r.push_back(i);
    }
    size_t total = 0;
    for (int32_t s : order) total += rows[static_cast<size_t>(s)].size();
    if (total > cross_free_.size()) {
        fail(BASALT_ERR_CAPACITY,
             "encode: {} source tokens need as many cross-attention rows; {} of {} are free (n_ctx)", total,
             cross_free_.size(), n_ctx_);
    }
    // Rows for every source, then passes of whole sources of at most n_batch tokens (a longer source: a pass of its
    // own, at most n_ctx tokens, which the memory plan's encoder activations allow for).
    for (int32_t s : order) {
        auto src = std::make_shared<std::vector<int32_t>>();
        for (size_t i = 0; i < rows[static_cast<size_t>(s)].size(); ++i) {
            src->push_back(cross_free_.back());
            cross_free_.pop_back();
        }
        seq_source_[static_cast<size_t>(s)] = std::move(src);
    }
    try {
        std::vector<int32_t> pass;
        size_t in_pass = 0;
        for (size_t k = 0; k <= order.size(); ++k) {
            const size_t len = k < order.size() ? rows[static_cast<size_t>(order[k])].size() : 0;
            if (!pass.empty() && (k == order.size() || in_pass + len > n_batch_)) {
                encode_pass(batch, pass, rows);
                pass.clear();
                in_pass = 0;
            }
            if (k < order.size()) {
                pass.push_back(order[k]);
                in_pass += len;
            }
        }
    } catch (...) {
        for (int32_t s : order) release_source(s);  // no half-written sources
        throw;
    }
}

void Session::encode_pass(const basalt_batch& batch, const std::vector<int32_t>& seqs,
                          const std::vector<std::vector<size_t>>& rows) {
    const ModelHparams& hp = model_.hparams;
    // Sources packed one after another; each attends over its own rows (batch row, position), bidirectionally.
    std::vector<int32_t> tokens, positions, query, cross_slots;
    size_t longest = 0;
    for (int32_t s : seqs) longest = std::max(longest, rows[static_cast<size_t>(s)].size());
    std::vector<int32_t> lists(2 * longest * seqs.size(), -1);
    for (size_t g = 0; g < seqs.size(); ++g) {
        const auto& r = rows[static_cast<size_t>(seqs[g])];
        const auto& src = *seq_source_[static_cast<size_t>(seqs[g])];
        for (size_t i = 0; i < r.size(); ++i) {
            lists[2 * (longest * g + i)] = static_cast<int32_t>(tokens.size());
            lists[2 * (longest * g + i) + 1] = static_cast<int32_t>(i);
            tokens.push_back(batch.tokens[r[i]]);
            positions.push_back(static_cast<int32_t>(i));
            query.push_back(static_cast<int32_t>(g));
            query.push_back(static_cast<int32_t>(i));
            cross_slots.push_back(src[i]);
        }
    }
    const std::vector<int32_t> rel = t5_bucket_table(hp, true);
    const auto T = static_cast<int64_t>(tokens.size());
    IoLayout io{};
    io.tokens = 0;
    io.pos = align64(io.tokens + 4 * tokens.size());
    io.query = align64(io.pos + 4 * positions.size());
    io.lists = align64(io.query + 4 * query.size());
    io.slots = align64(io.lists + 4 * lists.size());
    io.rel = align64(io.slots + 4 * cross_slots.size());
    const uint64_t end = io.rel + 4 * rel.size();
    ensure_io(end);
    std::vector<uint8_t> staged(end, 0);
    put(staged, io.tokens, tokens);
    put(staged, io.pos, positions);
    put(staged, io.query, query);
    put(staged, io.lists, lists);
    put(staged, io.slots, cross_slots);
    put(staged, io.rel, rel);
    check_status(backend_.buffer_write(backend_instance_, io_buffer_, 0, staged.data(), staged.size()),
                 "buffer_write(encoder inputs)");

    enc_graph_.clear();
    ForwardContext c{enc_graph_, hp, *weights_};
    c.encoder_pass = true;
    c.n_tokens = T;
    c.n_outputs = 0;
    c.tokens = enc_graph_.tensor(BASALT_DTYPE_I32, {T}, "inp_enc_tokens", io_buffer_, io.tokens);
    c.positions = enc_graph_.tensor(BASALT_DTYPE_I32, {T}, "inp_enc_positions", io_buffer_, io.pos);
    c.attn_query = enc_graph_.tensor(BASALT_DTYPE_I32, {2, T}, "inp_enc_query", io_buffer_, io.query);
    c.attn_lists =
        enc_graph_.tensor(BASALT_DTYPE_I32, {static_cast<int64_t>(2 * longest), static_cast<int64_t>(seqs.size())},
                          "inp_enc_lists", io_buffer_, io.lists);
    c.cross_slots = enc_graph_.tensor(BASALT_DTYPE_I32, {T}, "inp_cross_slots", io_buffer_, io.slots);
    c.rel_index = enc_graph_.tensor(BASALT_DTYPE_I32, {static_cast<int64_t>(rel.size())}, "inp_enc_rel_index",
                                    io_buffer_, io.rel);
    for (uint32_t il = 0; il < hp.n_layer_dec; ++il) {
        c.cross_k.push_back(enc_graph_.tensor(layout_.k_type, {hp.n_embd_k_gqa(), static_cast<int64_t>(n_ctx_)},
                                              "cross_k." + std::to_string(il), cross_k_buffers_[il], 0));
        c.cross_v.push_back(enc_graph_.tensor(layout_.v_type, {hp.n_embd_v_gqa(), static_cast<int64_t>(n_ctx_)},
                                              "cross_v." + std::to_string(il), cross_v_buffers_[il], 0));
    }
    build_forward(c);
    clear_plugin_error();
    const basalt_status st = backend_.graph_compute(backend_instance_, &enc_graph_.graph());
    if (st != BASALT_OK) {
        fail(st, "backend '{}': graph_compute (encoder): {}", config_.backend,
             plugin_error_message().empty() ? status_name(st) : plugin_error_message());
    }
}

}  // namespace basalt
