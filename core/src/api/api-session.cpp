// C API: sessions (create, ragged decode, logits, sequence fork/drop).
#include <basalt/basalt.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "api/out-struct.hpp"
#include "exec/session.hpp"
#include "host/runtime.hpp"
#include "model/model.hpp"
#include "support/error.hpp"
#include "support/params.hpp"

using basalt::fail;
using basalt::guard;
using basalt::to_pairs;

struct basalt_session {
    std::unique_ptr<basalt::Session> s;
};

namespace {

basalt::Session& get(basalt_session* s) {
    if (s == nullptr || !s->s) fail(BASALT_ERR_INVALID_ARGUMENT, "session is NULL");
    return *s->s;
}
const basalt::Session& get(const basalt_session* s) {
    if (s == nullptr || !s->s) fail(BASALT_ERR_INVALID_ARGUMENT, "session is NULL");
    return *s->s;
}

}  // namespace

extern "C" {

basalt_status basalt_session_create(basalt_runtime* runtime, const basalt_model* model,
                                    const basalt_session_params* params, basalt_session** out) {
    return guard([&] {
        if (runtime == nullptr || model == nullptr || out == nullptr) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_session_create: runtime, model and out are required");
        }
        basalt::SessionConfig cfg;
        if (params != nullptr) {
            if (params->struct_size < offsetof(basalt_session_params, kv_params) + sizeof(params->kv_params)) {
                fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_session_params.struct_size {} is too small",
                     params->struct_size);
            }
            cfg.n_ctx = params->n_ctx;
            if (params->n_batch != 0) cfg.n_batch = params->n_batch;
            if (params->n_seq_max != 0) cfg.n_seq_max = params->n_seq_max;
            cfg.n_threads = params->n_threads;
            if (params->backend != nullptr) cfg.backend = params->backend;
            if (params->kv_cache != nullptr) cfg.kv_cache = params->kv_cache;
            cfg.backend_params = to_pairs(params->backend_params, "backend");
            cfg.kv_params = to_pairs(params->kv_params, "KV cache");
            if (BASALT_HAS_FIELD(params, basalt_session_params, moe_router) && params->moe_router != nullptr)
                cfg.moe_router = params->moe_router;
            if (BASALT_HAS_FIELD(params, basalt_session_params, state_checkpoint_bytes))
                cfg.state_checkpoint_bytes = params->state_checkpoint_bytes;
        }
        auto s = std::make_unique<basalt_session>();
        s->s = std::make_unique<basalt::Session>(runtime->plugins, *model, cfg);
        *out = s.release();
    });
}

void basalt_session_free(basalt_session* session) {
    delete session;
}

basalt_status basalt_session_decode(basalt_session* session, const basalt_batch* batch) {
    return guard([&] {
        if (batch == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_session_decode: batch is NULL");
        get(session).decode(*batch);
    });
}

basalt_status basalt_session_encode(basalt_session* session, const basalt_batch* batch) {
    return guard([&] {
        if (batch == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_session_encode: batch is NULL");
        get(session).encode(*batch);
    });
}

basalt_status basalt_session_embed(basalt_session* session, const basalt_batch* batch, float* out, size_t capacity) {
    return guard([&] {
        if (batch == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_session_embed: batch is NULL");
        basalt::Session& s = get(session);
        const size_t need = batch->n_tokens * s.n_embd();
        if (out == nullptr || capacity < need) {
            fail(BASALT_ERR_CAPACITY, "basalt_session_embed: {} tokens x {} need {} floats, the buffer has {}",
                 batch->n_tokens, s.n_embd(), need, out == nullptr ? 0 : capacity);
        }
        std::vector<float> rows;
        s.embed(*batch, rows);
        std::copy(rows.begin(), rows.end(), out);
    });
}

size_t basalt_session_n_outputs(const basalt_session* session) {
    return session == nullptr || !session->s ? 0 : session->s->n_outputs();
}

basalt_status basalt_session_logits(const basalt_session* session, size_t row, const float** out) {
    return guard([&] {
        if (out == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_session_logits: out is NULL");
        *out = get(session).logits(row);
    });
}

size_t basalt_session_n_vocab(const basalt_session* session) {
    return session == nullptr || !session->s ? 0 : session->s->n_vocab();
}

uint32_t basalt_session_n_ctx(const basalt_session* session) {
    return session == nullptr || !session->s ? 0 : session->s->n_ctx();
}

basalt_status basalt_session_seq_length(const basalt_session* session, int32_t seq_id, uint32_t* out) {
    return guard([&] {
        if (out == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_session_seq_length: out is NULL");
        *out = get(session).seq_length(seq_id);
    });
}

basalt_status basalt_session_seq_drop(basalt_session* session, int32_t seq_id) {
    return guard([&] { get(session).seq_drop(seq_id); });
}

basalt_status basalt_session_seq_fork(basalt_session* session, int32_t src_seq_id, int32_t dst_seq_id) {
    return guard([&] { get(session).seq_fork(src_seq_id, dst_seq_id); });
}

basalt_status basalt_session_memory(const basalt_session* session, basalt_memory_plan* out) {
    return guard([&] {
        if (out == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_session_memory: out is NULL");
        if (out->struct_size < offsetof(basalt_memory_plan, total_bytes) + sizeof(out->total_bytes)) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_memory_plan.struct_size {} is too small", out->struct_size);
        }
        basalt::api::write_sized(out, basalt::api::to_c(get(session).allocated()));
    });
}

basalt_status basalt_session_set_moe_stats(basalt_session* session, int32_t enable) {
    return guard([&] { get(session).set_moe_stats(enable != 0); });
}

basalt_status basalt_session_moe_stats(const basalt_session* session, uint32_t layer, basalt_moe_stats* out,
                                       uint64_t* per_expert, size_t capacity) {
    return guard([&] {
        const basalt::Session& s = get(session);
        if (out == nullptr || out->struct_size < offsetof(basalt_moe_stats, rerouted) + sizeof(out->rerouted)) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_session_moe_stats: out is NULL or its struct_size too small");
        }
        if (capacity > 0 && per_expert == nullptr)
            fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_session_moe_stats: per_expert is NULL");
        if (!s.moe_stats_on())
            fail(BASALT_ERR_INVALID_ARGUMENT, "MoE statistics are off (basalt_session_set_moe_stats turns them on)");
        if (layer >= s.moe_stats().size()) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "MoE statistics: layer {} is not in 0..{}", layer,
                 s.moe_stats().size() - 1);
        }
        basalt::api::write_moe_stats(s.moe_stats()[layer], out, per_expert, capacity);
    });
}

basalt_status basalt_session_seq_truncate(basalt_session* session, int32_t seq_id, uint32_t n_keep) {
    return guard([&] { get(session).seq_truncate(seq_id, n_keep); });
}

basalt_status basalt_session_prefix_attach(basalt_session* session, int32_t seq_id, const int32_t* tokens,
                                           size_t n_tokens, size_t* out_n_matched) {
    return guard([&] {
        if (out_n_matched == nullptr)
            fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_session_prefix_attach: out_n_matched is NULL");
        *out_n_matched = get(session).prefix_attach(seq_id, tokens, n_tokens);
    });
}

basalt_status basalt_session_seq_set_salt(basalt_session* session, int32_t seq_id, uint64_t salt) {
    return guard([&] { get(session).seq_set_salt(seq_id, salt); });
}

basalt_status basalt_session_seq_set_steering(basalt_session* session, int32_t seq_id, const float* vectors,
                                              const uint8_t* layers, uint32_t n_layer, uint32_t n_embd) {
    return guard([&] {
        basalt::Session& s = get(session);
        if (vectors == nullptr) {
            s.seq_set_steer_vectors(seq_id, {}, {});
            return;
        }
        if (layers == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "layers is NULL");
        const size_t n = static_cast<size_t>(n_layer) * n_embd;
        s.seq_set_steer_vectors(seq_id, std::vector<float>(vectors, vectors + n),
                                std::vector<uint8_t>(layers, layers + n_layer));
    });
}

basalt_status basalt_session_set_observe(basalt_session* session, const uint8_t* layers, uint32_t n_layer) {
    return guard([&] {
        basalt::Session& s = get(session);
        s.set_observe(layers == nullptr ? std::vector<uint8_t>{} : std::vector<uint8_t>(layers, layers + n_layer));
    });
}

basalt_status basalt_session_observed(const basalt_session* session, uint32_t layer, const float** out,
                                      size_t* out_rows) {
    return guard([&] {
        if (out == nullptr || out_rows == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "observed: out is NULL");
        const basalt_session* sess = session;
        if (sess == nullptr || !sess->s) fail(BASALT_ERR_INVALID_ARGUMENT, "session is NULL");
        const std::vector<float>& rows = sess->s->observed(layer);
        *out = rows.data();
        *out_rows = rows.size() / sess->s->n_embd();
    });
}

}  // extern "C"
