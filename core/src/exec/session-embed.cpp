// Session::embed: embedding passes of encoder-only models (docs/embeddings.md). Whole inputs are packed into
// ragged encoder passes (no padding: each input attends over its own rows), every row's final hidden state is read
// back, and with a rank head each input's scores.
#include <algorithm>
#include <unordered_map>

#include "exec/session.hpp"
#include "model/model.hpp"
#include "support/error.hpp"

namespace basalt {

void Session::embed(const basalt_batch& batch, std::vector<float>& rows_out, std::vector<float>* scores) {
    const ModelHparams& hp = model_.hparams;
    if (!hp.encoder_only) {
        fail(BASALT_ERR_UNSUPPORTED, "embed: '{}' is not an encoder-only embedding model", hp.arch);
    }
    if (scores != nullptr && hp.n_cls_out == 0) {
        fail(BASALT_ERR_UNSUPPORTED, "embed: '{}' has no rank head (cls.output.weight or cls.weight)", hp.arch);
    }
    if (batch.struct_size < offsetof(basalt_batch, seq_ids) + sizeof(batch.seq_ids)) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_batch.struct_size {} is too small", batch.struct_size);
    }
    if (batch.n_tokens == 0) fail(BASALT_ERR_INVALID_ARGUMENT, "embed: empty batch");
    if (batch.tokens == nullptr || batch.positions == nullptr || batch.seq_ids == nullptr) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "embed: the batch needs tokens, positions and seq_ids");
    }
    // Everything is checked before any work: ids, whole inputs (positions 0..n-1 in order), lengths. The caller's
    // sequence ids only group rows: they are numbered 0..k-1 in order of first appearance (`dense`).
    std::vector<std::vector<size_t>> rows;
    std::unordered_map<int32_t, size_t> dense;
    const uint32_t limit =
        hp.learned_positions && hp.n_ctx_train != 0 ? std::min(res_.n_ctx, hp.n_ctx_train) : res_.n_ctx;
    for (size_t i = 0; i < batch.n_tokens; ++i) {
        const int32_t tok = batch.tokens[i], seq = batch.seq_ids[i], pos = batch.positions[i];
        if (tok < 0 || static_cast<uint32_t>(tok) >= hp.n_vocab) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "embed: token {} = {} is not in the vocabulary (0..{})", i, tok,
                 hp.n_vocab - 1);
        }
        if (seq < 0) fail(BASALT_ERR_INVALID_ARGUMENT, "embed: token {} has sequence id {}", i, seq);
        const auto [it, added] = dense.try_emplace(seq, rows.size());
        if (added) rows.emplace_back();
        auto& r = rows[it->second];
        if (pos < 0 || static_cast<size_t>(pos) != r.size()) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "embed: token {} of sequence {} has position {}, expected {}", i, seq,
                 pos, r.size());
        }
        r.push_back(i);
        if (r.size() > limit) {
            fail(BASALT_ERR_CAPACITY, "embed: the input of sequence {} is longer than the context of {} tokens", seq,
                 limit);
        }
    }
    std::vector<int32_t> order(rows.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = static_cast<int32_t>(k);
    std::vector<float> pass_rows;
    std::vector<int32_t> pass;
    size_t in_pass = 0;
    for (size_t k = 0; k <= order.size(); ++k) {
        const size_t len = k < order.size() ? rows[static_cast<size_t>(order[k])].size() : 0;
        if (!pass.empty() && (k == order.size() || in_pass + len > res_.n_batch)) {
            embed_pass(batch, pass, rows, pass_rows, scores);
            pass.clear();
            in_pass = 0;
        }
        if (k < order.size()) {
            pass.push_back(order[k]);
            in_pass += len;
        }
    }
    // Passes hold the inputs one after another: back to batch order.
    const size_t E = hp.n_embd;
    std::vector<float> out(batch.n_tokens * E);
    size_t src = 0;
    for (int32_t s : order) {
        for (size_t i : rows[static_cast<size_t>(s)]) {
            std::copy_n(pass_rows.data() + src * E, E, out.data() + i * E);
            ++src;
        }
    }
    rows_out = std::move(out);
}

void Session::embed_pass(const basalt_batch& batch, const std::vector<int32_t>& seqs,
                         const std::vector<std::vector<size_t>>& rows, std::vector<float>& pass_rows,
                         std::vector<float>* scores) {
    // Pass-local sequence ids 0..k-1: an encoder-only session holds no sequences, so its id table only has to be
    // as long as the largest pass.
    if (state_.seq_len.size() < seqs.size()) state_.seq_len.resize(seqs.size(), 0);
    enc_tokens_.clear();
    enc_positions_.clear();
    enc_seqs_.clear();
    for (size_t k = 0; k < seqs.size(); ++k) {
        const auto& r = rows[static_cast<size_t>(seqs[k])];
        for (size_t i = 0; i < r.size(); ++i) {
            enc_tokens_.push_back(batch.tokens[r[i]]);
            enc_positions_.push_back(static_cast<int32_t>(i));
            enc_seqs_.push_back(static_cast<int32_t>(k));
        }
    }
    step_.set_rows(true, enc_tokens_.size(), enc_tokens_.data(), enc_positions_.data(), enc_seqs_.data());
    step_.want_logits = nullptr;
    step_.reservation = nullptr;
    step_.logits = nullptr;
    step_.embd = &pass_rows;
    step_.scores = scores;
    step_.rank = scores != nullptr;
    try {
        graph_.prepare(step_);
        const basalt_status st = graph_.compute(step_);
        if (st != BASALT_OK) {
            fail(st, "backend '{}': graph_compute (embeddings): {}", config_.backend,
                 plugin_error_message().empty() ? std::string(status_name(st)) : plugin_error_message());
        }
        graph_.read_back(step_);
    } catch (...) {
        step_.embd = nullptr;
        step_.scores = nullptr;
        step_.rank = false;
        throw;
    }
    step_.embd = nullptr;
    step_.scores = nullptr;
    step_.rank = false;
}

}  // namespace basalt
