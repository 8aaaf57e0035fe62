#include "engine/decoder-host.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/engine.hpp"
#include "host/host-services.hpp"
#include "support/error.hpp"

namespace basalt::engine {
namespace {

Request& req(void* ctx) {
    return *static_cast<Request*>(ctx);
}

// Runs fn; a failure is recorded as the plugin-visible message (the decoder passes the status back up).
template <typename Fn>
basalt_status call(Fn&& fn) noexcept {
    const basalt_status st = guard(fn);
    if (st != BASALT_OK && st != BASALT_ERR_CANCELLED) set_plugin_error(st, last_error());
    return st;
}

// The chosen token's log-probability under the raw row (log-softmax in double, before any sampler) and the
// n_top most likely tokens of the row, for Engine::emit to attach to the token it emits next.
void record_logprob(Request& r, const float* logits, int32_t token) {
    const size_t nv = r.engine->n_vocab();
    if (token < 0 || static_cast<size_t>(token) >= nv) return;  // emit refuses it
    // NaN counts as -inf (probability 0), so the order below stays a strict weak order.
    auto value = [&](size_t v) { return std::isnan(logits[v]) ? -double{INFINITY} : double{logits[v]}; };
    double max_logit = -INFINITY;
    for (size_t v = 0; v < nv; ++v) max_logit = std::max(max_logit, value(v));
    double sum = 0;
    for (size_t v = 0; v < nv; ++v) sum += std::exp(value(v) - max_logit);
    const double log_z = max_logit + std::log(sum);
    TokenLogprob& lp = r.pending_logprob;
    lp.token = token;
    lp.logprob = static_cast<float>(value(static_cast<size_t>(token)) - log_z);
    lp.top.clear();
    const auto n_top = static_cast<size_t>(std::min<int64_t>(r.spec.n_top_logprobs, static_cast<int64_t>(nv)));
    if (n_top > 0) {
        // A min-heap of the n_top best (ties: the lower id first, as a stable sort of the row would give).
        auto better = [&](int32_t a, int32_t b) {
            const double va = value(static_cast<size_t>(a)), vb = value(static_cast<size_t>(b));
            return va > vb || (va == vb && a < b);
        };
        std::vector<int32_t> heap;
        heap.reserve(n_top + 1);
        for (size_t v = 0; v < nv; ++v) {
            const auto id = static_cast<int32_t>(v);
            if (heap.size() < n_top) {
                heap.push_back(id);
                std::push_heap(heap.begin(), heap.end(), better);
            } else if (better(id, heap.front())) {
                std::pop_heap(heap.begin(), heap.end(), better);
                heap.back() = id;
                std::push_heap(heap.begin(), heap.end(), better);
            }
        }
        std::sort(heap.begin(), heap.end(), better);
        lp.top.reserve(n_top);
        for (const int32_t id : heap)
            lp.top.emplace_back(id, static_cast<float>(value(static_cast<size_t>(id)) - log_z));
    }
    r.has_pending_logprob = true;
}

basalt_status host_sample(void* ctx, int32_t seq, const float* logits, int32_t* out_token) {
    return call([&] {
        Request& r = req(ctx);
        if (logits == nullptr || out_token == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "sample: NULL argument");
        const int32_t token = r.engine->chain(r, seq).sample(logits, r.engine->n_vocab());
        *out_token = token;
        if (r.spec.logprobs) record_logprob(r, logits, token);
    });
}

basalt_status host_distribution(void* ctx, int32_t seq, int32_t model, const float* logits, float* probs) {
    return call([&] {
        Request& r = req(ctx);
        r.engine->session(model);  // validates the model index
        if (logits == nullptr || probs == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "distribution: NULL argument");
        SamplerChain& chain = r.engine->chain(r, seq);
        const size_t nv = r.engine->n_vocab();
        std::vector<basalt_token_data> d(nv);
        for (size_t v = 0; v < nv; ++v) d[v] = {static_cast<int32_t>(v), logits[v], 0.f};
        basalt_candidates c{};
        c.struct_size = sizeof(c);
        c.seq_id = seq;
        c.data = d.data();
        c.size = d.size();
        c.selected = -1;
        chain.apply_filters(c);
        std::fill(probs, probs + nv, 0.f);
        float max_logit = -INFINITY;
        for (size_t i = 0; i < c.size; ++i) max_logit = std::max(max_logit, c.data[i].logit);
        double sum = 0;
        for (size_t i = 0; i < c.size; ++i) {
            if (std::isfinite(c.data[i].logit)) sum += std::exp(double{c.data[i].logit} - max_logit);
        }
        if (!(sum > 0)) fail(BASALT_ERR_INVALID_ARGUMENT, "distribution: no finite candidate is left");
        for (size_t i = 0; i < c.size; ++i) {
            const auto id = static_cast<size_t>(c.data[i].id);
            if (std::isfinite(c.data[i].logit) && id < nv) {
                probs[id] = static_cast<float>(std::exp(double{c.data[i].logit} - max_logit) / sum);
            }
        }
    });
}

basalt_status host_accept(void* ctx, int32_t seq, int32_t token) {
    return call([&] {
        Request& r = req(ctx);
        r.engine->chain(r, seq).accept(token);
    });
}

basalt_status host_rollback(void* ctx, int32_t seq, size_t n) {
    return call([&] {
        Request& r = req(ctx);
        r.engine->chain(r, seq).rollback(n);
    });
}

basalt_status host_seq_fork(void* ctx, int32_t model, int32_t src, int32_t dst) {
    return call([&] { req(ctx).engine->fork(req(ctx), model, src, dst); });
}

basalt_status host_seq_drop(void* ctx, int32_t model, int32_t seq) {
    return call([&] {
        Request& r = req(ctx);
        r.engine->session(model).seq_drop(r.engine->session_seq(r, model, seq));
        r.kv.tokens(model, seq).clear();
    });
}

basalt_status host_seq_truncate(void* ctx, int32_t model, int32_t seq, uint32_t n_keep) {
    return call([&] {
        Request& r = req(ctx);
        r.engine->session(model).seq_truncate(r.engine->session_seq(r, model, seq), n_keep);
        auto& held = r.kv.tokens(model, seq);
        if (held.size() > n_keep) held.resize(n_keep);
    });
}

uint32_t host_seq_length(void* ctx, int32_t model, int32_t seq) {
    try {
        Request& r = req(ctx);
        return r.engine->session(model).seq_length(r.engine->session_seq(r, model, seq));
    } catch (...) {
        return 0;
    }
}

basalt_status host_emit(void* ctx, int32_t hypothesis, const int32_t* tokens, size_t n, float score) {
    basalt_status result = BASALT_OK;
    const basalt_status st = call([&] {
        if (tokens == nullptr && n > 0) fail(BASALT_ERR_INVALID_ARGUMENT, "emit: tokens is NULL");
        result = req(ctx).engine->emit(req(ctx), hypothesis, tokens, n, score);
    });
    return st != BASALT_OK ? st : result;
}

basalt_status host_set_stat(void* ctx, const char* name, double value) {
    return call([&] {
        if (name == nullptr || name[0] == '\0') fail(BASALT_ERR_INVALID_ARGUMENT, "set_stat: the name is empty");
        req(ctx).engine->set_stat(req(ctx), name, value);
    });
}

int32_t host_is_eog(void* ctx, int32_t token) {
    return req(ctx).engine->is_eog(req(ctx), token) ? 1 : 0;
}

uint32_t host_batch_rows(void* ctx, int32_t model) {
    return req(ctx).engine->other_rows(req(ctx), model);
}

int32_t host_model_recurrent(void* ctx, int32_t model) {
    return req(ctx).engine->model_recurrent(model) ? 1 : 0;
}

basalt_status host_seq_snapshot(void* ctx, int32_t model, int32_t seq, int32_t snap) {
    return call([&] { req(ctx).engine->seq_snapshot(req(ctx), model, seq, snap); });
}

basalt_status host_seq_restore(void* ctx, int32_t model, int32_t seq, int32_t snap) {
    return call([&] { req(ctx).engine->seq_restore(req(ctx), model, seq, snap); });
}

}  // namespace

void make_decoder_host(Request& r) {
    basalt_decoder_host& h = r.host;
    h = basalt_decoder_host{};
    h.struct_size = sizeof(h);
    h.n_models = r.info.n_models;
    h.ctx = &r;
    h.n_vocab = r.engine->n_vocab();
    h.n_ctx = r.engine->seq_positions();
    h.n_seq = r.info.n_seq;
    h.sample = host_sample;
    h.distribution = host_distribution;
    h.accept = host_accept;
    h.seq_fork = host_seq_fork;
    h.seq_drop = host_seq_drop;
    h.seq_truncate = host_seq_truncate;
    h.seq_length = host_seq_length;
    h.emit = host_emit;
    h.is_end_of_generation = host_is_eog;
    h.set_stat = host_set_stat;
    h.rollback = host_rollback;
    h.batch_rows = host_batch_rows;
    h.model_recurrent = host_model_recurrent;
    h.seq_snapshot = host_seq_snapshot;
    h.seq_restore = host_seq_restore;
}

}  // namespace basalt::engine
