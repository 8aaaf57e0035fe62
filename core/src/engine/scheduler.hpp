// The engine's scheduling decisions, apart from sessions and plugins (so they are unit-tested alone): which queued
// requests start (FIFO while the head fits: a running place of n_parallel, free sequences per model, worst-case KV
// room, encoder source rows) and how one step's token budget is shared (decode tokens first, then prefill pieces,
// in admission order; whole prompts unless prefill_chunk is set). docs/engine.md.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "engine/request.hpp"

namespace basalt::engine {

struct SchedulerLimits {
    uint32_t n_parallel = 1;        // requests running at once
    uint32_t n_seq_max = 1;         // sequences per model
    uint32_t n_kv_slots = 0;        // cache slots shared by all sequences
    uint32_t n_ctx = 0;             // positions per sequence
    uint32_t block_size = 1;        // the cache's allocation unit
    uint32_t max_batch_tokens = 1;  // tokens per step
    uint32_t prefill_chunk = 0;     // 0: whole prompts
    bool second_model = false;      // a draft or amateur has sequences of its own
    bool on_demand = false;         // admit by the KV a request needs now (set_kv_room), not its worst case
};

// A piece of one feed taken into a step: tokens first .. first+count of feed `feed` of request r.
struct StepRow {
    Request* r = nullptr;
    size_t feed = 0;
    size_t first = 0;
    size_t count = 0;
};

class Scheduler {
  public:
    explicit Scheduler(const SchedulerLimits& limits);

    const SchedulerLimits& limits() const { return limits_; }
    // The KV slots a request may need: n_seq sequences of prompt + max_tokens positions (n_ctx when unbounded, at
    // most n_ctx), each rounded up to whole blocks.
    uint64_t worst_case_slots(const Request& r) const;
    // On-demand admission (admission.cpp): the KV slots r needs to take its next step once admitted: its first
    // prefill piece, or for a preempted request everything its sequences held (recomputed) plus one more token,
    // in whole blocks, on its larger model.
    uint64_t slots_needed_now(const Request& r) const;
    // On-demand admission: the KV slots free after the running requests' next step (admit takes from it).
    void set_kv_room(uint64_t slots) { kv_room_ = slots; }
    // Whether r can start now, next to n_running requests, with free_source_rows cross-attention rows unused.
    bool admissible(const Request& r, size_t n_running, uint64_t free_source_rows) const;
    // Removes the cancelled requests from the queue and returns them (they never start).
    std::vector<std::shared_ptr<Request>> take_cancelled(std::deque<std::shared_ptr<Request>>& queue) const;
    // Starts requests from the head of the queue while the head fits: reserves its sequences (r.seq_ids), KV room
    // (r.kv_reserved) and source rows, calls on_admit(r), and moves it to the end of running. If on_admit throws,
    // the reservation is undone and the request stays at the head. Returns the started requests in order.
    std::vector<std::shared_ptr<Request>> admit(std::deque<std::shared_ptr<Request>>& queue,
                                                std::vector<std::shared_ptr<Request>>& running,
                                                uint64_t free_source_rows,
                                                const std::function<void(Request&)>& on_admit);
    // Gives r's sequences and KV room back (r.seq_ids emptied, r.kv_reserved 0).
    void release(Request& r);
    // An admitted request's source was encoded (or failed): its rows are no longer reserved here.
    void source_encoded(size_t rows);
    // Shares one step's budget among the running requests with a plan to feed: one-token feeds (decodes) first,
    // then prefill pieces, in order. Rows per model (rows[feed.model]).
    void pack(const std::vector<std::shared_ptr<Request>>& running, std::vector<StepRow> (&rows)[2]) const;

    uint64_t kv_reserved() const { return kv_reserved_; }
    uint64_t source_reserved() const { return source_reserved_; }
    size_t free_seqs(int model) const { return free_seqs_[model].size(); }

  private:
    uint32_t seqs_needed(const Request& r, int model) const;

    SchedulerLimits limits_;
    std::vector<int32_t> free_seqs_[2];  // per model; the back is handed out next
    uint64_t kv_reserved_ = 0;
    uint64_t source_reserved_ = 0;  // encoder-decoder: source rows of admitted requests not yet encoded
    uint64_t kv_room_ = 0;          // on-demand: KV slots admission may still give in this step
};

}  // namespace basalt::engine
