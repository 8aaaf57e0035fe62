// The engine's side of scheduling: queued requests admitted by the scheduler get their sequences' salts and
// steering in the sessions; finished ones drop their sequences and give their room back.
#include <utility>

#include "engine/engine.hpp"
#include "support/error.hpp"
#include "support/log.hpp"

namespace basalt::engine {

std::vector<std::shared_ptr<Request>> Engine::admit_queued(std::vector<std::shared_ptr<Request>>& touched) {
    std::lock_guard lock(mutex_);
    for (auto& r : scheduler_.take_cancelled(queue_)) {
        finish(*r, BASALT_FINISH_CANCELLED);
        touched.push_back(std::move(r));
    }
    // Cross-attention rows are the session's only for encoder-decoder models (the only ones with sources).
    const uint64_t source_rows = model_.hparams.encoder_decoder ? sessions_[0]->free_source_rows() : 0;
    std::vector<std::shared_ptr<Request>> started;
    if (on_demand_) scheduler_.set_kv_room(admission_room());
    // A refused admission (the scheduler has undone it) finishes that request with the error and leaves the queue
    // moving: left at the front, it would be retried, and refused, at every step.
    for (;;) {
        try {
            auto more = scheduler_.admit(queue_, running_, source_rows, [this](Request& r) { admit(r); });
            started.insert(started.end(), more.begin(), more.end());
            break;
        } catch (const std::exception& e) {
            auto r = queue_.front();
            queue_.pop_front();
            log::warn("engine: request {} refused at admission: {}", r->id, e.what());
            finish(*r, BASALT_FINISH_ERROR, fmt::format("admission: {}", e.what()));
            r->release_plugin_objects();
            touched.push_back(std::move(r));
        }
    }
    stats_.queued = queue_.size();
    return started;
}

void Engine::admit(Request& r) {
    for (int m = 0; m < 2; ++m) {
        for (int32_t sid : r.seq_ids[m]) sessions_[m]->seq_set_salt(sid, r.spec.cache_salt);
    }
    // Steering applies to the target model (0) only: a draft stays a plain proposer, verified against the steered
    // target. The vectors go to the device once, here.
    if (!r.steer_vectors.empty()) {
        r.steer_slot = sessions_[0]->steer_acquire(r.steer_vectors, r.steer_layers);
        for (int32_t sid : r.seq_ids[0]) sessions_[0]->seq_set_steer(sid, r.steer_slot);
    }
    std::lock_guard lock(r.mutex);
    if (r.has_admitted) return;  // admitted again after a preemption: the queue time ended the first time
    r.admitted = Clock::now();
    r.has_admitted = true;
}

void Engine::release(Request& r) {
    for (int m = 0; m < 2; ++m) {
        for (int32_t s : r.seq_ids[m]) {
            try {
                if (sessions_[m]->seq_length(s) > 0 || sessions_[m]->seq_source_length(s) > 0)
                    sessions_[m]->seq_drop(s);
            } catch (const Error& e) {
                log::warn("engine: dropping sequence {} of request {}: {}", s, r.id, e.what());
            }
        }
    }
    if (r.steer_slot >= 0) {
        sessions_[0]->steer_release(r.steer_slot);  // also clears the slot of its sequences
        r.steer_slot = -1;
    }
    scheduler_.release(r);
    r.release_plugin_objects();  // now, not when the caller frees the handle
}

void Engine::retire(std::vector<std::shared_ptr<Request>>& touched) {
    std::lock_guard lock(mutex_);
    for (auto it = running_.begin(); it != running_.end();) {
        if ((*it)->done != BASALT_FINISH_NONE) {
            release(**it);
            touched.push_back(*it);
            stats_.finished += 1;
            it = running_.erase(it);
        } else {
            ++it;
        }
    }
    stats_.running = running_.size();
    stats_.queued = queue_.size();
    if (on_demand_) kv_held_ = held_slots();
    stats_.generated_tokens += std::exchange(step_generated_, 0);  // what this step's consumes emitted
    // The sessions are the loop thread's: their checkpoint figures are copied here for stats() on any thread.
    stats_.state_checkpoints = sessions_[0]->state_checkpoints().count();
    stats_.state_checkpoint_bytes = sessions_[0]->state_checkpoints().bytes();
}

}  // namespace basalt::engine
