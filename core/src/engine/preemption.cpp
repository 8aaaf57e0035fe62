// Admission by real KV use, with preemption (docs/engine.md "Admission and preemption"): requests start while the
// blocks they need now are free; when a step's rows need more blocks than are free, the newest running requests are
// preempted: their sequences are dropped and they wait at the front of the queue with their decoder, chains, plan
// and output untouched. Admitted again, they first recompute what their sequences held (the prefix cache gives back
// the blocks still cached), then their decoder goes on as if nothing happened.
#include <algorithm>

#include "engine/engine.hpp"
#include "support/error.hpp"
#include "support/log.hpp"

namespace basalt::engine {
namespace {

uint64_t blocks(uint64_t n, uint64_t bs) {
    return (n + bs - 1) / bs;
}

bool live(const Request& r) {
    return r.planned && r.done == BASALT_FINISH_NONE;
}

// Ends a restore: the request's own plan (saved when the restore began) back in place, the restore's lists gone.
void put_back_plan(Request& r) {
    r.feeds = std::move(r.kv.saved_feeds);
    r.fed = std::move(r.kv.saved_fed);
    r.cached = std::move(r.kv.saved_cached);
    r.logits = std::move(r.kv.saved_logits);
    r.direct.assign(r.feeds.size(), nullptr);
    r.direct_rows.assign(r.feeds.size(), 0);
    for (auto& per_model : r.kv.restore) per_model.clear();
    r.kv.restoring = false;
}

}  // namespace

bool Engine::resolve_on_demand(const EngineConfig& config) const {
    if (config.reserve_admission) return false;
    // Sources are encoded once at admission (no recomputation of cross rows); a streaming cache gives each sequence
    // a fixed region (nothing to share out); a residual window makes a recomputed prefill read units quantized that
    // decoding read in F32, so the recomputed K/V would differ.
    if (model_.hparams.encoder_decoder) return false;
    for (const auto& s : sessions_) {
        if (s && (s->streaming() || s->residual_window() != 0)) return false;
    }
    return true;
}

uint64_t Engine::free_blocks(int m) const {
    return sessions_[m]->free_slots() / std::max<uint32_t>(1, sessions_[m]->block_size());
}

uint64_t Engine::free_positions(int m) const {
    uint64_t held = 0;
    for (const auto& r : running_) {
        for (const int32_t s : r->seq_ids[m]) held += sessions_[m]->seq_length(s);
    }
    return n_kv_slots_ - std::min<uint64_t>(n_kv_slots_, held);
}

bool Engine::step_fits(int m, const std::vector<StepRow>& rows) const {
    if (rows.empty()) return true;
    uint64_t tokens = 0;
    for (const StepRow& row : rows) tokens += row.count;
    return step_blocks(m, rows) <= free_blocks(m) && tokens <= free_positions(m);
}

uint64_t Engine::step_blocks(int m, const std::vector<StepRow>& rows) const {
    const uint64_t bs = std::max<uint32_t>(1, sessions_[m]->block_size());
    // Tokens per (request, sequence): a plan may feed one sequence twice.
    struct Grow {
        const Request* r;
        int32_t seq;
        uint64_t n;
    };
    std::vector<Grow> grow;
    for (const StepRow& row : rows) {
        const int32_t seq = row.r->feeds[row.feed].seq;
        auto it = std::find_if(grow.begin(), grow.end(), [&](const Grow& g) { return g.r == row.r && g.seq == seq; });
        if (it == grow.end()) {
            grow.push_back({row.r, seq, row.count});
        } else {
            it->n += row.count;
        }
    }
    uint64_t need = 0;
    for (const Grow& g : grow) {
        const uint64_t len = sessions_[m]->seq_length(g.r->seq_ids[m][static_cast<size_t>(g.seq)]);
        need += blocks(len + g.n, bs) - blocks(len, bs);
        if (g.r->kv.forked && len % bs != 0) need += 1;  // the shared partial block may be copied first
    }
    return need;
}

uint64_t Engine::admission_room() const {
    std::vector<StepRow> rows[2];
    scheduler_.pack(running_, rows);
    uint64_t room = UINT64_MAX;
    for (int m = 0; m < 2; ++m) {
        if (!sessions_[m]) continue;
        const uint64_t free = free_blocks(m), need = step_blocks(m, rows[m]);
        room = std::min(room, (free - std::min(free, need)) * sessions_[m]->block_size());
        uint64_t tokens = 0;
        for (const StepRow& row : rows[m]) tokens += row.count;
        const uint64_t positions = free_positions(m);
        room = std::min(room, positions - std::min(positions, tokens));
    }
    return room;
}

bool Engine::preemptible(const Request& r) const {
    if (!live(r)) return false;
    for (int m = 0; m < 2; ++m) {
        for (size_t s = 0; s < r.seq_ids[m].size(); ++s) {
            const size_t held = s < r.kv.held[m].size() ? r.kv.held[m][s].size() : 0;
            if (held != sessions_[m]->seq_length(r.seq_ids[m][s])) return false;
        }
    }
    return true;
}

void Engine::make_room(std::vector<StepRow> (&rows)[2]) {
    if (!on_demand_) return;
    for (;;) {
        if (step_fits(0, rows[0]) && (!sessions_[1] || step_fits(1, rows[1]))) return;
        // The newest live request (by arrival) other than the oldest one.
        const Request* oldest = nullptr;
        std::shared_ptr<Request> victim;
        for (const auto& r : running_) {
            if (!live(*r)) continue;
            if (oldest == nullptr || r->id < oldest->id) oldest = r.get();
        }
        for (const auto& r : running_) {
            if (r.get() == oldest || !preemptible(*r)) continue;
            if (!victim || r->id > victim->id) victim = r;
        }
        if (!victim) {
            log::debug("engine: the step needs more KV blocks than are free and no request can be preempted");
            return;
        }
        preempt(victim);
        rows[0].clear();
        rows[1].clear();
        scheduler_.pack(running_, rows);
    }
}

void Engine::preempt(const std::shared_ptr<Request>& rp) {
    Request& r = *rp;
    if (r.kv.restoring) undo_restore(r);
    for (int m = 0; m < 2; ++m) {
        for (const int32_t s : r.seq_ids[m]) {
            if (sessions_[m]->seq_length(s) > 0) sessions_[m]->seq_drop(s);
        }
    }
    if (r.steer_slot >= 0) {
        sessions_[0]->steer_release(r.steer_slot);
        r.steer_slot = -1;
    }
    r.kv.preempted = true;
    r.kv.count += 1;
    // A plan's rows copied so far stay (their tokens are among the held ones, recomputed before it goes on).
    running_.erase(std::find(running_.begin(), running_.end(), rp));
    std::lock_guard lock(mutex_);
    scheduler_.release(r);
    // Ahead of every request not yet admitted (all of them arrived later), behind older preempted ones.
    const auto at = std::find_if(queue_.begin(), queue_.end(), [&](const auto& q) { return q->id > r.id; });
    queue_.insert(at, rp);
    stats_.preemptions += 1;
    stats_.queued = queue_.size();
    stats_.running = running_.size();
    log::debug("engine: request {} preempted (its {} held tokens are recomputed when it is admitted again)", r.id,
               r.kv.held[0].empty() ? 0 : r.kv.held[0][0].size());
}

void Engine::begin_restore(Request& r) {
    std::stable_sort(running_.begin(), running_.end(), [](const auto& a, const auto& b) { return a->id < b->id; });
    r.kv.preempted = false;
    r.kv.saved_feeds = std::move(r.feeds);
    r.kv.saved_fed = std::move(r.fed);
    r.kv.saved_cached = std::move(r.cached);
    r.kv.saved_logits = std::move(r.logits);
    r.feeds.clear();
    for (int m = 0; m < 2; ++m) {
        r.kv.restore[m] = std::move(r.kv.held[m]);
        r.kv.held[m].clear();
        for (size_t s = 0; s < r.kv.restore[m].size(); ++s) {
            const auto& tokens = r.kv.restore[m][s];
            if (tokens.empty()) continue;
            basalt_decoder_feed f{};
            f.model = m;
            f.seq = static_cast<int32_t>(s);
            f.tokens = tokens.data();
            f.n_tokens = tokens.size();
            f.logits = BASALT_DECODER_LOGITS_NONE;
            r.feeds.push_back(f);
        }
    }
    const size_t n = r.feeds.size();
    r.fed.assign(n, 0);
    r.cached.assign(n, 0);
    r.logits.assign(n, {});
    r.direct.assign(n, nullptr);
    r.direct_rows.assign(n, 0);
    r.kv.restoring = true;
    r.planned = true;
    if (config_.prefix_cache) {
        // Whole blocks still cached come back without compute (none need logits, so every token may match).
        for (size_t f = 0; f < n; ++f) {
            const basalt_decoder_feed& feed = r.feeds[f];
            const int32_t sid = r.seq_ids[feed.model][static_cast<size_t>(feed.seq)];
            const uint32_t matched = sessions_[feed.model]->prefix_attach(sid, feed.tokens, feed.n_tokens);
            r.fed[f] = r.cached[f] = matched;
            r.kv.tokens(feed.model, feed.seq).assign(feed.tokens, feed.tokens + matched);
        }
    }
    end_restore(r);  // nothing left to compute (everything was cached, or nothing was held)
}

bool Engine::end_restore(Request& r) {
    for (size_t f = 0; f < r.feeds.size(); ++f) {
        if (r.fed[f] != r.feeds[f].n_tokens) return false;
    }
    put_back_plan(r);
    return true;
}

void Engine::undo_restore(Request& r) {
    // The full list of held tokens is the one being recomputed (what is held so far is a prefix of it).
    for (int m = 0; m < 2; ++m) r.kv.held[m] = std::move(r.kv.restore[m]);
    put_back_plan(r);
}

uint64_t Engine::held_slots() const {
    const uint64_t bs = std::max<uint32_t>(1, sessions_[0]->block_size());
    uint64_t held = 0;
    for (const auto& r : running_) {
        for (const int32_t s : r->seq_ids[0]) held += blocks(sessions_[0]->seq_length(s), bs) * bs;
    }
    return held;
}

}  // namespace basalt::engine
