// Embedding requests (docs/embeddings.md): checked at submit, then each step takes the queued ones in FIFO order
// under the step's token budget, embeds them in one ragged call (the session packs whole inputs into passes, no
// padding), pools and normalises each request's rows and finishes it.
#include <algorithm>
#include <utility>

#include "engine/engine.hpp"
#include "exec/pooling.hpp"
#include "support/error.hpp"

namespace basalt::engine {
namespace {

double ms_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace

std::shared_ptr<Request> Engine::submit_embed(RequestSpec spec, basalt_request* handle) {
    const ModelHparams& hp = model_.hparams;
    const Pooling pooling = spec.pooling < 0 ? model_pooling(hp) : static_cast<Pooling>(spec.pooling);
    if (const std::string why = embed_refusal(hp, pooling); !why.empty()) {
        fail(BASALT_ERR_UNSUPPORTED, "this model cannot embed: {}", why);
    }
    spec.pooling = static_cast<int32_t>(pooling);
    if (spec.dimensions > hp.n_embd) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "dimensions {} is more than the model's {} (n_embd)", spec.dimensions,
             hp.n_embd);
    }
    if (spec.prompt.empty()) fail(BASALT_ERR_INVALID_ARGUMENT, "the input is empty");
    const uint32_t limit = hp.learned_positions && hp.n_ctx_train != 0 ? std::min(n_ctx_, hp.n_ctx_train) : n_ctx_;
    if (spec.prompt.size() > limit) {
        fail(BASALT_ERR_CAPACITY, "the input has {} tokens, more than the context of {} (n_ctx)", spec.prompt.size(),
             limit);
    }
    for (size_t i = 0; i < spec.prompt.size(); ++i) {
        if (spec.prompt[i] < 0 || static_cast<size_t>(spec.prompt[i]) >= n_vocab()) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "input token {} = {} is not in the vocabulary (0..{})", i, spec.prompt[i],
                 n_vocab() - 1);
        }
    }
    auto r = std::make_shared<Request>();
    r->spec = std::move(spec);
    r->engine = this;
    r->handle = handle;
    {
        std::lock_guard lock(r->mutex);
        r->submitted = Clock::now();
        r->prompt_tokens = r->spec.prompt.size();
    }
    enqueue(r);
    return r;
}

size_t Engine::embed_step() {
    std::vector<std::shared_ptr<Request>> touched, batch;
    uint64_t tokens = 0;
    {
        std::lock_guard lock(mutex_);
        while (!queue_.empty()) {
            std::shared_ptr<Request> r = queue_.front();
            if (r->cancel.load()) {
                queue_.pop_front();
                finish(*r, BASALT_FINISH_CANCELLED);
                stats_.finished += 1;
                touched.push_back(std::move(r));
                continue;
            }
            if (!batch.empty() && tokens + r->spec.prompt.size() > config_.max_batch_tokens) break;
            tokens += r->spec.prompt.size();
            queue_.pop_front();
            batch.push_back(std::move(r));
        }
        stats_.queued = queue_.size();
        stats_.running = batch.size();
    }
    const Clock::time_point t0 = Clock::now();
    for (const auto& r : batch) {
        std::lock_guard lock(r->mutex);
        r->admitted = t0;
        r->has_admitted = true;
    }
    ForwardResult fr;
    if (!batch.empty()) {
        // One ragged call: request k's input is sequence k.
        std::vector<int32_t> toks, pos, seqs;
        bool rank = false;
        for (size_t k = 0; k < batch.size(); ++k) {
            const auto& in = batch[k]->spec.prompt;
            for (size_t i = 0; i < in.size(); ++i) {
                toks.push_back(in[i]);
                pos.push_back(static_cast<int32_t>(i));
                seqs.push_back(static_cast<int32_t>(k));
            }
            rank = rank || batch[k]->spec.pooling == static_cast<int32_t>(Pooling::RANK);
        }
        basalt_batch b{};
        b.struct_size = sizeof(b);
        b.n_tokens = toks.size();
        b.tokens = toks.data();
        b.positions = pos.data();
        b.seq_ids = seqs.data();
        std::vector<float> rows, scores;
        try {
            sessions_[0]->embed(b, rows, rank ? &scores : nullptr);
        } catch (const Error& e) {
            fr.status = e.status();
            fr.error = fmt::format("embedding pass failed: {}", e.what());
            for (const auto& r : batch) finish(*r, BASALT_FINISH_ERROR, fr.error);
        }
        const double ms = ms_between(t0, Clock::now());
        const size_t E = model_.hparams.n_embd, n_cls = model_.hparams.n_cls_out;
        size_t row = 0;
        for (size_t k = 0; k < batch.size(); ++k) {
            Request& r = *batch[k];
            const size_t n = r.spec.prompt.size();
            if (r.done == BASALT_FINISH_NONE) {
                const auto pooling = static_cast<Pooling>(r.spec.pooling);
                std::vector<float> v;
                if (pooling == Pooling::RANK) {
                    v.assign(scores.begin() + static_cast<std::ptrdiff_t>(k * n_cls),
                             scores.begin() + static_cast<std::ptrdiff_t>((k + 1) * n_cls));
                } else {
                    v = finish_vectors(pool(rows.data() + row * E, n, E, pooling), E, r.spec.dimensions,
                                       r.spec.normalize);
                }
                {
                    std::lock_guard lock(r.mutex);
                    r.embedding = std::move(v);
                    r.encode_ms = ms * static_cast<double>(n) / static_cast<double>(toks.size());
                }
                finish(r, BASALT_FINISH_STOP);
            }
            row += n;
        }
        fr.step_tokens = toks.size();
    }
    {
        std::lock_guard lock(mutex_);
        if (fr.step_tokens > 0) stats_.steps += 1;
        stats_.prompt_tokens += fr.step_tokens;
        stats_.batch_tokens_max = std::max(stats_.batch_tokens_max, fr.step_tokens);
        stats_.finished += batch.size();
        stats_.running = 0;
    }
    touched.insert(touched.end(), batch.begin(), batch.end());
    deliver(touched);
    size_t active = 0;
    {
        std::lock_guard lock(mutex_);
        active = queue_.size();
        idle_now_ = active == 0;
    }
    if (active == 0) idle_.notify_all();
    if (fr.status != BASALT_OK) fail(fr.status, "{} (its requests finished with that error)", fr.error);
    return active;
}

}  // namespace basalt::engine
