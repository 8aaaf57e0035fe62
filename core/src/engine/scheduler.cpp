// Admission and step packing (see scheduler.hpp).
#include "engine/scheduler.hpp"

#include <algorithm>

namespace basalt::engine {
namespace {

uint64_t round_up(uint64_t x, uint64_t m) {
    return (x + m - 1) / m * m;
}

bool live(const Request& r) {
    return r.planned && r.done == BASALT_FINISH_NONE;
}

}  // namespace

Scheduler::Scheduler(const SchedulerLimits& limits) : limits_(limits) {
    limits_.block_size = std::max<uint32_t>(1, limits_.block_size);
    for (int m = 0; m < (limits_.second_model ? 2 : 1); ++m) {
        for (uint32_t s = limits_.n_seq_max; s-- > 0;) free_seqs_[m].push_back(static_cast<int32_t>(s));
    }
}

uint32_t Scheduler::seqs_needed(const Request& r, int model) const {
    return model == 0 ? r.info.n_seq : (r.info.n_models > 1 ? r.info.n_seq : 0);
}

uint64_t Scheduler::worst_case_slots(const Request& r) const {
    const uint64_t n_ctx = limits_.n_ctx;
    const uint64_t len =
        r.spec.max_tokens < 0 ? n_ctx : std::min<uint64_t>(n_ctx, r.spec.prompt.size() + r.spec.max_tokens);
    // A snapshot shares its sequence's blocks copy-on-write: it holds one block of its own at most (the partial
    // last block, copied when the live sequence writes into it).
    const uint64_t live = r.info.n_seq - r.n_snapshot_seq;
    return live * round_up(len, limits_.block_size) + uint64_t{r.n_snapshot_seq} * limits_.block_size;
}

bool Scheduler::admissible(const Request& r, size_t n_running, uint64_t free_source_rows) const {
    if (n_running >= limits_.n_parallel) return false;
    for (int m = 0; m < 2; ++m) {
        if (free_seqs_[m].size() < seqs_needed(r, m)) return false;
    }
    // Encoder-decoder: room for the source's cross-attention rows too.
    if (!r.spec.source.empty() && source_reserved_ + r.spec.source.size() > free_source_rows) return false;
    // On demand: the first request always starts (submit refused any that alone exceeds the cache).
    if (limits_.on_demand) return n_running == 0 || slots_needed_now(r) <= kv_room_;
    return kv_reserved_ + worst_case_slots(r) <= limits_.n_kv_slots;
}

std::vector<std::shared_ptr<Request>> Scheduler::take_cancelled(std::deque<std::shared_ptr<Request>>& queue) const {
    std::vector<std::shared_ptr<Request>> cancelled;
    for (auto it = queue.begin(); it != queue.end();) {
        if ((*it)->cancel.load()) {
            cancelled.push_back(*it);
            it = queue.erase(it);
        } else {
            ++it;
        }
    }
    return cancelled;
}

std::vector<std::shared_ptr<Request>> Scheduler::admit(std::deque<std::shared_ptr<Request>>& queue,
                                                       std::vector<std::shared_ptr<Request>>& running,
                                                       uint64_t free_source_rows,
                                                       const std::function<void(Request&)>& on_admit) {
    std::vector<std::shared_ptr<Request>> started;
    while (!queue.empty() && admissible(*queue.front(), running.size(), free_source_rows)) {
        Request& r = *queue.front();
        for (int m = 0; m < 2; ++m) {
            for (uint32_t i = seqs_needed(r, m); i > 0; --i) {
                r.seq_ids[m].push_back(free_seqs_[m].back());
                free_seqs_[m].pop_back();
            }
        }
        if (!r.spec.source.empty()) source_reserved_ += r.spec.source.size();
        if (limits_.on_demand) {
            kv_room_ -= std::min(kv_room_, slots_needed_now(r));
        } else {
            r.kv_reserved = worst_case_slots(r);
            kv_reserved_ += r.kv_reserved;
        }
        try {
            on_admit(r);
        } catch (...) {
            if (!r.spec.source.empty()) source_encoded(r.spec.source.size());
            release(r);
            throw;
        }
        running.push_back(queue.front());
        started.push_back(queue.front());
        queue.pop_front();
    }
    return started;
}

void Scheduler::release(Request& r) {
    for (int m = 0; m < 2; ++m) {
        for (const int32_t s : r.seq_ids[m]) free_seqs_[m].push_back(s);
        r.seq_ids[m].clear();
    }
    kv_reserved_ -= r.kv_reserved;
    r.kv_reserved = 0;
}

void Scheduler::source_encoded(size_t rows) {
    source_reserved_ -= std::min<uint64_t>(source_reserved_, rows);
}

void Scheduler::pack(const std::vector<std::shared_ptr<Request>>& running, std::vector<StepRow> (&rows)[2]) const {
    uint64_t budget = limits_.max_batch_tokens;
    // A one-token feed is a decode: only the first pass takes it (a later step if the budget ran out).
    for (const auto& rp : running) {
        Request& r = *rp;
        if (!live(r)) continue;
        for (size_t f = 0; f < r.feeds.size() && budget > 0; ++f) {
            if (r.feeds[f].n_tokens != 1 || r.fed[f] != 0) continue;
            rows[r.feeds[f].model].push_back({&r, f, 0, 1});
            budget -= 1;
        }
    }
    bool prefill_taken = false;
    for (const auto& rp : running) {
        Request& r = *rp;
        if (!live(r)) continue;
        for (size_t f = 0; f < r.feeds.size(); ++f) {
            const size_t left = r.feeds[f].n_tokens - r.fed[f];
            if (left == 0 || r.feeds[f].n_tokens == 1) continue;
            size_t n = 0;
            if (limits_.prefill_chunk == 0) {
                if (left <= budget || !prefill_taken) n = left;  // whole prompts, never split
            } else {
                n = std::min<uint64_t>({left, limits_.prefill_chunk, budget});
            }
            if (n == 0) continue;
            rows[r.feeds[f].model].push_back({&r, f, r.fed[f], n});
            budget -= std::min<uint64_t>(budget, n);
            prefill_taken = true;
        }
    }
}

}  // namespace basalt::engine
