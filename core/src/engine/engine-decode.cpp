// A request's decoder through its life in the engine: begin, plan (checked before it reaches a shared batch),
// consume the rows of a completed plan, plan again, finish.
#include <algorithm>

#include "engine/decoder-host.hpp"
#include "engine/engine.hpp"
#include "host/host-services.hpp"
#include "support/error.hpp"

namespace basalt::engine {

void Engine::finish(Request& r, int32_t reason, const std::string& error) {
    if (r.done != BASALT_FINISH_NONE) return;
    r.done = reason;
    std::string tail = r.text.flush();
    std::lock_guard lock(r.mutex);
    r.unread_text += tail;
    r.new_text += tail;
    r.error = error;
    r.finished_at = Clock::now();
}

bool Engine::start(Request& r) {
    if (r.spec.max_tokens == 0) {
        finish(r, BASALT_FINISH_LENGTH);
        return false;
    }
    make_decoder_host(r);
    basalt_decoder_request dr{};
    dr.struct_size = sizeof(dr);
    dr.prompt = r.spec.prompt.data();
    dr.n_prompt = r.spec.prompt.size();
    dr.max_tokens = r.spec.max_tokens < 0 ? static_cast<int32_t>(n_ctx_) : r.spec.max_tokens;
    dr.seed = r.spec.seed;
    if (dr.seed < 0) {  // the chain's own dist seed, so a seeded chain reproduces a decoder's draws too
        if (const auto seed = r.chain_spec.dist_seed()) dr.seed = *seed;
    }
    if (r.chains[0]->ends_greedy()) dr.chain_flags |= BASALT_DECODER_CHAIN_GREEDY;
    clear_plugin_error();
    if (const basalt_status st = r.dec.begin(r.dec_instance, &r.host, &dr); st != BASALT_OK) {
        finish(r, BASALT_FINISH_ERROR, fmt::format("decoder '{}': begin: {}", r.spec.decoder, plugin_error_message()));
        return false;
    }
    if (!replan(r)) return false;
    if (config_.prefix_cache) attach_prefixes(r);
    return true;
}

void Engine::attach_prefixes(Request& r) {
    uint64_t hit = 0;
    for (size_t f = 0; f < r.feeds.size(); ++f) {
        const basalt_decoder_feed& feed = r.feeds[f];
        // A prompt feed of a fresh sequence, whose rows (but the last) need no logits: the last token is always
        // computed, so the decoder gets its logits.
        if (feed.n_tokens < 2 || feed.logits == BASALT_DECODER_LOGITS_ALL) continue;
        const int32_t sid = r.seq_ids[feed.model][static_cast<size_t>(feed.seq)];
        Session& s = *sessions_[feed.model];
        if (s.seq_length(sid) != 0) continue;
        const uint32_t matched = s.prefix_attach(sid, feed.tokens, feed.n_tokens - 1);
        r.fed[f] = r.cached[f] = matched;
        r.kv.tokens(feed.model, feed.seq).assign(feed.tokens, feed.tokens + matched);
        if (feed.model == 0) hit = std::max<uint64_t>(hit, matched);
    }
    {
        std::lock_guard lock(r.mutex);
        r.cached_tokens = hit;
    }
    std::lock_guard lock(mutex_);
    stats_.cached_tokens += hit;
}

bool Engine::replan(Request& r) {
    if (r.finish_pending == BASALT_FINISH_NONE && r.cancel.load()) r.finish_pending = BASALT_FINISH_CANCELLED;
    if (r.finish_pending != BASALT_FINISH_NONE) {
        finish(r, r.finish_pending);
        return false;
    }
    r.feeds.assign(std::max<size_t>(r.feeds.capacity(), 4), basalt_decoder_feed{});
    basalt_decoder_plan plan{};
    plan.struct_size = sizeof(plan);
    plan.feeds = r.feeds.data();
    plan.capacity = r.feeds.size();
    int32_t why = BASALT_FINISH_NONE;
    clear_plugin_error();
    basalt_status st = r.dec.plan(r.dec_instance, &plan, &why);
    if (st == BASALT_ERR_CAPACITY && plan.n_feeds > plan.capacity) {
        r.feeds.assign(plan.n_feeds, basalt_decoder_feed{});
        plan.feeds = r.feeds.data();
        plan.capacity = r.feeds.size();
        plan.n_feeds = 0;
        clear_plugin_error();
        st = r.dec.plan(r.dec_instance, &plan, &why);
    }
    if (st != BASALT_OK) {
        finish(r, BASALT_FINISH_ERROR, fmt::format("decoder '{}': plan: {}", r.spec.decoder, plugin_error_message()));
        return false;
    }
    if (r.finish_pending != BASALT_FINISH_NONE) why = r.finish_pending;  // a stop condition the decoder saw
    if (plan.n_feeds == 0) {
        finish(r, why == BASALT_FINISH_NONE ? BASALT_FINISH_STOP : why);
        return false;
    }
    r.feeds.resize(plan.n_feeds);
    r.fed.assign(plan.n_feeds, 0);
    r.cached.assign(plan.n_feeds, 0);
    r.logits.resize(plan.n_feeds);
    for (auto& l : r.logits) l.clear();
    r.direct.assign(plan.n_feeds, nullptr);
    r.direct_rows.assign(plan.n_feeds, 0);
    return check_plan(r);
}

// Checks every feed now, so a bad one fails this request and never a shared batch.
bool Engine::check_plan(Request& r) {
    for (const auto& f : r.feeds) {
        try {
            const int32_t sid = session_seq(r, f.model, f.seq);
            if (f.n_tokens == 0 || f.tokens == nullptr) fail(BASALT_ERR_PLUGIN, "a feed without tokens");
            for (size_t i = 0; i < f.n_tokens; ++i) {
                if (f.tokens[i] < 0 || static_cast<size_t>(f.tokens[i]) >= n_vocab()) {
                    fail(BASALT_ERR_PLUGIN, "feed token {} is outside the vocabulary", f.tokens[i]);
                }
            }
            // A streaming cache (attention sinks) evicts instead: its sequences never reach a context limit.
            if (sessions_[f.model]->seq_length(sid) + f.n_tokens > n_ctx_ && !sessions_[f.model]->streaming()) {
                finish(r, BASALT_FINISH_CONTEXT);
                return false;
            }
        } catch (const Error& e) {
            finish(r, BASALT_FINISH_ERROR, fmt::format("decoder '{}': plan: {}", r.spec.decoder, e.what()));
            return false;
        }
    }
    r.planned = true;
    return true;
}

void Engine::consume_ready(std::vector<std::shared_ptr<Request>>& touched) {
    for (auto& rp : running_) {
        Request& r = *rp;
        if (!r.planned || r.done != BASALT_FINISH_NONE) continue;
        if (r.kv.restoring) {
            end_restore(r);  // recomputed after a preemption: the decoder's plan goes on next step
            continue;
        }
        bool done = true;
        for (size_t f = 0; f < r.feeds.size(); ++f) done = done && r.fed[f] == r.feeds[f].n_tokens;
        if (!done) {
            // A feed finished in this step while another of the plan waits (two models' prompts under a small
            // budget): its rows are the session's own only until that session's next decode, so keep a copy.
            for (size_t f = 0; f < r.feeds.size(); ++f) {
                if (r.direct[f] == nullptr) continue;
                r.logits[f].assign(r.direct[f], r.direct[f] + r.direct_rows[f] * n_vocab());
                r.direct[f] = nullptr;
                r.direct_rows[f] = 0;
            }
            continue;
        }
        touched.push_back(rp);
        r.planned = false;
        std::vector<basalt_decoder_result> results(r.feeds.size());
        for (size_t f = 0; f < r.feeds.size(); ++f) {
            if (r.direct[f] != nullptr) {
                results[f].logits = r.direct[f];
                results[f].n_rows = r.direct_rows[f];
            } else {
                results[f].logits = r.logits[f].empty() ? nullptr : r.logits[f].data();
                results[f].n_rows = r.logits[f].size() / n_vocab();
            }
        }
        clear_plugin_error();
        const basalt_status st = r.dec.consume(r.dec_instance, results.data(), results.size());
        if (st != BASALT_OK && st != BASALT_ERR_CANCELLED) {
            const std::string msg = plugin_error_message().empty() ? last_error() : plugin_error_message();
            finish(r, BASALT_FINISH_ERROR, fmt::format("decoder '{}': consume: {}", r.spec.decoder, msg));
            continue;
        }
        replan(r);
    }
}

}  // namespace basalt::engine
