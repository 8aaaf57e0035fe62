// A session: one model on one backend instance with one KV-cache manager, decoding ragged batches
// (tokens of several sequences packed with positions and sequence ids; logits only where asked).
#pragma once

#include <basalt/basalt.h>
#include <basalt/plugin_backend.h>
#include <basalt/plugin_kv_cache.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "exec/kv-reservation.hpp"
#include "exec/session-resources.hpp"
#include "exec/session-state.hpp"
#include "exec/state-checkpoints.hpp"
#include "exec/step-graph.hpp"
#include "exec/step-input.hpp"
#include "graph/moe-router.hpp"
#include "host/plugin-host.hpp"
#include "model/memory-plan.hpp"

struct basalt_model;

namespace basalt {

struct SessionConfig {
    uint32_t n_ctx = 0;      // 0: training context, at most 4096
    uint32_t n_batch = 512;  // tokens per forward pass; larger batches are split
    uint32_t n_seq_max = 1;
    uint32_t n_threads = 0;  // 0: backend default
    std::string backend = "cpu";
    std::string kv_cache = "paged";
    std::vector<std::pair<std::string, std::string>> backend_params;
    std::vector<std::pair<std::string, std::string>> kv_params;
    bool warn_context = true;  // warn when one sequence may pass the trained context (the engine warns itself)
    std::string moe_router;    // MoE routing spec (MoeRouter::parse; "" dropless); refused for a model without experts
    // Hybrid recurrent models: host memory for the prefix cache's recurrent-state checkpoints (0: none kept, so no
    // prefix reuse); a budget below one sequence's state keeps none. docs/kv-cache.md "Prefix reuse on a hybrid model".
    uint64_t state_checkpoint_bytes = 0;
};

class Session {
  public:
    // config.kv_cache may carry the manager's parameters as "NAME:key=value,..." (e.g. "sink:n_sink=4,window=252");
    // they are added after config.kv_params (a key given in both: the spec's value).
    Session(const PluginHost& plugins, const basalt_model& model, const SessionConfig& config);
    ~Session();
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    // Runs a ragged batch. Validates everything (ids, positions, context room) before any work.
    void decode(const basalt_batch& batch);
    // Encoder-decoder models: runs the encoder over a ragged batch of sources (each sequence's whole source, positions
    // 0..n-1, into an empty sequence) and keeps every decoder layer's cross-attention K/V of it for the sequence's
    // decoder steps (shared by forks, freed by seq_drop). Sources are packed into passes of at most n_batch tokens
    // (a longer source has a pass of its own); more source tokens than free cross rows (n_ctx in all) is refused
    // (CAPACITY) before any work.
    void encode(const basalt_batch& batch);
    // Encoder-only (embedding) models: runs whole inputs through the encoder, each sequence's rows one input at
    // positions 0..n-1 (nothing is kept: the ids, any >= 0, only group rows), and sets `rows` to every row's final
    // hidden state in batch order (n_tokens x n_embd). With `scores` (the model has a rank head, n_cls_out > 0), sets
    // it to each input's head outputs (n_cls_out each) in order of first appearance (of its id). Inputs are packed into
    // passes of at most n_batch tokens (a longer one: a pass of its own); an input longer than n_ctx (or the learned
    // positions) is refused (CAPACITY) before any work. docs/embeddings.md.
    void embed(const basalt_batch& batch, std::vector<float>& rows, std::vector<float>* scores = nullptr);
    // Tokens of seq's encoded source (0: none).
    uint32_t seq_source_length(int32_t seq) const;
    // Cross-attention rows still free (encoder-decoder models; 0 otherwise).
    size_t free_source_rows() const { return state_.cross_free.size(); }
    // Logits of output row `row` (batch rows with want_logits, in batch order) of the last decode.
    const float* logits(size_t row) const;
    size_t n_outputs() const { return n_out_; }
    size_t n_vocab() const;
    uint32_t n_ctx() const { return res_.n_ctx; }
    // Streaming cache (the manager's layout has stream_window != 0, e.g. kv_cache 'sink'): sequences may grow past
    // n_ctx (the manager evicts), each query sees the layout's stream_sinks first positions and its last
    // stream_window.
    bool streaming() const { return res_.layout.stream_window != 0; }
    // Residual window of quantized K/V (0: none): recent tokens kept F32 until their unit of this many is full.
    uint32_t residual_window() const { return res_.residual; }
    size_t n_embd() const;
    uint32_t seq_length(int32_t seq) const;

    void seq_drop(int32_t seq);
    void seq_fork(int32_t src, int32_t dst);
    // Forgets positions >= n_keep of seq (rejected draft tokens). Fails naming the manager when its table lacks
    // seq_truncate, and naming both figures when n_keep exceeds the sequence's length; n_keep == length: no-op.
    // Hybrid recurrent models: only n_keep 0 (UNSUPPORTED otherwise: the state has no earlier version).
    void seq_truncate(int32_t seq, uint32_t n_keep);
    // Attaches to empty sequence seq the longest chain of cached full blocks holding a prefix of tokens (at most
    // n tokens); returns the tokens now held (0 when the manager has no prefix_attach or nothing matches, and always
    // for encoder-decoder models). A hybrid recurrent model attaches only as far as a kept state checkpoint
    // (SessionConfig::state_checkpoint_bytes; none: 0) and takes that state.
    uint32_t prefix_attach(int32_t seq, const int32_t* tokens, size_t n);
    // Hybrid models: the recurrent-state checkpoints kept for prefix reuse (empty when off).
    const StateCheckpoints& state_checkpoints() const { return checkpoints_; }
    // Sets an empty sequence's prefix-cache salt (0: none). A salt other than 0 fails naming the manager when its
    // table lacks seq_set_salt (an ABI 1.2 entry).
    void seq_set_salt(int32_t seq, uint64_t salt);
    // Activation steering. A slot holds one vector per layer (n_layer x n_embd floats, vectors[il * n_embd ..]),
    // uploaded to the device once here; `layers` (n_layer flags) says after which layers it is added. Slots number
    // n_seq_max; returns the slot, or fails with BASALT_ERR_CAPACITY when all are taken.
    int32_t steer_acquire(const std::vector<float>& vectors, const std::vector<uint8_t>& layers);
    // Frees a slot (sequences still pointing at it stop being steered). -1 is ignored.
    void steer_release(int32_t slot);
    // The steering slot of sequence seq's rows from now on (-1: none). A fork copies it to the new sequence.
    void seq_set_steer(int32_t seq, int32_t slot);
    int32_t seq_steer(int32_t seq) const;
    // Gives seq a slot of its own holding these vectors (empty: none), freeing its previous slot when no other
    // sequence uses it (the public basalt_session_seq_set_steering).
    void seq_set_steer_vectors(int32_t seq, const std::vector<float>& vectors, const std::vector<uint8_t>& layers);
    // OBSERVE: from the next decode on, copy the residual rows at the output of the flagged layers (the steering hook
    // point, after any steering) to the host (empty: off). observed(il) holds the last decode's rows of layer il,
    // every batch row in order (n_tokens x n_embd); empty for a layer not observed.
    void set_observe(const std::vector<uint8_t>& layers);
    const std::vector<float>& observed(uint32_t layer) const;
    // MoE routing statistics: on (counters reset) or off from the next decode on; a model without experts has none
    // to collect (on is refused naming the model). moe_stats() holds one entry per layer (empty while off).
    void set_moe_stats(bool on);
    bool moe_stats_on() const { return state_.moe_stats_on; }
    const std::vector<MoeLayerStats>& moe_stats() const { return state_.moe_stats; }
    // Tokens per block of the cache manager's layout.
    uint32_t block_size() const { return res_.layout.block_size; }
    // Slots the manager still has free (its free_slots entry), or n_ctx minus the tokens held when it has none.
    size_t free_slots() const;
    // The memory plan of this session's shape (n_ctx, n_batch, n_seq_max) with the manager's K/V types.
    const MemoryPlan& plan() const { return res_.plan; }
    // What the session allocated, in the plan's terms: the weights buffer, the K/V buffers (bytes and rows per
    // layer) and the IO buffer as scratch (the backend's own work memory is not visible to the session).
    MemoryPlan allocated() const;

  private:
    // Validates a decode batch before any work: ids, sequences, positions in order, context room.
    void check_batch(const basalt_batch& batch) const;
    // One forward pass over batch rows [begin, end); the wanted rows' logits are appended to out_logits.
    void decode_chunk(const basalt_batch& batch, size_t begin, size_t end, std::vector<float>& out_logits);
    // Passes over rows [begin, end) of at most n_batch tokens each.
    void decode_rows(const basalt_batch& batch, size_t begin, size_t end, std::vector<float>& out_logits, bool report);
    // State checkpoints on: runs the batch in passes that end each prompt piece (a sequence's rows, a block or more)
    // at every multiple of kCheckpointEvery positions it crosses and at its last block boundary, so that the state
    // there can be kept; logits come back in batch order. Returns false (nothing run) when no piece crosses a split
    // point it does not end on.
    bool decode_split(const basalt_batch& batch, std::vector<float>& out_logits);
    // After a pass over rows seqs[0..n): keeps the state of each sequence that now ends on a block boundary.
    void keep_checkpoints(const int32_t* seqs, size_t n);
    // Forgets what the checkpoints know of seq (it was dropped, truncated to 0 or reset).
    void forget_tokens(int32_t seq);
    // Hybrid models: cuts a prefix attach of `matched` tokens back to the longest kept state checkpoint and writes
    // that state into seq; none: the attach is undone. Returns the tokens kept.
    size_t attach_state(int32_t seq, const int32_t* tokens, size_t matched);
    // Undoes a prefix attach of seq (drops it) and sets its salt again.
    void undo_attach(int32_t seq);
    // After a failed compute: forgets the sequences whose reserved slots hold no valid K/V, then fails.
    [[noreturn]] void fail_compute(basalt_status st);
    // Validates an encode batch: each sequence empty, its source whole; collects each source's batch rows and the
    // sequences in order; refuses more source tokens than free cross rows.
    void check_sources(const basalt_batch& batch, std::vector<std::vector<size_t>>& rows,
                       std::vector<int32_t>& order) const;
    // One encoder pass over whole sources: `seqs` in order, their tokens at `rows` of the batch.
    void encode_pass(const basalt_batch& batch, const std::vector<int32_t>& seqs,
                     const std::vector<std::vector<size_t>>& rows);
    // One embedding pass over whole inputs: `seqs` in order, their tokens at `rows` of the batch; hidden rows and
    // scores appended to pass_rows / scores.
    void embed_pass(const basalt_batch& batch, const std::vector<int32_t>& seqs,
                    const std::vector<std::vector<size_t>>& rows, std::vector<float>& pass_rows,
                    std::vector<float>* scores);
    // Gives seq's cross rows back when no other sequence shares them.
    void release_source(int32_t seq);

    const basalt_model& model_;
    SessionConfig config_;
    SessionShape shape_;
    SessionResources res_;  // backend, KV manager, buffers (freed last)
    SessionState state_;
    KvReservation reservation_;
    StepGraph graph_;
    Step step_;
    StateCheckpoints checkpoints_;
    // Prompt pieces leave a state checkpoint at every multiple of this many positions (in whole blocks), so that
    // prompts sharing a long prefix (a system prompt) reuse it, with the floats of a run without the cache.
    static constexpr uint32_t kCheckpointEvery = 512;
    // kCheckpointEvery in whole blocks (at least one).
    uint32_t checkpoint_every() const;
    std::vector<int32_t> enc_tokens_, enc_positions_, enc_seqs_;  // an encoder pass's packed rows
    std::vector<float> logits_;
    size_t n_out_ = 0;
};

}  // namespace basalt
