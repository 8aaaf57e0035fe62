// The batches of a step: one ragged decoder batch per model from the scheduler's rows (their logits handed to the
// requests' plans), and for encoder-decoder models one ragged encoder batch of the newly started sources.
#include "engine/engine.hpp"
#include "support/error.hpp"

namespace basalt::engine {
namespace {

double ms_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
}

bool wants_logits(const basalt_decoder_feed& f, size_t k) {
    return f.logits == BASALT_DECODER_LOGITS_ALL || (f.logits == BASALT_DECODER_LOGITS_LAST && k + 1 == f.n_tokens);
}

}  // namespace

void Engine::forward(int m, const std::vector<StepRow>& rows, ForwardResult& result) {
    std::vector<int32_t> tokens, positions, seqs;
    std::vector<int8_t> want;
    for (const StepRow& row : rows) {
        const basalt_decoder_feed& f = row.r->feeds[row.feed];
        const int32_t sid = row.r->seq_ids[m][static_cast<size_t>(f.seq)];
        const uint32_t base = sessions_[m]->seq_length(sid);
        for (size_t i = 0; i < row.count; ++i) {
            const size_t k = row.first + i;
            tokens.push_back(f.tokens[k]);
            positions.push_back(static_cast<int32_t>(base + i));
            seqs.push_back(sid);
            want.push_back(wants_logits(f, k) ? 1 : 0);
        }
    }
    basalt_batch b{};
    b.struct_size = sizeof(b);
    b.n_tokens = tokens.size();
    b.tokens = tokens.data();
    b.positions = positions.data();
    b.seq_ids = seqs.data();
    b.want_logits = want.data();
    result.step_tokens += tokens.size();
    const Clock::time_point t0 = Clock::now();
    try {
        sessions_[m]->decode(b);
    } catch (const Error& e) {
        result.status = e.status();
        result.error = fmt::format("forward of model {} failed: {}", m, e.what());
        for (const StepRow& row : rows) finish(*row.r, BASALT_FINISH_ERROR, result.error);
        return;
    }
    observe_forward(m, ms_between(t0, Clock::now()));
    collect_logits(m, rows);
    for (const StepRow& row : rows) {
        if (row.r->feeds[row.feed].n_tokens > 1) result.prefill_tokens += row.count;
    }
}

// The logits rows of the last decode of model m to the feeds that asked for them; the feeds advance.
void Engine::collect_logits(int m, const std::vector<StepRow>& rows) {
    size_t out = 0;
    const size_t nv = n_vocab();
    for (const StepRow& row : rows) {
        Request& r = *row.r;
        const basalt_decoder_feed& f = r.feeds[row.feed];
        for (size_t i = 0; i < row.count; ++i) {
            if (!wants_logits(f, row.first + i)) continue;
            const float* l = sessions_[m]->logits(out++);
            if (row.first == r.cached[row.feed] && row.first + row.count == f.n_tokens) {
                // The whole feed is in this step: its rows are contiguous in the session's logits, which stay valid
                // until that session's next decode (after consume).
                if (i == 0 || f.logits == BASALT_DECODER_LOGITS_LAST) r.direct[row.feed] = l;
                r.direct_rows[row.feed] += 1;
            } else {
                r.logits[row.feed].insert(r.logits[row.feed].end(), l, l + nv);
            }
        }
        r.fed[row.feed] += row.count;
        auto& held = r.kv.tokens(m, f.seq);
        held.insert(held.end(), f.tokens + row.first, f.tokens + row.first + row.count);
    }
}

void Engine::encode_sources(const std::vector<std::shared_ptr<Request>>& started,
                            std::vector<std::shared_ptr<Request>>& touched) {
    std::vector<Request*> batch_of;
    std::vector<int32_t> toks, pos, seqs;
    for (const auto& rp : started) {
        Request& r = *rp;
        if (r.encoded || r.spec.source.empty()) continue;
        scheduler_.source_encoded(r.spec.source.size());
        if (r.done != BASALT_FINISH_NONE || r.seq_ids[0].empty()) continue;
        batch_of.push_back(&r);
        for (size_t i = 0; i < r.spec.source.size(); ++i) {
            toks.push_back(r.spec.source[i]);
            pos.push_back(static_cast<int32_t>(i));
            seqs.push_back(r.seq_ids[0][0]);
        }
    }
    if (batch_of.empty()) return;
    basalt_batch b{};
    b.struct_size = sizeof(b);
    b.n_tokens = toks.size();
    b.tokens = toks.data();
    b.positions = pos.data();
    b.seq_ids = seqs.data();
    const Clock::time_point t0 = Clock::now();
    try {
        sessions_[0]->encode(b);
    } catch (const Error& e) {
        for (Request* r : batch_of) {
            finish(*r, BASALT_FINISH_ERROR, fmt::format("encoder: {}", e.what()));
            for (const auto& rp : started)
                if (rp.get() == r) touched.push_back(rp);
        }
        return;
    }
    // Each request's share of the ragged encoder batch, by its source tokens.
    const double ms = ms_between(t0, Clock::now());
    for (Request* r : batch_of) {
        r->encoded = true;
        std::lock_guard lock(r->mutex);
        r->encode_ms = ms * static_cast<double>(r->spec.source.size()) / static_cast<double>(toks.size());
    }
}

}  // namespace basalt::engine
