// The engine: the one generation loop. A FIFO queue of requests, admission by free sequences and worst-case KV
// room, and steps that pack the work of every running request (decode tokens first, then prefill chunks) into
// one ragged batch per model, run it, and hand each request's decoder its logits. docs/engine.md.
#pragma once

#include <basalt/basalt.h>
#include <basalt/plugin_decoder.h>

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/request.hpp"
#include "engine/scheduler.hpp"
#include "engine/steering.hpp"
#include "engine/step-budget.hpp"
#include "engine/step-cost-model.hpp"
#include "exec/sampler-chain-instance.hpp"
#include "exec/session.hpp"
#include "model/model.hpp"

struct basalt_runtime;

namespace basalt::engine {

struct EngineConfig {
    uint32_t n_ctx = 0;  // per sequence; 0: the model's, at most 4096
    uint32_t n_parallel = 1;
    uint32_t n_seq_max = 0;   // 0: n_parallel
    uint32_t n_kv_slots = 0;  // 0: n_ctx x n_parallel
    uint32_t max_batch_tokens = 512;
    uint32_t prefill_chunk = 0;  // 0: whole prompts
    double max_step_ms = 0;      // step-time budget while requests decode: > 0 ms; 0: max_step_factor x the decode
                                 // rows' predicted time; < 0: none (prompt pieces as packed)
    double max_step_factor = 0;  // 0: 2
    bool own_thread = false;
    bool prefix_cache = true;  // attach prompts to cached blocks at their start
    // Hybrid models, with prefix_cache: host memory for recurrent-state checkpoints (docs/kv-cache.md "Prefix reuse
    // on a hybrid model"); 0: room for kDefaultStateCheckpoints states of a sequence, or kStateCheckpointsPerRequest
    // per running request (n_parallel) when that is more (a conversation's next turn wants its prompt's and its
    // reply's).
    uint64_t prefix_state_bytes = 0;
    static constexpr uint64_t kDefaultStateCheckpoints = 16;
    static constexpr uint64_t kStateCheckpointsPerRequest = 2;
    bool moe_stats = false;          // collect the main model's MoE routing statistics (moe_stats())
    bool reserve_admission = false;  // admit by worst-case KV room (no preemption) instead of by real use
    SessionConfig session;           // backend, cache manager, threads, their params (n_ctx/n_batch/n_seq_max set here)
};

struct EngineStats {
    uint64_t steps = 0, queued = 0, running = 0, finished = 0, prompt_tokens = 0, generated_tokens = 0;
    uint64_t batch_tokens_max = 0, kv_slots = 0, kv_slots_free = 0, cached_tokens = 0;
    uint64_t preemptions = 0;  // running requests whose KV was dropped for older ones (recomputed later)
    uint64_t state_checkpoints = 0, state_checkpoint_bytes = 0;  // the main model's, as of the last step
};

// Creates an instance of decoder `name` with params (table and instance out; the instance is the caller's, freed
// with table.destroy) and returns its requirements (n_seq, n_models, n_outputs at least 1). Throws Error naming an
// unknown decoder (and the loaded ones) or a parameter the decoder refused.
basalt_decoder_info create_decoder(basalt_runtime& runtime, const std::string& name,
                                   const std::vector<std::pair<std::string, std::string>>& params,
                                   basalt_decoder_iface& table, void*& instance);

class Engine {
  public:
    Engine(basalt_runtime& runtime, const basalt_model& model, const basalt_model* second, const EngineConfig& config);
    ~Engine();
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    // Checks a request and queues it; throws Error naming what is wrong. Thread-safe.
    std::shared_ptr<Request> submit(RequestSpec spec, basalt_request* handle = nullptr);
    // One scheduler step; returns queued + running requests left. Loop thread only.
    size_t step();
    // Steps until idle (or, with its own thread, waits for that).
    void run();
    EngineStats stats() const;
    // The main model's MoE routing statistics per layer as of the last step. Throws Error when the engine does not
    // collect them (EngineConfig::moe_stats). Thread-safe.
    std::vector<MoeLayerStats> moe_stats() const;
    // Wakes the loop thread (a cancel or a new request).
    void notify();
    // Whether the calling thread is inside a request callback of engine e (compared by address only, so e may be
    // an engine already destroyed). A callback must not re-enter its engine's step, run or destroy: the C API
    // refuses those calls when this is true. Thread-safe.
    static bool in_callback(const Engine* e);
    // Loads the control-vector spec "FILE[:SCALE[:A-B]]" now and keeps it under `name`: a request's steer spec
    // "NAME[:SCALE[:A-B]]" then uses it and opens no file. Throws the load's refusal or a name's. Thread-safe.
    void add_control_vector(const std::string& name, const std::string& spec);

    const basalt_model& model() const { return model_; }
    uint32_t n_ctx() const { return n_ctx_; }
    // Positions one sequence may hold: n_ctx, or no limit (INT32_MAX) with a streaming cache (attention sinks).
    uint32_t seq_positions() const { return sessions_[0]->streaming() ? INT32_MAX : n_ctx_; }
    size_t n_vocab() const { return model_.hparams.n_vocab; }
    bool own_thread() const { return config_.own_thread; }
    // Whether admission goes by real KV use with preemption (docs/engine.md "Admission"), else by worst case.
    bool on_demand() const { return on_demand_; }

    // Decoder host services (request-local sequences); throw Error.
    Session& session(int32_t model);
    int32_t session_seq(Request& r, int32_t model, int32_t seq) const;
    SamplerChain& chain(Request& r, int32_t seq) const;
    void fork(Request& r, int32_t model, int32_t src, int32_t dst);
    // Whether model m (0, or 1 when attached) keeps a recurrent state: its sequences cannot be cut back.
    bool model_recurrent(int32_t model) const;
    // Sequence snap of `model` becomes a snapshot of seq (its cache only, not its chain); seq_restore puts it back
    // as seq (the session sequences swap, no copy) and empties snap.
    void seq_snapshot(Request& r, int32_t model, int32_t seq, int32_t snap);
    void seq_restore(Request& r, int32_t model, int32_t seq, int32_t snap);
    basalt_status emit(Request& r, int32_t hypothesis, const int32_t* tokens, size_t n, float score);
    void set_stat(Request& r, const std::string& name, double value);
    bool is_eog(const Request& r, int32_t token) const;
    // Rows other requests put into the last step's forward of model m (the decoder host's batch_rows).
    uint32_t other_rows(const Request& r, int32_t model) const;

  private:
    // ---- embedding requests (engine-embed.cpp) ----
    // Checks an embedding request (the model can embed with its pooling, the input fits) and queues it.
    std::shared_ptr<Request> submit_embed(RequestSpec spec, basalt_request* handle);
    // One step of an embedding model: queued requests (cancelled ones leave) taken in FIFO order while their inputs
    // fit max_batch_tokens (the first always), embedded in one ragged call, pooled, finished and delivered.
    size_t embed_step();
    // ---- setup (engine.cpp) ----
    void resolve_limits(const EngineConfig& config);
    void open_sessions(const EngineConfig& config);
    // ---- submit (engine-submit.cpp): checks that throw before anything is queued ----
    void check_tokens(RequestSpec& spec) const;
    void check_chain_tokens(const SamplerChainSpec& chain) const;
    static void add_grammar(SamplerChainSpec& chain, const RequestSpec& spec);
    void prepare_chain(Request& r);
    void create_request_decoder(Request& r);
    void enqueue(const std::shared_ptr<Request>& r);
    // ---- scheduling (engine-schedule.cpp) ----
    // Cancelled requests leave the queue; then FIFO admission while the head fits. Loop thread.
    std::vector<std::shared_ptr<Request>> admit_queued(std::vector<std::shared_ptr<Request>>& touched);
    void admit(Request& r);    // the sessions' side of an admission (salts, steering), timestamps
    void release(Request& r);  // sequences and KV room back
    // Finished requests leave running_ (release); they join touched.
    void retire(std::vector<std::shared_ptr<Request>>& touched);
    // ---- admission by real KV use and preemption (preemption.cpp) ----
    // Whether this engine can admit on demand: not asked for reservation, and the cache and model allow
    // recomputing a request's KV exactly (no streaming cache, no residual window, not encoder-decoder).
    bool resolve_on_demand(const EngineConfig& config) const;
    // The KV blocks model m's rows of a step take beyond what their sequences hold (copy on write included).
    uint64_t step_blocks(int m, const std::vector<StepRow>& rows) const;
    uint64_t free_blocks(int m) const;
    // Positions the session still accepts: n_kv_slots minus every running sequence's length (the session refuses a
    // batch past that sum, shared blocks or not).
    uint64_t free_positions(int m) const;
    // Whether model m's rows of a step fit both the free blocks and the free positions.
    bool step_fits(int m, const std::vector<StepRow>& rows) const;
    // KV slots free once the running requests took their next step: what admission may give. Loop thread.
    uint64_t admission_room() const;
    // Preempts the newest running requests until the step's rows fit the free blocks (repacking them); the
    // oldest running request is never preempted. Loop thread.
    void make_room(std::vector<StepRow> (&rows)[2]);
    // Whether r's held tokens match its sequences (so recomputing them rebuilds them exactly).
    bool preemptible(const Request& r) const;
    // Drops r's sequences and steering, gives back its room and puts it in the queue ahead of every request not
    // yet admitted (in arrival order), keeping its decoder, chains, plan, output and held tokens.
    void preempt(const std::shared_ptr<Request>& r);
    // A preempted request admitted again: its plan becomes the recomputation of its held tokens (prefix cache
    // first); its decoder's plan waits. Keeps running_ in arrival order.
    void begin_restore(Request& r);
    // The recomputation is complete: the decoder's plan is back (it goes on at the next step). Returns whether
    // it was complete.
    bool end_restore(Request& r);
    void undo_restore(Request& r);
    // Slots held by the running requests' sequences (in whole blocks), for kv_slots_free.
    uint64_t held_slots() const;
    // ---- the step-time budget (engine-step-budget.cpp) ----
    // Shortens the packed prompt pieces so that the step's predicted time stays within the budget (rows left
    // with no token are removed) and keeps the step's features for observe_forward. Loop thread.
    void fit_step_budget(std::vector<StepRow> (&rows)[2]);
    // Model m's forward of this step took ms: the cost model learns from it. Loop thread.
    void observe_forward(int m, double ms);
    // ---- the decoder's lifecycle (engine-decode.cpp) ----
    bool start(Request& r);            // create the decoder, begin, first plan; false if it finished at once
    bool replan(Request& r);           // plan after consume; false when finished
    bool check_plan(Request& r);       // every feed valid and within the context; else finishes r
    void attach_prefixes(Request& r);  // the first plan's prompt feeds reuse cached blocks
    // Requests whose plan is complete consume their logits and plan again; they join touched.
    void consume_ready(std::vector<std::shared_ptr<Request>>& touched);
    void finish(Request& r, int32_t reason, const std::string& error = {});
    // ---- the forward passes (engine-forward.cpp) ----
    // Encoder-decoder: the sources of the started requests in one ragged encoder batch (a failure fails them).
    void encode_sources(const std::vector<std::shared_ptr<Request>>& started,
                        std::vector<std::shared_ptr<Request>>& touched);
    struct ForwardResult {
        uint64_t step_tokens = 0, prefill_tokens = 0;
        basalt_status status = BASALT_OK;
        std::string error;
    };
    // One forward of model m over its rows of the step; the rows' logits go to their requests.
    void forward(int m, const std::vector<StepRow>& rows, ForwardResult& result);
    void collect_logits(int m, const std::vector<StepRow>& rows);
    // ---- output (engine-output.cpp) ----
    bool take_stop(Request& r, int32_t token, const std::string& piece);  // records one token; true: stop
    void deliver(const std::vector<std::shared_ptr<Request>>& touched);
    void loop();

    basalt_runtime& runtime_;
    const basalt_model& model_;
    const basalt_model* second_ = nullptr;
    EngineConfig config_;
    uint32_t n_ctx_ = 0;
    uint32_t n_kv_slots_ = 0;
    uint32_t n_seq_max_ = 0;
    std::unique_ptr<Session> sessions_[2];
    bool has_text_ = false;   // the model's vocabulary renders text (benchmark files have none)
    bool on_demand_ = false;  // admission by real KV use, with preemption (resolve_on_demand)
    uint64_t kv_held_ = 0;    // on demand: held_slots() as of the last step (under mutex_)

    mutable std::mutex mutex_;      // queue_, counters, stopping_
    SteerRegistry steer_registry_;  // named control vectors (add_control_vector); its own lock
    std::condition_variable wake_;
    std::condition_variable idle_;
    std::deque<std::shared_ptr<Request>> queue_;
    std::vector<std::shared_ptr<Request>> running_;  // loop thread; its size is read under mutex_
    Scheduler scheduler_{SchedulerLimits{}};         // sequences, KV room, source rows (under mutex_ in step)
    uint64_t next_id_ = 1;
    EngineStats stats_;
    std::vector<MoeLayerStats> moe_stats_;  // copied from the main session after each step (under mutex_)
    bool stopping_ = false;
    uint64_t step_generated_ = 0;  // tokens emitted during this step (loop thread)
    bool idle_now_ = true;         // no request queued or running, and the last step's output delivered
    bool in_step_ = false;
    uint64_t step_id_ = 0;          // steps run (loop thread)
    size_t step_rows_[2] = {0, 0};  // rows of the last step's forward per model (loop thread)

    StepBudgetConfig step_budget_;   // from max_step_ms / max_step_factor
    StepCostModel step_cost_[2];     // per model's forward (loop thread)
    StepFeatures step_features_[2];  // this step's rows per model, as planned (loop thread)
    std::thread thread_;
};

}  // namespace basalt::engine
