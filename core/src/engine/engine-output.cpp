// A request's output: the decoder's chains and forks (host services), the tokens it emits with their stop
// conditions (end of generation, stop tokens and strings, max_tokens, cancel), and delivery to the callbacks.
#include <algorithm>
#include <thread>

#include "engine/engine.hpp"
#include "model/model.hpp"
#include "support/error.hpp"

namespace basalt::engine {
namespace {

double ms_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
}

// The engines whose request callbacks the calling thread is inside, innermost first: a callback of one engine may
// drive another, whose callbacks nest. Each frame lives on the stack of deliver().
struct CallbackFrame {
    const Engine* engine;
    const CallbackFrame* outer;
};
thread_local const CallbackFrame* t_callbacks = nullptr;

// Marks the calling thread as inside a callback of engine e for its lifetime.
class InCallback {
  public:
    explicit InCallback(const Engine* e) : frame_{e, t_callbacks} { t_callbacks = &frame_; }
    ~InCallback() { t_callbacks = frame_.outer; }
    InCallback(const InCallback&) = delete;
    InCallback& operator=(const InCallback&) = delete;

  private:
    CallbackFrame frame_;
};

}  // namespace

SamplerChain& Engine::chain(Request& r, int32_t seq) const {
    if (seq < 0 || static_cast<size_t>(seq) >= r.chains.size() || r.chains[static_cast<size_t>(seq)] == nullptr) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "sequence {} of the request has no sampler chain (fork into it first)", seq);
    }
    return *r.chains[static_cast<size_t>(seq)];
}

void Engine::fork(Request& r, int32_t model, int32_t src, int32_t dst) {
    session(model).seq_fork(session_seq(r, model, src), session_seq(r, model, dst));
    std::vector<int32_t> held = r.kv.tokens(model, src);
    r.kv.tokens(model, dst) = std::move(held);
    r.kv.forked = true;
    if (model != 0) return;
    r.chains[static_cast<size_t>(dst)] = chain(r, src).clone();
}

bool Engine::model_recurrent(int32_t model) const {
    if (model == 0) return model_.hparams.recurrent();
    return model == 1 && second_ != nullptr && sessions_[1] && second_->hparams.recurrent();
}

void Engine::seq_snapshot(Request& r, int32_t model, int32_t seq, int32_t snap) {
    if (seq == snap) fail(BASALT_ERR_INVALID_ARGUMENT, "seq_snapshot: sequence {} cannot be its own snapshot", seq);
    session(model).seq_fork(session_seq(r, model, seq), session_seq(r, model, snap));
    std::vector<int32_t> held = r.kv.tokens(model, seq);  // a copy first: tokens() may grow the table
    r.kv.tokens(model, snap) = std::move(held);
    r.kv.forked = true;
}

void Engine::seq_restore(Request& r, int32_t model, int32_t seq, int32_t snap) {
    if (seq == snap) fail(BASALT_ERR_INVALID_ARGUMENT, "seq_restore: sequence {} cannot be its own snapshot", seq);
    Session& s = session(model);
    const int32_t live = session_seq(r, model, seq), held = session_seq(r, model, snap);
    if (s.seq_length(held) == 0) fail(BASALT_ERR_INVALID_ARGUMENT, "seq_restore: snapshot sequence {} is empty", snap);
    // The snapshot's session sequence becomes seq's and the live one is dropped: no state is copied.
    auto& ids = r.seq_ids[model];
    std::swap(ids[static_cast<size_t>(seq)], ids[static_cast<size_t>(snap)]);
    r.kv.tokens(model, std::max(seq, snap));  // the table grown first: the two references below stay valid
    std::swap(r.kv.tokens(model, seq), r.kv.tokens(model, snap));
    s.seq_drop(live);
    r.kv.tokens(model, snap).clear();
}

bool Engine::is_eog(const Request& r, int32_t token) const {
    if (!r.spec.ignore_eog && has_text_) {
        bool eog = false;
        try {
            eog = model_.tok().is_eog(token);
        } catch (...) {
            eog = false;  // as basalt_token_is_eog: a tokenizer failure reads as "not end of generation"
        }
        if (eog) return true;
    }
    return std::find(r.spec.stop_tokens.begin(), r.spec.stop_tokens.end(), token) != r.spec.stop_tokens.end();
}

void Engine::set_stat(Request& r, const std::string& name, double value) {
    std::lock_guard lock(r.mutex);
    for (auto& [key, v] : r.decoder_stats) {
        if (key == name) {
            v = value;
            return;
        }
    }
    r.decoder_stats.emplace_back(name, value);
}

basalt_status Engine::emit(Request& r, int32_t hypothesis, const int32_t* tokens, size_t n, float score) {
    if (hypothesis < 0 || static_cast<uint32_t>(hypothesis) >= std::max<uint32_t>(1, r.info.n_outputs)) {
        fail(BASALT_ERR_PLUGIN, "decoder '{}' emitted hypothesis {}, it declared {} output(s)", r.spec.decoder,
             hypothesis, std::max<uint32_t>(1, r.info.n_outputs));
    }
    for (size_t i = 0; i < n; ++i) {
        if (tokens[i] < 0 || static_cast<size_t>(tokens[i]) >= n_vocab()) {
            fail(BASALT_ERR_PLUGIN, "decoder '{}' emitted token {}, outside the vocabulary (0..{})", r.spec.decoder,
                 tokens[i], n_vocab() - 1);
        }
    }
    {
        std::lock_guard lock(r.mutex);
        if (r.hypotheses.size() <= static_cast<size_t>(hypothesis)) r.hypotheses.resize(hypothesis + 1);
        r.hypotheses[static_cast<size_t>(hypothesis)].score = score;
        if (hypothesis != 0) {  // n-best alternatives: stored as given, not streamed
            auto& h = r.hypotheses[static_cast<size_t>(hypothesis)].tokens;
            h.insert(h.end(), tokens, tokens + n);
            return BASALT_OK;
        }
    }
    if (r.finish_pending != BASALT_FINISH_NONE) return BASALT_ERR_CANCELLED;
    if (r.cancel.load()) {
        r.finish_pending = BASALT_FINISH_CANCELLED;
        return BASALT_ERR_CANCELLED;
    }
    for (size_t i = 0; i < n; ++i) {
        const int32_t token = tokens[i];
        if (is_eog(r, token)) {
            r.finish_pending = BASALT_FINISH_STOP;
            return BASALT_ERR_CANCELLED;
        }
        if (r.spec.logprobs && (!r.has_pending_logprob || r.pending_logprob.token != token)) {
            fail(BASALT_ERR_PLUGIN, "decoder '{}' emitted token {} without sampling it: no log-probability to record",
                 r.spec.decoder, token);
        }
        if (take_stop(r, token, has_text_ ? model_.tok().token_to_piece(token, false) : "")) {
            return BASALT_ERR_CANCELLED;
        }
    }
    return BASALT_OK;
}

// Streams one token of hypothesis 0 (its text through the stop strings) and records its timing; true when a stop
// string or max_tokens ends the request (finish_pending set).
bool Engine::take_stop(Request& r, int32_t token, const std::string& piece) {
    const std::string released = r.text.push(piece);
    const auto now = Clock::now();
    {
        std::lock_guard lock(r.mutex);
        r.unread_tokens.push_back(token);
        r.new_tokens.push_back(token);
        r.hypotheses[0].tokens.push_back(token);
        if (r.spec.logprobs) {
            r.logprobs.push_back(std::move(r.pending_logprob));
            r.has_pending_logprob = false;
        }
        r.unread_text += released;
        r.new_text += released;
        if (!r.has_first) {
            r.has_first = true;
            r.first_token = now;
        } else {
            r.itl_ms.push_back(ms_between(r.last_token, now));
        }
        r.generated_tokens += 1;
    }
    r.last_token = now;
    ++step_generated_;  // into stats_ at the end of the step, under its lock once
    if (r.text.stopped()) {
        r.finish_pending = BASALT_FINISH_STOP;
        return true;
    }
    if (r.spec.max_tokens >= 0 && r.generated_tokens >= static_cast<uint64_t>(r.spec.max_tokens)) {
        r.finish_pending = BASALT_FINISH_LENGTH;
        return true;
    }
    return false;
}

bool Engine::in_callback(const Engine* e) {
    for (const CallbackFrame* f = t_callbacks; f != nullptr; f = f->outer) {
        if (f->engine == e) return true;
    }
    return false;
}

void Engine::deliver(const std::vector<std::shared_ptr<Request>>& touched) {
    for (const auto& r : touched) {
        std::vector<int32_t> toks;
        std::string text;
        const int32_t finish = r->done;
        basalt_request_callback callback = nullptr;
        basalt_request* handle = nullptr;
        {
            std::lock_guard lock(r->mutex);
            toks.swap(r->new_tokens);
            text.swap(r->new_text);
            callback = r->spec.callback;  // cleared when the caller frees the handle
            handle = r->handle;
            if (callback != nullptr) {
                r->in_callback = true;  // basalt_request_free waits for the call to return
                r->callback_thread = std::this_thread::get_id();
            }
        }
        if (callback != nullptr && (!toks.empty() || !text.empty() || finish != BASALT_FINISH_NONE)) {
            const InCallback marker(this);  // step, run and destroy of this engine are refused from inside
            callback(handle, toks.data(), toks.size(), text.data(), text.size(), finish, r->spec.user_data);
        }
        {
            std::lock_guard lock(r->mutex);
            r->in_callback = false;
            r->finish = finish;  // published after the last callback: whoever sees it has seen all the output
        }
        r->changed.notify_all();
    }
}

}  // namespace basalt::engine
