// C API: the engine (requests, continuous batching, decoders). The engine itself is core/src/engine/.
#include <basalt/basalt.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "api/out-struct.hpp"
#include "engine/engine.hpp"
#include "exec/sampler-chain.hpp"
#include "host/runtime.hpp"
#include "model/model.hpp"
#include "support/error.hpp"
#include "support/log.hpp"
#include "support/params.hpp"

using basalt::fail;
using basalt::guard;
using basalt::to_pairs;
using basalt::engine::Clock;
using basalt::engine::Engine;
using basalt::engine::Request;

struct basalt_engine {
    std::unique_ptr<Engine> e;
};

struct basalt_request {
    std::shared_ptr<Request> r;
    Engine* engine = nullptr;  // for notify on cancel; valid while the engine lives
};

namespace {

// "NAME[:key=value,...]" (the sampler-chain entry syntax) as a name and its parameters.
basalt::SamplerSpec decoder_spec(const char* text) {
    return basalt::parse_component_spec(text, "decoder spec", "decoders");
}

Engine& get(basalt_engine* e) {
    if (e == nullptr || !e->e) fail(BASALT_ERR_INVALID_ARGUMENT, "engine is NULL");
    return *e->e;
}

// Refuses a call that would re-enter engine e from one of its own request callbacks on this thread (the step is
// this thread: running it again nests a step, waiting for it never ends, destroying it frees what the step uses).
void refuse_in_callback(const Engine& e, const char* call) {
    if (Engine::in_callback(&e)) {
        fail(BASALT_ERR_INVALID_ARGUMENT,
             "{} was called from a request callback of the same engine; a callback may submit, read, cancel and free "
             "requests, but must not step, run or destroy the engine that is calling it",
             call);
    }
}

// The request flags this library knows (BASALT_REQUEST_*).
constexpr uint32_t known_request_flags = BASALT_REQUEST_NO_SPECIAL | BASALT_REQUEST_PARSE_SPECIAL |
                                         BASALT_REQUEST_IGNORE_EOG | BASALT_REQUEST_LOGPROBS | BASALT_REQUEST_EMBED;

const Request& get(const basalt_request* r) {
    if (r == nullptr || !r->r) fail(BASALT_ERR_INVALID_ARGUMENT, "request is NULL");
    return *r->r;
}

// BASALT_REQUEST_EMBED and its fields (pooling, normalize, dimensions) into the spec.
void read_embed_fields(const basalt_request_params& p, basalt::engine::RequestSpec& spec) {
    spec.embed = (p.flags & BASALT_REQUEST_EMBED) != 0;
    if (p.struct_size < offsetof(basalt_request_params, dimensions) + sizeof(p.dimensions)) return;
    if (!spec.embed && (p.pooling != 0 || p.normalize != 0 || p.dimensions != 0)) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "pooling, normalize and dimensions need the flag BASALT_REQUEST_EMBED");
    }
    if (p.pooling < BASALT_POOLING_MODEL || p.pooling > BASALT_POOLING_RANK) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "pooling {} is not a BASALT_POOLING_* value (0..5)", p.pooling);
    }
    if (p.normalize != BASALT_NORMALIZE_L2 && p.normalize != BASALT_NORMALIZE_NONE) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "normalize {} is not a BASALT_NORMALIZE_* value (0, 1)", p.normalize);
    }
    spec.pooling = p.pooling - 1;  // BASALT_POOLING_NONE.. map onto Pooling::NONE..; MODEL onto -1
    spec.normalize = p.normalize == BASALT_NORMALIZE_L2;
    spec.dimensions = p.dimensions;
}

std::vector<int32_t> prompt_tokens(const basalt_model& model, const basalt_request_params& p) {
    if (p.tokens != nullptr) return {p.tokens, p.tokens + p.n_tokens};
    if (p.prompt == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "the request has neither a prompt nor tokens");
    const size_t len = p.prompt_len == SIZE_MAX ? std::strlen(p.prompt) : p.prompt_len;
    return model.tok().tokenize(std::string_view(p.prompt, len), (p.flags & BASALT_REQUEST_NO_SPECIAL) == 0,
                                (p.flags & BASALT_REQUEST_PARSE_SPECIAL) != 0);
}

}  // namespace

extern "C" {

basalt_status basalt_engine_create(basalt_runtime* runtime, const basalt_model* model,
                                   const basalt_engine_params* params, basalt_engine** out) {
    return guard([&] {
        if (runtime == nullptr || model == nullptr || out == nullptr) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_engine_create: runtime, model and out are required");
        }
        basalt::engine::EngineConfig cfg;
        const basalt_model* second = nullptr;
        if (params != nullptr) {
            if (!BASALT_HAS_FIELD(params, basalt_engine_params, second_model)) {
                fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_engine_params.struct_size {} is too small",
                     params->struct_size);
            }
            cfg.own_thread = (params->flags & BASALT_ENGINE_OWN_THREAD) != 0;
            cfg.prefix_cache = (params->flags & BASALT_ENGINE_NO_PREFIX_CACHE) == 0;
            cfg.n_ctx = params->n_ctx;
            if (params->n_parallel != 0) cfg.n_parallel = params->n_parallel;
            cfg.n_seq_max = params->n_seq_max;
            cfg.n_kv_slots = params->n_kv_slots;
            if (params->max_batch_tokens != 0) cfg.max_batch_tokens = params->max_batch_tokens;
            cfg.prefill_chunk = params->prefill_chunk;
            cfg.session.n_threads = params->n_threads;
            if (params->backend != nullptr) cfg.session.backend = params->backend;
            if (params->kv_cache != nullptr) cfg.session.kv_cache = params->kv_cache;
            cfg.session.backend_params = to_pairs(params->backend_params, "backend");
            cfg.session.kv_params = to_pairs(params->kv_params, "KV cache");
            second = params->second_model;
            if (BASALT_HAS_FIELD(params, basalt_engine_params, moe_router) && params->moe_router != nullptr)
                cfg.session.moe_router = params->moe_router;
            cfg.moe_stats = (params->flags & BASALT_ENGINE_MOE_STATS) != 0;
            cfg.reserve_admission = (params->flags & BASALT_ENGINE_ADMIT_RESERVE) != 0;
            if (BASALT_HAS_FIELD(params, basalt_engine_params, max_step_factor)) {
                if (!std::isfinite(params->max_step_ms)) {
                    fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_engine_params.max_step_ms {} is not a finite number",
                         params->max_step_ms);
                }
                if (!std::isfinite(params->max_step_factor) ||
                    (params->max_step_factor != 0 && params->max_step_factor < 1)) {
                    fail(BASALT_ERR_INVALID_ARGUMENT,
                         "basalt_engine_params.max_step_factor {} is neither 0 (the default, 2) nor a number of at "
                         "least 1",
                         params->max_step_factor);
                }
                cfg.max_step_ms = params->max_step_ms;
                cfg.max_step_factor = params->max_step_factor;
            }
            if (BASALT_HAS_FIELD(params, basalt_engine_params, prefix_state_bytes))
                cfg.prefix_state_bytes = params->prefix_state_bytes;
        }
        auto e = std::make_unique<basalt_engine>();
        e->e = std::make_unique<Engine>(*runtime, *model, second, cfg);
        *out = e.release();
    });
}

void basalt_engine_destroy(basalt_engine* engine) {
    // From a callback of this engine the step is still running on this thread (with an own thread, it is that
    // thread, which cannot join itself): refuse, leave the engine as it is and say so; the caller destroys it later.
    if (engine != nullptr && engine->e && Engine::in_callback(engine->e.get())) {
        constexpr const char* message =
            "basalt_engine_destroy was called from a request callback of the same engine: refused, the engine is left "
            "running; destroy it after the callback has returned";
        try {
            basalt::set_last_error(message);
        } catch (...) {  // the message's copy failed: the log line below still says it
        }
        basalt::log::logf(BASALT_LOG_ERROR, "{}", message);
        return;
    }
    delete engine;
}

basalt_status basalt_decoder_requirements(basalt_runtime* runtime, const char* decoder, basalt_decoder_needs* out) {
    return guard([&] {
        if (runtime == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_decoder_requirements: runtime is NULL");
        if (out == nullptr || !BASALT_HAS_FIELD(out, basalt_decoder_needs, n_outputs)) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_decoder_requirements: out is NULL or its struct_size too small");
        }
        const basalt::SamplerSpec d = decoder_spec(decoder != nullptr && decoder[0] != '\0' ? decoder : "sample");
        basalt_decoder_iface table{};
        void* instance = nullptr;
        const basalt_decoder_info info = basalt::engine::create_decoder(*runtime, d.name, d.params, table, instance);
        table.destroy(instance);
        out->n_seq = info.n_seq;
        out->n_models = info.n_models;
        out->n_outputs = info.n_outputs;
        if (BASALT_HAS_FIELD(out, basalt_decoder_needs, n_snapshot_seq)) {
            out->n_snapshot_seq = BASALT_HAS_FIELD(&info, basalt_decoder_info, n_snapshot_seq) &&
                                          (info.flags & BASALT_DECODER_SNAPSHOTS_RECURRENT) != 0
                                      ? info.n_snapshot_seq
                                      : 0;
        }
    });
}

basalt_status basalt_engine_submit(basalt_engine* engine, const basalt_request_params* params, basalt_request** out) {
    return guard([&] {
        Engine& e = get(engine);
        if (params == nullptr || out == nullptr) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_engine_submit: params and out are required");
        }
        if (!BASALT_HAS_FIELD(params, basalt_request_params, user_data)) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_request_params.struct_size {} is too small", params->struct_size);
        }
        if ((params->flags & ~known_request_flags) != 0) {
            fail(BASALT_ERR_INVALID_ARGUMENT,
                 "basalt_request_params.flags {:#x} has unknown bits {:#x} (known: BASALT_REQUEST_NO_SPECIAL, "
                 "PARSE_SPECIAL, IGNORE_EOG, LOGPROBS, EMBED = {:#x})",
                 params->flags, params->flags & ~known_request_flags, known_request_flags);
        }
        basalt::engine::RequestSpec spec;
        const bool has_source = BASALT_HAS_FIELD(params, basalt_request_params, n_source_tokens) &&
                                (params->source != nullptr || params->source_tokens != nullptr);
        if (has_source) {
            if (params->source_tokens != nullptr) {
                if (params->n_source_tokens == 0)
                    fail(BASALT_ERR_INVALID_ARGUMENT,
                         "source_tokens is empty: an encoder-decoder request needs at least one source token");
                spec.source.assign(params->source_tokens, params->source_tokens + params->n_source_tokens);
            } else {
                spec.source = e.model().tok().tokenize(params->source, (params->flags & BASALT_REQUEST_NO_SPECIAL) == 0,
                                                       (params->flags & BASALT_REQUEST_PARSE_SPECIAL) != 0);
            }
            if (!e.model().hparams.encoder_decoder) {
                fail(BASALT_ERR_INVALID_ARGUMENT,
                     "a source (encoder input) was given, but '{}' is a decoder-only model", e.model().hparams.arch);
            }
            // The decoder's prefix: tokens as given, or the start token and the text without special tokens.
            if (params->tokens != nullptr) {
                spec.prompt.assign(params->tokens, params->tokens + params->n_tokens);
            } else {
                spec.prompt.push_back(e.model().hparams.decoder_start_token);
                if (params->prompt != nullptr) {
                    const size_t len =
                        params->prompt_len == SIZE_MAX ? std::strlen(params->prompt) : params->prompt_len;
                    const auto more = e.model().tok().tokenize(std::string_view(params->prompt, len), false,
                                                               (params->flags & BASALT_REQUEST_PARSE_SPECIAL) != 0);
                    spec.prompt.insert(spec.prompt.end(), more.begin(), more.end());
                }
            }
        } else if (e.model().hparams.encoder_decoder) {
            spec.source = prompt_tokens(e.model(), *params);  // the prompt is the source; the decoder starts fresh
        } else {
            spec.prompt = prompt_tokens(e.model(), *params);
        }
        if (params->samplers != nullptr) spec.samplers = params->samplers;
        if (params->decoder != nullptr && params->decoder[0] != '\0') {
            basalt::SamplerSpec d = decoder_spec(params->decoder);
            spec.decoder = std::move(d.name);
            spec.decoder_params = std::move(d.params);
        }
        if (params->max_tokens < -1) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "max_tokens {} is out of range (-1: until the context is full)",
                 params->max_tokens);
        }
        spec.max_tokens = params->max_tokens;
        spec.seed = params->seed;
        if (params->n_stop_tokens > 0 && params->stop_tokens == nullptr) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "stop_tokens is NULL for {} entries", params->n_stop_tokens);
        }
        if (params->n_stop_tokens > 0) {
            spec.stop_tokens.assign(params->stop_tokens, params->stop_tokens + params->n_stop_tokens);
        }
        for (size_t i = 0; i < params->n_stop; ++i) {
            if (params->stop == nullptr || params->stop[i] == nullptr) {
                fail(BASALT_ERR_INVALID_ARGUMENT, "stop string #{} is NULL", i);
            }
            spec.stop.emplace_back(params->stop[i]);
        }
        spec.ignore_eog = (params->flags & BASALT_REQUEST_IGNORE_EOG) != 0;
        if (BASALT_HAS_FIELD(params, basalt_request_params, cache_salt) && params->cache_salt != nullptr &&
            params->cache_salt[0] != '\0') {
            uint64_t h = 1469598103934665603ULL;  // FNV-1a: stable across runs and builds
            for (const char* c = params->cache_salt; *c != '\0'; ++c)
                h = (h ^ static_cast<unsigned char>(*c)) * 1099511628211ULL;
            spec.cache_salt = h == 0 ? 1 : h;
        }
        if (BASALT_HAS_FIELD(params, basalt_request_params, n_steer) && params->n_steer > 0) {
            if (params->steer == nullptr)
                fail(BASALT_ERR_INVALID_ARGUMENT, "steer is NULL with n_steer = {}", params->n_steer);
            for (size_t i = 0; i < params->n_steer; ++i) {
                if (params->steer[i] == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "steer[{}] is NULL", i);
                spec.steer.emplace_back(params->steer[i]);
            }
        }
        spec.logprobs = (params->flags & BASALT_REQUEST_LOGPROBS) != 0;
        if (BASALT_HAS_FIELD(params, basalt_request_params, n_top_logprobs)) {
            if (params->n_top_logprobs != 0 && !spec.logprobs) {
                fail(BASALT_ERR_INVALID_ARGUMENT, "n_top_logprobs {} needs the flag BASALT_REQUEST_LOGPROBS",
                     params->n_top_logprobs);
            }
            spec.n_top_logprobs = params->n_top_logprobs;
        }
        read_embed_fields(*params, spec);
        if (BASALT_HAS_FIELD(params, basalt_request_params, grammar_kind)) {
            if (params->grammar_kind < BASALT_GRAMMAR_NONE || params->grammar_kind > BASALT_GRAMMAR_GBNF_SCHEMAS) {
                fail(BASALT_ERR_INVALID_ARGUMENT, "grammar_kind {} is not a BASALT_GRAMMAR_* value",
                     params->grammar_kind);
            }
            if (params->grammar_kind != BASALT_GRAMMAR_NONE && params->grammar_kind != BASALT_GRAMMAR_JSON &&
                params->grammar == nullptr) {
                fail(BASALT_ERR_INVALID_ARGUMENT, "grammar_kind {} needs a grammar text", params->grammar_kind);
            }
            spec.grammar_kind = params->grammar_kind;
            if (params->grammar != nullptr) spec.grammar = params->grammar;
        }
        spec.callback = params->callback;
        spec.user_data = params->user_data;
        auto h = std::make_unique<basalt_request>();
        h->engine = &e;
        h->r = e.submit(std::move(spec), h.get());  // the handle is known before the loop can call back
        *out = h.release();
    });
}

basalt_status basalt_engine_step(basalt_engine* engine, size_t* out_active) {
    return guard([&] {
        Engine& e = get(engine);
        refuse_in_callback(e, "basalt_engine_step");
        if (e.own_thread()) fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_engine_step: the engine runs its own thread");
        const size_t n = e.step();
        if (out_active != nullptr) *out_active = n;
    });
}

basalt_status basalt_engine_run(basalt_engine* engine) {
    return guard([&] {
        Engine& e = get(engine);
        refuse_in_callback(e, "basalt_engine_run");
        e.run();
    });
}

basalt_status basalt_engine_stats_get(const basalt_engine* engine, basalt_engine_stats* out) {
    return guard([&] {
        if (engine == nullptr || !engine->e || out == nullptr) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_engine_stats_get: engine and out are required");
        }
        const basalt::engine::EngineStats s = engine->e->stats();
        basalt_engine_stats v{};
        v.struct_size = sizeof(v);
        v.steps = s.steps;
        v.queued = s.queued;
        v.running = s.running;
        v.finished = s.finished;
        v.prompt_tokens = s.prompt_tokens;
        v.generated_tokens = s.generated_tokens;
        v.batch_tokens_max = s.batch_tokens_max;
        v.kv_slots = s.kv_slots;
        v.kv_slots_free = s.kv_slots_free;
        v.cached_tokens = s.cached_tokens;
        v.preemptions = s.preemptions;
        v.state_checkpoints = s.state_checkpoints;
        v.state_checkpoint_bytes = s.state_checkpoint_bytes;
        basalt::api::write_sized(out, v);
    });
}

basalt_status basalt_engine_moe_stats(const basalt_engine* engine, uint32_t layer, basalt_moe_stats* out,
                                      uint64_t* per_expert, size_t capacity) {
    return guard([&] {
        if (engine == nullptr || !engine->e)
            fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_engine_moe_stats: engine is NULL");
        if (out == nullptr || out->struct_size < offsetof(basalt_moe_stats, rerouted) + sizeof(out->rerouted)) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_engine_moe_stats: out is NULL or its struct_size too small");
        }
        if (capacity > 0 && per_expert == nullptr)
            fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_engine_moe_stats: per_expert is NULL");
        const std::vector<basalt::MoeLayerStats> all = engine->e->moe_stats();
        if (layer >= all.size()) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "MoE statistics: layer {} is not in 0..{}", layer,
                 all.empty() ? 0 : all.size() - 1);
        }
        basalt::api::write_moe_stats(all[layer], out, per_expert, capacity);
    });
}

basalt_status basalt_engine_add_control_vector(basalt_engine* engine, const char* name, const char* spec) {
    return guard([&] {
        if (name == nullptr || spec == nullptr)
            fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_engine_add_control_vector: name and spec are required");
        get(engine).add_control_vector(name, spec);
    });
}

basalt_status basalt_request_cancel(basalt_request* request) {
    return guard([&] {
        if (request == nullptr || !request->r) fail(BASALT_ERR_INVALID_ARGUMENT, "request is NULL");
        request->r->cancel.store(true);
        std::lock_guard lock(request->r->mutex);
        if (request->r->finish == BASALT_FINISH_NONE && request->engine != nullptr) request->engine->notify();
    });
}

void basalt_request_free(basalt_request* request) {
    if (request == nullptr) return;
    if (request->r) {
        Request& r = *request->r;
        r.cancel.store(true);
        std::unique_lock lock(r.mutex);
        r.handle = nullptr;  // no later callback sees the freed handle
        r.spec.callback = nullptr;
        // One may be running now on the loop thread: wait for it to return (unless this is that call).
        if (r.callback_thread != std::this_thread::get_id()) r.changed.wait(lock, [&] { return !r.in_callback; });
        if (request->engine != nullptr && r.finish == BASALT_FINISH_NONE) request->engine->notify();
    }
    delete request;
}

int32_t basalt_request_finish_reason(const basalt_request* request) {
    if (request == nullptr || !request->r) return BASALT_FINISH_NONE;
    std::lock_guard lock(request->r->mutex);
    return request->r->finish;
}

const char* basalt_finish_reason_name(int32_t finish_reason) {
    switch (finish_reason) {
        case BASALT_FINISH_STOP:
            return "stop";
        case BASALT_FINISH_LENGTH:
            return "length";
        case BASALT_FINISH_CONTEXT:
            return "context";
        case BASALT_FINISH_CANCELLED:
            return "cancelled";
        case BASALT_FINISH_ERROR:
            return "error";
        default:
            return "";
    }
}

const char* basalt_request_error(const basalt_request* request) {
    if (request == nullptr || !request->r) return "";
    std::lock_guard lock(request->r->mutex);
    return request->r->error.c_str();
}

basalt_status basalt_request_read(basalt_request* request, int32_t* out_tokens, size_t capacity, size_t* out_n,
                                  char* out_text, size_t text_capacity, size_t* out_text_len) {
    return guard([&] {
        if (request == nullptr || !request->r) fail(BASALT_ERR_INVALID_ARGUMENT, "request is NULL");
        if ((capacity > 0 && out_tokens == nullptr) || (text_capacity > 0 && out_text == nullptr)) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_request_read: a NULL buffer with a non-zero capacity");
        }
        Request& r = *request->r;
        std::lock_guard lock(r.mutex);
        const size_t n = std::min(capacity, r.unread_tokens.size());
        std::copy_n(r.unread_tokens.begin(), n, out_tokens);
        r.unread_tokens.erase(r.unread_tokens.begin(), r.unread_tokens.begin() + static_cast<std::ptrdiff_t>(n));
        size_t len = std::min(text_capacity, r.unread_text.size());
        if (len < r.unread_text.size()) {
            // Never split a character: back off to a lead byte.
            while (len > 0 && (static_cast<unsigned char>(r.unread_text[len]) & 0xC0) == 0x80) --len;
        }
        if (len > 0) std::memcpy(out_text, r.unread_text.data(), len);
        r.unread_text.erase(0, len);
        if (out_n != nullptr) *out_n = n;
        if (out_text_len != nullptr) *out_text_len = len;
    });
}

basalt_status basalt_request_wait(basalt_request* request, int32_t timeout_ms) {
    return guard([&] {
        if (request == nullptr || !request->r) fail(BASALT_ERR_INVALID_ARGUMENT, "request is NULL");
        if (timeout_ms < -1) {
            fail(BASALT_ERR_INVALID_ARGUMENT,
                 "basalt_request_wait: timeout_ms {} is out of range (-1: no limit, else 0 "
                 "or more milliseconds)",
                 timeout_ms);
        }
        Request& r = *request->r;
        std::unique_lock lock(r.mutex);
        auto ready = [&] {
            return r.finish != BASALT_FINISH_NONE || !r.unread_tokens.empty() || !r.unread_text.empty();
        };
        // From a callback of the request's engine the step is this thread: nothing can arrive while it waits.
        if (timeout_ms < 0 && !ready() && Engine::in_callback(request->engine)) {
            fail(BASALT_ERR_INVALID_ARGUMENT,
                 "basalt_request_wait with no limit was called from a request callback of the request's engine: it "
                 "would wait forever (that engine's step is the calling thread); read instead, or give a timeout");
        }
        if (timeout_ms < 0) {
            r.changed.wait(lock, ready);
        } else {
            r.changed.wait_for(lock, std::chrono::milliseconds(timeout_ms), ready);
        }
    });
}

basalt_status basalt_request_stats_get(const basalt_request* request, basalt_request_stats* out) {
    return guard([&] {
        const Request& r = get(request);
        if (out == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_request_stats_get: out is NULL");
        std::lock_guard lock(r.mutex);
        auto ms = [](Clock::time_point a, Clock::time_point b) {
            return std::chrono::duration<double, std::milli>(b - a).count();
        };
        const Clock::time_point end = r.finish != BASALT_FINISH_NONE ? r.finished_at : Clock::now();
        basalt_request_stats v{};
        v.struct_size = sizeof(v);
        v.finish_reason = r.finish;
        v.prompt_tokens = r.prompt_tokens;
        v.cached_tokens = r.cached_tokens;
        v.generated_tokens = r.generated_tokens;
        v.queue_ms = r.has_admitted ? ms(r.submitted, r.admitted) : ms(r.submitted, end);
        v.ttft_ms = r.has_first ? ms(r.submitted, r.first_token) : 0;
        v.total_ms = ms(r.submitted, end);
        if (!r.itl_ms.empty()) {
            std::vector<double> s = r.itl_ms;
            std::sort(s.begin(), s.end());
            double sum = 0;
            for (double x : s) sum += x;
            v.itl_mean_ms = sum / static_cast<double>(s.size());
            v.itl_p50_ms = s[(s.size() - 1) / 2];
            v.itl_p99_ms = s[std::min(s.size() - 1, static_cast<size_t>(0.99 * static_cast<double>(s.size())))];
            v.itl_max_ms = s.back();
        }
        const double gen_ms = r.has_first ? ms(r.first_token, end) : 0;
        v.tokens_per_s =
            r.generated_tokens >= 2 && gen_ms > 0 ? 1e3 * static_cast<double>(r.generated_tokens - 1) / gen_ms : 0;
        v.source_tokens = r.spec.source.size();
        v.encode_ms = r.encode_ms;
        basalt::api::write_sized(out, v);
    });
}

basalt_status basalt_request_itl(const basalt_request* request, double* out, size_t capacity, size_t* out_n) {
    return guard([&] {
        const Request& r = get(request);
        if (capacity > 0 && out == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_request_itl: out is NULL");
        std::lock_guard lock(r.mutex);
        std::copy_n(r.itl_ms.begin(), std::min(capacity, r.itl_ms.size()), out);
        if (out_n != nullptr) *out_n = r.itl_ms.size();
    });
}

size_t basalt_request_n_hypotheses(const basalt_request* request) {
    if (request == nullptr || !request->r) return 0;
    std::lock_guard lock(request->r->mutex);
    return request->r->hypotheses.size();
}

basalt_status basalt_request_hypothesis(const basalt_request* request, size_t index, int32_t* out_tokens,
                                        size_t capacity, size_t* out_n, float* out_score) {
    return guard([&] {
        const Request& r = get(request);
        if (out_n == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_request_hypothesis: out_n is NULL");
        if (capacity > 0 && out_tokens == nullptr) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_request_hypothesis: out_tokens is NULL with capacity {}",
                 capacity);
        }
        std::lock_guard lock(r.mutex);
        if (index >= r.hypotheses.size()) {
            fail(BASALT_ERR_NOT_FOUND, "hypothesis {} does not exist (the request has {})", index, r.hypotheses.size());
        }
        const auto& h = r.hypotheses[index];
        *out_n = h.tokens.size();
        if (out_score != nullptr) *out_score = h.score;
        if (capacity < h.tokens.size()) {
            if (capacity == 0 && out_tokens == nullptr) return;  // asking for the count
            fail(BASALT_ERR_CAPACITY, "hypothesis {} has {} tokens, the buffer holds {}", index, h.tokens.size(),
                 capacity);
        }
        std::copy(h.tokens.begin(), h.tokens.end(), out_tokens);
    });
}

basalt_status basalt_request_decoder_stat(const basalt_request* request, size_t index, const char** out_name,
                                          double* out_value) {
    return guard([&] {
        const Request& r = get(request);
        if (out_name == nullptr || out_value == nullptr) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_request_decoder_stat: out_name and out_value are required");
        }
        std::lock_guard lock(r.mutex);
        if (index >= r.decoder_stats.size()) {
            fail(BASALT_ERR_NOT_FOUND, "decoder figure {} does not exist (the request has {})", index,
                 r.decoder_stats.size());
        }
        *out_name = r.decoder_stats[index].first.c_str();
        *out_value = r.decoder_stats[index].second;
    });
}

size_t basalt_request_n_logprobs(const basalt_request* request) {
    if (request == nullptr || !request->r) return 0;
    std::lock_guard lock(request->r->mutex);
    return request->r->logprobs.size();
}

basalt_status basalt_request_logprob(const basalt_request* request, size_t index, int32_t* out_token,
                                     float* out_logprob, int32_t* top_ids, float* top_logprobs, size_t capacity,
                                     size_t* out_n_top) {
    return guard([&] {
        const Request& r = get(request);
        std::lock_guard lock(r.mutex);
        if (index >= r.logprobs.size()) {
            fail(BASALT_ERR_NOT_FOUND, "log-probability {} does not exist (the request has {}{})", index,
                 r.logprobs.size(), r.spec.logprobs ? "" : "; it was submitted without BASALT_REQUEST_LOGPROBS");
        }
        const basalt::engine::TokenLogprob& lp = r.logprobs[index];
        if (out_token != nullptr) *out_token = lp.token;
        if (out_logprob != nullptr) *out_logprob = lp.logprob;
        const size_t n = std::min(capacity, lp.top.size());
        for (size_t i = 0; i < n; ++i) {
            if (top_ids != nullptr) top_ids[i] = lp.top[i].first;
            if (top_logprobs != nullptr) top_logprobs[i] = lp.top[i].second;
        }
        if (out_n_top != nullptr) *out_n_top = lp.top.size();
    });
}

basalt_status basalt_request_embedding(const basalt_request* request, float* out, size_t capacity, size_t* out_n) {
    return guard([&] {
        const Request& r = get(request);
        if (out_n == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_request_embedding: out_n is NULL");
        if (out == nullptr && capacity != 0)
            fail(BASALT_ERR_INVALID_ARGUMENT, "out is NULL with capacity {}", capacity);
        std::lock_guard lock(r.mutex);
        if (!r.spec.embed) fail(BASALT_ERR_NOT_FOUND, "the request is not an embedding request");
        if (r.finish != BASALT_FINISH_STOP) {
            fail(BASALT_ERR_NOT_FOUND, "the request has no embedding ({})",
                 r.finish == BASALT_FINISH_NONE ? std::string("it has not finished") : "it finished: " + r.error);
        }
        if (out == nullptr) {
            *out_n = r.embedding.size();
            return;
        }
        if (capacity < r.embedding.size()) {
            fail(BASALT_ERR_CAPACITY, "the embedding has {} values, the buffer {}", r.embedding.size(), capacity);
        }
        std::copy(r.embedding.begin(), r.embedding.end(), out);
        *out_n = r.embedding.size();
    });
}

}  // extern "C"
