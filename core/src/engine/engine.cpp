// The engine's setup, its step (the order of a step's phases), its loop thread and its figures. The phases live
// beside it: engine-submit.cpp (checks and queueing), engine-schedule.cpp (admission and release),
// engine-decode.cpp (the decoders' plans and consumes), engine-forward.cpp (the batches), engine-output.cpp (emitted
// tokens, stop conditions, callbacks); scheduler.cpp holds the decisions themselves.
#include "engine/engine.hpp"

#include <algorithm>
#include <utility>

#include "host/runtime.hpp"
#include "model/model.hpp"
#include "support/error.hpp"
#include "support/log.hpp"

namespace basalt::engine {

Engine::Engine(basalt_runtime& runtime, const basalt_model& model, const basalt_model* second,
               const EngineConfig& config)
    : runtime_(runtime), model_(model), second_(second), config_(config) {
    const ModelHparams& hp = model.hparams;
    if (second != nullptr && second->hparams.n_vocab != hp.n_vocab) {
        fail(BASALT_ERR_INVALID_ARGUMENT,
             "the second model's vocabulary has {} tokens, the main model's {}: a draft or amateur must share the "
             "vocabulary",
             second->hparams.n_vocab, hp.n_vocab);
    }
    if (config.n_parallel == 0) fail(BASALT_ERR_INVALID_ARGUMENT, "n_parallel must be at least 1");
    if (config.max_batch_tokens == 0) fail(BASALT_ERR_INVALID_ARGUMENT, "max_batch_tokens must be at least 1");
    resolve_limits(config);
    open_sessions(config);
    SchedulerLimits limits;
    limits.n_parallel = config.n_parallel;
    limits.n_seq_max = n_seq_max_;
    limits.n_kv_slots = n_kv_slots_;
    limits.n_ctx = n_ctx_;
    limits.block_size = sessions_[0]->block_size();
    limits.max_batch_tokens = config.max_batch_tokens;
    limits.prefill_chunk = config.prefill_chunk;
    limits.second_model = sessions_[1] != nullptr;
    on_demand_ = resolve_on_demand(config);
    limits.on_demand = on_demand_;
    scheduler_ = Scheduler(limits);
    // A hybrid model's recurrent state is computed in a form that depends on the piece's length (the delta rule's
    // chunked form from 16 tokens): cut by measured time, its output would depend on the machine's timing.
    const bool recurrent = hp.recurrent() || (second != nullptr && second->hparams.recurrent());
    step_budget_.enabled = config.max_step_ms >= 0 && !recurrent;
    step_budget_.max_step_ms = config.max_step_ms;
    if (config.max_step_factor > 0) step_budget_.decode_factor = config.max_step_factor;
    stats_.kv_slots = n_kv_slots_;
    try {
        model.tok();  // built now: a model without a vocabulary (a benchmark file) streams tokens without text
        has_text_ = true;
    } catch (const Error& e) {
        log::info("engine: {}: requests stream token ids only", e.what());
    }
    if (config.own_thread) thread_ = std::thread([this] { loop(); });
}

// n_ctx (per sequence), n_seq_max and the KV slots from the config and the model.
void Engine::resolve_limits(const EngineConfig& config) {
    const ModelHparams& hp = model_.hparams;
    n_ctx_ = config.n_ctx != 0 ? config.n_ctx : (hp.n_ctx_train != 0 ? std::min<uint32_t>(hp.n_ctx_train, 4096) : 4096);
    if (hp.learned_positions && hp.n_ctx_train != 0 && n_ctx_ > hp.n_ctx_train) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "context {} exceeds {}'s {} learned positions", n_ctx_, hp.arch,
             hp.n_ctx_train);
    }
    if (hp.n_ctx_train != 0 && n_ctx_ > hp.n_ctx_train && !hp.learned_positions) {
        log::warn("context {} is above the {} positions the model was trained with: output past them degrades", n_ctx_,
                  hp.n_ctx_train);
    }
    n_seq_max_ = config.n_seq_max != 0 ? config.n_seq_max : config.n_parallel;
    const uint64_t slots = config.n_kv_slots != 0 ? config.n_kv_slots : uint64_t{n_ctx_} * n_seq_max_;
    if (slots > INT32_MAX) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "KV slots {} (n_ctx {} x n_seq_max {}) exceed the slot range", slots, n_ctx_,
             n_seq_max_);
    }
    n_kv_slots_ = static_cast<uint32_t>(slots);
}

namespace {

// The host memory a hybrid model's prefix cache keeps recurrent-state checkpoints in (0: none).
uint64_t state_checkpoint_budget(const ModelHparams& hp, const EngineConfig& config) {
    if (!config.prefix_cache || !hp.recurrent()) return 0;
    if (config.prefix_state_bytes != 0) return config.prefix_state_bytes;
    return std::max(EngineConfig::kDefaultStateCheckpoints,
                    EngineConfig::kStateCheckpointsPerRequest * config.n_parallel) *
           hp.recurrent_state_bytes();
}

}  // namespace

// One session per model, sized for every sequence's slots and one step's batch.
void Engine::open_sessions(const EngineConfig& config) {
    SessionConfig sc = config.session;
    sc.n_ctx = n_kv_slots_;
    sc.n_batch = config.max_batch_tokens;
    sc.n_seq_max = n_seq_max_;
    sc.warn_context = false;  // warned above, per request
    sc.state_checkpoint_bytes = state_checkpoint_budget(model_.hparams, config);
    sessions_[0] = std::make_unique<Session>(runtime_.plugins, model_, sc);
    if (config.moe_stats) {
        sessions_[0]->set_moe_stats(true);
        moe_stats_ = sessions_[0]->moe_stats();
    }
    if (second_ != nullptr && second_->hparams.n_expert == 0) sc.moe_router.clear();  // a dense draft stays dense
    if (second_ != nullptr) {
        sc.state_checkpoint_bytes = state_checkpoint_budget(second_->hparams, config);
        sessions_[1] = std::make_unique<Session>(runtime_.plugins, *second_, sc);
    }
}

Engine::~Engine() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    idle_.notify_all();
    if (thread_.joinable()) thread_.join();
    // Whatever is left is cancelled: handles outlive the engine and must read as finished.
    std::vector<std::shared_ptr<Request>> left(queue_.begin(), queue_.end());
    left.insert(left.end(), running_.begin(), running_.end());
    for (auto& r : left) finish(*r, BASALT_FINISH_CANCELLED);
    for (auto& r : running_) release(*r);
    deliver(left);
    // Queued requests' decoders and chains belong to plugins that may be unloaded with the runtime: free them now
    // (running ones were freed by release).
    for (auto& r : left) r->release_plugin_objects();
}

void Engine::notify() {
    wake_.notify_all();
}

Session& Engine::session(int32_t model) {
    if (model < 0 || model > 1 || !sessions_[model]) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "model {} is not attached (the engine has {} model{})", model,
             sessions_[1] ? 2 : 1, sessions_[1] ? "s" : "");
    }
    return *sessions_[model];
}

int32_t Engine::session_seq(Request& r, int32_t model, int32_t seq) const {
    if (model < 0 || model > 1 || !sessions_[model])
        fail(BASALT_ERR_INVALID_ARGUMENT, "model {} is not attached", model);
    const auto& ids = r.seq_ids[model];
    if (seq < 0 || static_cast<size_t>(seq) >= ids.size()) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "sequence {} is out of the request's range 0..{}", seq,
             static_cast<int64_t>(ids.size()) - 1);
    }
    return ids[static_cast<size_t>(seq)];
}

uint32_t Engine::other_rows(const Request& r, int32_t model) const {
    if (model < 0 || model > 1) return 0;
    const size_t own = r.rows_step == step_id_ ? r.own_rows[model] : 0;
    return static_cast<uint32_t>(step_rows_[model] - std::min(own, step_rows_[model]));
}

size_t Engine::step() {
    if (model_.hparams.encoder_only) return embed_step();
    std::vector<std::shared_ptr<Request>> touched;
    const std::vector<std::shared_ptr<Request>> started = admit_queued(touched);
    for (auto& r : started) {
        if (r->kv.preempted) {
            begin_restore(*r);  // admitted again: recompute what it held, then its decoder goes on
        } else if (!start(*r)) {
            touched.push_back(r);
        }
    }
    if (model_.hparams.encoder_decoder) encode_sources(started, touched);
    for (auto& r : running_) {
        if (r->cancel.load() && r->done == BASALT_FINISH_NONE) {
            finish(*r, BASALT_FINISH_CANCELLED);
            touched.push_back(r);
        }
    }
    // Pack the step: decode feeds (one token) first, then prefill pieces, in admission order, under the token
    // budget and the step-time budget; then one forward per model.
    std::vector<StepRow> rows[2];
    scheduler_.pack(running_, rows);
    make_room(rows);        // on demand: preempts the newest requests while the step's KV blocks are not free
    fit_step_budget(rows);  // prompt pieces within the step-time budget while requests decode
    ForwardResult fr;
    ++step_id_;
    for (int m = 0; m < 2; ++m) {
        step_rows_[m] = 0;
        for (const StepRow& row : rows[m]) {
            Request& r = *row.r;
            if (r.rows_step != step_id_) {
                r.rows_step = step_id_;
                r.own_rows[0] = r.own_rows[1] = 0;
            }
            r.own_rows[m] += row.count;
            step_rows_[m] += row.count;
        }
    }
    for (int m = 0; m < 2; ++m) {
        if (!rows[m].empty()) forward(m, rows[m], fr);
    }
    {
        std::lock_guard lock(mutex_);
        if (fr.step_tokens > 0) stats_.steps += 1;
        stats_.prompt_tokens += fr.prefill_tokens;
        stats_.batch_tokens_max = std::max(stats_.batch_tokens_max, fr.step_tokens);
        if (config_.moe_stats && !rows[0].empty()) moe_stats_ = sessions_[0]->moe_stats();
    }
    consume_ready(touched);
    retire(touched);
    std::sort(touched.begin(), touched.end());
    touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
    deliver(touched);
    size_t active = 0;
    {
        std::lock_guard lock(mutex_);
        active = queue_.size() + running_.size();
        idle_now_ = active == 0;
    }
    if (active == 0) idle_.notify_all();
    if (fr.status != BASALT_OK) fail(fr.status, "{} (its requests finished with that error)", fr.error);
    return active;
}

void Engine::run() {
    if (config_.own_thread) {
        std::unique_lock lock(mutex_);
        idle_.wait(lock, [&] { return stopping_ || idle_now_; });
        return;
    }
    while (step() > 0) {
    }
}

void Engine::loop() {
    for (;;) {
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [&] { return stopping_ || !queue_.empty() || !running_.empty(); });
            if (stopping_) return;
        }
        try {
            step();
        } catch (const Error& e) {
            log::warn("engine: {}", e.what());
        } catch (const std::exception& e) {
            log::warn("engine: step failed: {}", e.what());
        }
    }
}

std::vector<MoeLayerStats> Engine::moe_stats() const {
    if (!config_.moe_stats) {
        fail(BASALT_ERR_INVALID_ARGUMENT,
             "the engine does not collect MoE statistics (create it with BASALT_ENGINE_MOE_STATS)");
    }
    std::lock_guard lock(mutex_);
    return moe_stats_;
}

EngineStats Engine::stats() const {
    std::lock_guard lock(mutex_);
    EngineStats s = stats_;
    const uint64_t used = on_demand_ ? kv_held_ : scheduler_.kv_reserved();
    s.kv_slots_free = n_kv_slots_ - std::min<uint64_t>(n_kv_slots_, used);
    return s;
}

}  // namespace basalt::engine
