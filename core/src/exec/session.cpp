#include "exec/session.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "exec/sampler-chain.hpp"
#include "host/host-services.hpp"
#include "model/dtype.hpp"
#include "model/model.hpp"
#include "support/error.hpp"
#include "support/host-memory.hpp"
#include "support/log.hpp"
#include "support/progress.hpp"

namespace basalt {
namespace {

// Splits "NAME:key=value,..." into the manager's name and parameters (appended to the given ones).
SessionConfig with_kv_spec(const SessionConfig& in) {
    SessionConfig c = in;
    if (in.kv_cache.find_first_of(":;") == std::string::npos) return c;
    SamplerSpec spec;
    try {
        spec = parse_component_spec(in.kv_cache, "KV cache spec", "managers");
    } catch (const Error& e) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "{}", e.what());
    }
    c.kv_cache = spec.name;
    for (auto& kv : spec.params) c.kv_params.push_back(std::move(kv));
    return c;
}

// The message of a failed plugin call: the plugin's own, else the status name.
std::string plugin_message(basalt_status st) {
    return plugin_error_message().empty() ? std::string(status_name(st)) : plugin_error_message();
}

}  // namespace

Session::Session(const PluginHost& plugins, const basalt_model& model, const SessionConfig& config_in)
    : model_(model),
      config_(with_kv_spec(config_in)),
      shape_(session_shape(model, config_)),
      res_(plugins, model, config_, shape_),
      state_(res_, shape_.moe_router),
      graph_(res_),
      step_(res_, state_) {
    const ModelHparams& hp = model.hparams;
    if (hp.encoder_decoder) {
        for (uint32_t r = res_.n_ctx; r-- > 0;) state_.cross_free.push_back(static_cast<int32_t>(r));  // lowest first
        state_.seq_source.assign(config_.n_seq_max, nullptr);
    }
    // State checkpoints serve prefix attaches only: none for a manager without prefix_attach (a streaming ring).
    if (hp.recurrent() && res_.kv.iface().prefix_attach != nullptr) {
        checkpoints_.configure(res_.plan.state_checkpoint_bytes, res_.layout.block_size, res_.state_row_bytes());
        if (checkpoints_.enabled()) {
            const size_t n_seq = state_.seq_len.size();
            state_.seq_tokens.assign(n_seq, {});
            state_.seq_salt.assign(n_seq, 0);
            state_.decode_checkpoint.assign(n_seq, 0);
            state_.piece_checkpoint.assign(n_seq, 0);
            state_.batch_rows.assign(n_seq, 0);
        }
    }
    log::info("session: {} on backend '{}', ctx {}, batch {}, {} sequence(s), KV {}/{}{}: {} allocated{}", hp.arch,
              config_.backend, res_.n_ctx, res_.n_batch, state_.seq_len.size(), dtype_name(res_.layout.k_type),
              dtype_name(res_.layout.v_type),
              res_.residual != 0 ? fmt::format(" (residual window {})", res_.residual) : "",
              describe_bytes(res_.kv_bytes),
              res_.n_window_slots != 0 ? fmt::format(" (sliding-window layers: {} rows)", res_.n_window_slots) : "");
}

Session::~Session() = default;

MemoryPlan Session::allocated() const {
    MemoryPlan m = res_.allocated(logits_.capacity(), state_.io_logits_bytes);
    m.state_checkpoint_bytes = checkpoints_.enabled() ? checkpoints_.budget() : 0;
    m.total_bytes += m.state_checkpoint_bytes;
    return m;
}

size_t Session::n_vocab() const {
    return model_.hparams.n_vocab;
}

uint32_t Session::seq_length(int32_t seq) const {
    if (seq < 0 || static_cast<size_t>(seq) >= state_.seq_len.size()) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "sequence id {} out of range (0..{})", seq, state_.seq_len.size() - 1);
    }
    return state_.seq_len[static_cast<size_t>(seq)];
}

size_t Session::n_embd() const {
    return model_.hparams.n_embd;
}

const float* Session::logits(size_t row) const {
    if (row >= n_out_) fail(BASALT_ERR_INVALID_ARGUMENT, "logits row {} out of range ({} rows)", row, n_out_);
    return logits_.data() + row * n_vocab();
}

void Session::seq_drop(int32_t seq) {
    seq_length(seq);
    clear_plugin_error();
    const basalt_status st = res_.kv.iface().seq_drop(res_.kv.get(), seq);
    if (st != BASALT_OK) fail(st, "KV cache manager '{}': seq_drop: {}", config_.kv_cache, plugin_error_message());
    state_.seq_len[static_cast<size_t>(seq)] = 0;
    release_source(seq);
    forget_tokens(seq);
    if (checkpoints_.enabled()) state_.seq_salt[static_cast<size_t>(seq)] = 0;  // as the manager's
}

void Session::forget_tokens(int32_t seq) {
    if (!checkpoints_.enabled()) return;
    state_.seq_tokens[static_cast<size_t>(seq)].clear();
    state_.decode_checkpoint[static_cast<size_t>(seq)] = 0;
    state_.piece_checkpoint[static_cast<size_t>(seq)] = 0;
}

void Session::seq_fork(int32_t src, int32_t dst) {
    const uint32_t len = seq_length(src);
    if (seq_length(dst) != 0 || seq_source_length(dst) != 0)
        fail(BASALT_ERR_INVALID_ARGUMENT, "fork target sequence {} is not empty", dst);
    clear_plugin_error();
    const basalt_status st = res_.kv.iface().seq_fork(res_.kv.get(), src, dst);
    if (st != BASALT_OK) fail(st, "KV cache manager '{}': seq_fork: {}", config_.kv_cache, plugin_error_message());
    state_.seq_len[static_cast<size_t>(dst)] = len;
    state_.steering.fork(src, dst);
    auto& sources = state_.seq_source;
    if (!sources.empty()) sources[static_cast<size_t>(dst)] = sources[static_cast<size_t>(src)];
    // The fork shares the source's sealed units (blocks); its open unit lives in the residual rows: copy them.
    if (res_.residual != 0 && len % res_.residual != 0) res_.copy_residual_rows(src, dst);
    // A hybrid model's recurrent state sums up the whole sequence: the fork gets a copy.
    if (model_.hparams.recurrent()) res_.copy_state_rows(src, dst);
    if (checkpoints_.enabled()) {
        const auto s = static_cast<size_t>(src), d = static_cast<size_t>(dst);
        state_.seq_tokens[d] = state_.seq_tokens[s];
        state_.seq_salt[d] = state_.seq_salt[s];
        state_.decode_checkpoint[d] = 0;
        state_.piece_checkpoint[d] = 0;
    }
}

int32_t Session::steer_acquire(const std::vector<float>& vectors, const std::vector<uint8_t>& layers) {
    return state_.steering.acquire(vectors, layers);
}

void Session::steer_release(int32_t slot) {
    state_.steering.release(slot);
}

void Session::seq_set_steer(int32_t seq, int32_t slot) {
    seq_length(seq);
    state_.steering.set(seq, slot);
}

void Session::seq_set_steer_vectors(int32_t seq, const std::vector<float>& vectors,
                                    const std::vector<uint8_t>& layers) {
    seq_length(seq);
    state_.steering.set_vectors(seq, vectors, layers);
}

int32_t Session::seq_steer(int32_t seq) const {
    seq_length(seq);
    return state_.steering.slot_of(seq);
}

void Session::set_observe(const std::vector<uint8_t>& layers) {
    const ModelHparams& hp = model_.hparams;
    if (hp.encoder_decoder && std::find(layers.begin(), layers.end(), 1) != layers.end())
        fail(BASALT_ERR_UNSUPPORTED, "observing layers is not supported for encoder-decoder models (t5)");
    if (!layers.empty() && layers.size() != hp.n_layer)
        fail(BASALT_ERR_INVALID_ARGUMENT, "observe: {} layer flags for a model of {} layers", layers.size(),
             hp.n_layer);
    auto& flags = state_.observe_layers;
    flags.clear();
    for (uint8_t f : layers) flags.push_back(f != 0 ? 1 : 0);
    if (std::find(flags.begin(), flags.end(), 1) == flags.end()) flags.clear();
    state_.observed.assign(hp.n_layer, {});
}

void Session::set_moe_stats(bool on) {
    const ModelHparams& hp = model_.hparams;
    if (on && (hp.n_expert == 0 || hp.n_expert_used == 0)) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "MoE statistics: the {} model has no experts", hp.arch);
    }
    state_.moe_stats_on = on;
    state_.moe_stats.clear();
    if (on) {
        state_.moe_stats.resize(hp.n_layer);
        for (auto& l : state_.moe_stats) l.per_expert.assign(hp.n_expert, 0);
    }
}

const std::vector<float>& Session::observed(uint32_t layer) const {
    if (layer >= model_.hparams.n_layer)
        fail(BASALT_ERR_INVALID_ARGUMENT, "observed: layer {} is not in 0..{}", layer, model_.hparams.n_layer - 1);
    static const std::vector<float> kNone;
    return layer < state_.observed.size() ? state_.observed[layer] : kNone;
}

void Session::seq_truncate(int32_t seq, uint32_t n_keep) {
    const uint32_t len = seq_length(seq);
    const auto& kv = res_.kv.iface();
    if (kv.seq_truncate == nullptr) {
        fail(BASALT_ERR_UNSUPPORTED, "KV cache manager '{}' does not implement seq_truncate (an ABI 1.1 entry)",
             config_.kv_cache);
    }
    if (n_keep > len) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "cannot truncate sequence {} to {} tokens: it holds only {}", seq, n_keep,
             len);
    }
    if (n_keep == len) return;
    // The recurrent state of a hybrid model sums up every token so far and keeps no earlier version: it can only be
    // started again (n_keep 0), never cut back.
    if (model_.hparams.recurrent() && n_keep != 0) {
        fail(BASALT_ERR_UNSUPPORTED,
             "cannot truncate sequence {} to {} of its {} tokens: the recurrent state of the hybrid model '{}' keeps "
             "no earlier version to go back to (only a truncation to 0 is possible)",
             seq, n_keep, len, model_.hparams.arch);
    }
    // A sealed unit of the residual window no longer has its F32 rows: a cut may end only on a unit boundary or
    // inside the open unit.
    const uint32_t R = res_.residual;
    if (R != 0 && n_keep < len / R * R && n_keep % R != 0) {
        fail(BASALT_ERR_UNSUPPORTED,
             "cannot truncate sequence {} to {} tokens: with KV types {}/{} and a residual window of {}, tokens "
             "before {} are already quantized in units of {} (cut at a multiple of {} or after {})",
             seq, n_keep, dtype_name(res_.layout.k_type), dtype_name(res_.layout.v_type), R, len / R * R, R, R,
             len / R * R);
    }
    clear_plugin_error();
    const basalt_status st = kv.seq_truncate(res_.kv.get(), seq, n_keep);
    if (st != BASALT_OK) fail(st, "KV cache manager '{}': seq_truncate: {}", config_.kv_cache, plugin_message(st));
    state_.seq_len[static_cast<size_t>(seq)] = n_keep;
    if (n_keep == 0) forget_tokens(seq);
}

uint32_t Session::prefix_attach(int32_t seq, const int32_t* tokens, size_t n) {
    if (seq_length(seq) != 0) fail(BASALT_ERR_INVALID_ARGUMENT, "prefix_attach: sequence {} is not empty", seq);
    if (tokens == nullptr && n > 0) fail(BASALT_ERR_INVALID_ARGUMENT, "prefix_attach: tokens is NULL");
    const auto& kv = res_.kv.iface();
    // An encoder-decoder decoder's K/V depend on the source (through cross-attention): no sharing by tokens.
    // A hybrid model's recurrent state is not in the blocks: a prefix is reused only as far as a kept checkpoint of
    // the state reaches (none kept: no reuse, 0 cached tokens).
    const bool recurrent = model_.hparams.recurrent();
    if (kv.prefix_attach == nullptr || n == 0 || model_.hparams.encoder_decoder) return 0;
    if (recurrent && !checkpoints_.enabled()) return 0;
    size_t matched = 0;
    clear_plugin_error();
    const basalt_status st = kv.prefix_attach(res_.kv.get(), seq, tokens, std::min<size_t>(n, res_.n_ctx), &matched);
    if (st != BASALT_OK) fail(st, "KV cache manager '{}': prefix_attach: {}", config_.kv_cache, plugin_message(st));
    if (matched > n)
        fail(BASALT_ERR_PLUGIN, "KV cache manager '{}' matched {} of {} tokens", config_.kv_cache, matched, n);
    if (res_.residual != 0 && matched % res_.residual != 0) {
        kv.seq_drop(res_.kv.get(), seq);
        fail(BASALT_ERR_PLUGIN, "KV cache manager '{}' matched {} tokens, not whole units of the residual window {}",
             config_.kv_cache, matched, res_.residual);
    }
    if (recurrent && matched != 0) matched = attach_state(seq, tokens, matched);
    state_.seq_len[static_cast<size_t>(seq)] = static_cast<uint32_t>(matched);
    return static_cast<uint32_t>(matched);
}

size_t Session::attach_state(int32_t seq, const int32_t* tokens, size_t matched) {
    const auto& kv = res_.kv.iface();
    const std::vector<uint8_t>* state = nullptr;
    const size_t keep = checkpoints_.find(state_.seq_salt[static_cast<size_t>(seq)], tokens, matched, &state);
    try {
        if (keep != 0 && keep < matched) {
            if (kv.seq_truncate == nullptr) fail(BASALT_ERR_UNSUPPORTED, "no seq_truncate");
            clear_plugin_error();
            const basalt_status st = kv.seq_truncate(res_.kv.get(), seq, static_cast<uint32_t>(keep));
            if (st != BASALT_OK) fail(st, "seq_truncate: {}", plugin_message(st));
        }
        if (keep != 0) res_.write_state(seq, *state);
    } catch (const Error& e) {
        undo_attach(seq);
        fail(e.status(), "KV cache manager '{}': attaching a prefix of {} tokens to a hybrid model's sequence: {}",
             config_.kv_cache, keep, e.what());
    }
    if (keep == 0) {
        undo_attach(seq);  // blocks without a state to go with them
        return 0;
    }
    state_.seq_tokens[static_cast<size_t>(seq)].assign(tokens, tokens + keep);
    state_.decode_checkpoint[static_cast<size_t>(seq)] = 0;
    state_.piece_checkpoint[static_cast<size_t>(seq)] = 0;
    return keep;
}

void Session::undo_attach(int32_t seq) {
    const auto& kv = res_.kv.iface();
    kv.seq_drop(res_.kv.get(), seq);
    // The drop cleared the manager's salt of the sequence: the blocks it computes next must stay its tenant's.
    const uint64_t salt = state_.seq_salt[static_cast<size_t>(seq)];
    if (salt != 0 && kv.seq_set_salt != nullptr) {
        clear_plugin_error();
        const basalt_status st = kv.seq_set_salt(res_.kv.get(), seq, salt);
        if (st != BASALT_OK) fail(st, "KV cache manager '{}': seq_set_salt: {}", config_.kv_cache, plugin_message(st));
    }
}

void Session::seq_set_salt(int32_t seq, uint64_t salt) {
    if (seq_length(seq) != 0) fail(BASALT_ERR_INVALID_ARGUMENT, "seq_set_salt: sequence {} is not empty", seq);
    if (checkpoints_.enabled()) state_.seq_salt[static_cast<size_t>(seq)] = salt;
    const auto& kv = res_.kv.iface();
    if (kv.seq_set_salt == nullptr) {
        if (salt == 0) return;
        fail(BASALT_ERR_UNSUPPORTED, "KV cache manager '{}' does not implement seq_set_salt (an ABI 1.2 entry)",
             config_.kv_cache);
    }
    clear_plugin_error();
    const basalt_status st = kv.seq_set_salt(res_.kv.get(), seq, salt);
    if (st != BASALT_OK) fail(st, "KV cache manager '{}': seq_set_salt: {}", config_.kv_cache, plugin_message(st));
}

size_t Session::free_slots() const {
    if (res_.kv.iface().free_slots != nullptr) return res_.kv.iface().free_slots(res_.kv.get());
    uint64_t used = 0;
    for (uint32_t len : state_.seq_len) used += len;
    return used >= res_.n_ctx ? 0 : static_cast<size_t>(res_.n_ctx - used);
}

void Session::check_batch(const basalt_batch& batch) const {
    const ModelHparams& hp = model_.hparams;
    const size_t n_seq = state_.seq_len.size();
    std::vector<uint32_t> expected = state_.seq_len;
    // Learned position embeddings (hp.learned_positions: gpt2) end at the trained context.
    const uint32_t learned_positions = hp.learned_positions && hp.n_ctx_train != 0 ? hp.n_ctx_train : UINT32_MAX;
    for (size_t i = 0; i < batch.n_tokens; ++i) {
        const int32_t tok = batch.tokens[i], seq = batch.seq_ids[i], pos = batch.positions[i];
        if (tok < 0 || static_cast<uint32_t>(tok) >= hp.n_vocab) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "batch token {} = {} is not in the vocabulary (0..{})", i, tok,
                 hp.n_vocab - 1);
        }
        if (seq < 0 || static_cast<size_t>(seq) >= n_seq) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "batch token {} has sequence id {} (session allows 0..{})", i, seq,
                 n_seq - 1);
        }
        if (hp.encoder_decoder && state_.seq_source[static_cast<size_t>(seq)] == nullptr) {
            fail(BASALT_ERR_INVALID_ARGUMENT,
                 "batch token {}: sequence {} has no encoded source (encode it first: basalt_session_encode)", i, seq);
        }
        auto& e = expected[static_cast<size_t>(seq)];
        if (pos < 0 || static_cast<uint32_t>(pos) != e) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "batch token {} of sequence {} has position {}, expected {}", i, seq, pos,
                 e);
        }
        e += 1;
        if (e > learned_positions) {
            fail(BASALT_ERR_CAPACITY, "sequence {} would hold {} tokens, more than {}'s {} learned positions", seq, e,
                 hp.arch, learned_positions);
        }
        if (e > res_.n_ctx && !streaming()) {
            fail(BASALT_ERR_CAPACITY, "sequence {} would hold {} tokens, more than the context of {} (n_ctx)", seq, e,
                 res_.n_ctx);
        }
        if (e >= static_cast<uint32_t>(INT32_MAX)) {
            fail(BASALT_ERR_CAPACITY, "sequence {} would pass the position range", seq);
        }
    }
    uint64_t total = 0;
    for (uint32_t e : expected) total += e;
    if (total > res_.n_ctx && !streaming()) {
        fail(BASALT_ERR_CAPACITY, "the batch needs {} cache slots in all, more than the context of {} (n_ctx)", total,
             res_.n_ctx);
    }
}

void Session::decode(const basalt_batch& batch) {
    if (batch.struct_size < offsetof(basalt_batch, want_logits) + sizeof(batch.want_logits)) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_batch.struct_size {} is too small", batch.struct_size);
    }
    if (model_.hparams.encoder_only) {
        fail(BASALT_ERR_UNSUPPORTED, "'{}' is an embedding model (encoder-only): it has no logits to decode; embed",
             model_.hparams.arch);
    }
    const size_t n = batch.n_tokens;
    if (n == 0) fail(BASALT_ERR_INVALID_ARGUMENT, "empty batch");
    if (batch.tokens == nullptr || batch.positions == nullptr || batch.seq_ids == nullptr) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "batch needs tokens, positions and seq_ids");
    }
    // Validate everything before any work.
    check_batch(batch);
    std::vector<float> out;
    const bool report = n > res_.n_batch;  // one forward pass is not long work
    if (report) progress::report("prefill", 0, n);
    for (auto& o : state_.observed) o.clear();
    if (checkpoints_.enabled()) {
        for (size_t i = 0; i < n; ++i) state_.batch_rows[static_cast<size_t>(batch.seq_ids[i])] += 1;
    }
    try {
        if (!checkpoints_.enabled() || !decode_split(batch, out)) decode_rows(batch, 0, n, out, report);
    } catch (...) {
        std::fill(state_.batch_rows.begin(), state_.batch_rows.end(), 0);
        throw;
    }
    std::fill(state_.batch_rows.begin(), state_.batch_rows.end(), 0);
    logits_ = std::move(out);
    n_out_ = logits_.size() / n_vocab();
}

void Session::decode_rows(const basalt_batch& batch, size_t begin, size_t end, std::vector<float>& out_logits,
                          bool report) {
    for (size_t b = begin; b < end; b += res_.n_batch) {
        const size_t e = std::min(end, b + res_.n_batch);
        decode_chunk(batch, b, e, out_logits);
        if (report) progress::report("prefill", e, batch.n_tokens);
    }
}

bool Session::decode_split(const basalt_batch& batch, std::vector<float>& out_logits) {
    // Observed rows come back in batch order pass by pass: no reordering then (no checkpoint at that boundary).
    if (!state_.observe_layers.empty()) return false;
    const size_t n = batch.n_tokens;
    const uint32_t B = checkpoints_.block();
    const uint32_t every = checkpoint_every();
    // Each row's pass: the split points its piece crosses before it (multiples of `every`, the last boundary).
    std::vector<uint32_t> level(n, 0);
    uint32_t n_levels = 1;
    for (size_t i = 0; i < n; ++i) {
        const auto s = static_cast<size_t>(batch.seq_ids[i]);
        const uint32_t rows = state_.batch_rows[s], len = state_.seq_len[s];
        if (rows < B) continue;
        const auto pos = static_cast<uint32_t>(batch.positions[i]);
        const uint32_t last = (len + rows) / B * B;
        uint32_t l = pos / every - len / every;
        if (last > len && last < len + rows && last % every != 0 && pos >= last) l += 1;
        level[i] = l;
        n_levels = std::max(n_levels, l + 1);
    }
    if (n_levels == 1) return false;
    std::vector<size_t> order(n);
    for (size_t i = 0; i < n; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return level[a] < level[b]; });
    std::vector<int32_t> tokens(n), positions(n), seqs(n);
    std::vector<int8_t> want(n);
    for (size_t j = 0; j < n; ++j) {
        const size_t i = order[j];
        tokens[j] = batch.tokens[i];
        positions[j] = batch.positions[i];
        seqs[j] = batch.seq_ids[i];
        want[j] = batch.want_logits != nullptr ? (batch.want_logits[i] != 0 ? 1 : 0) : (i + 1 == n ? 1 : 0);
    }
    basalt_batch split = batch;
    split.tokens = tokens.data();
    split.positions = positions.data();
    split.seq_ids = seqs.data();
    split.want_logits = want.data();
    std::vector<float> rows;
    const bool report = n > res_.n_batch;
    for (size_t j = 0; j < n;) {
        size_t end = j;
        while (end < n && level[order[end]] == level[order[j]]) ++end;
        decode_rows(split, j, end, rows, report);
        j = end;
    }
    // The logits rows back in batch order: the k-th wanted row of the batch is the rank of its index.
    std::vector<size_t> rank(n, 0);
    size_t wanted = 0;
    for (size_t i = 0; i < n; ++i) {
        if (batch.want_logits != nullptr ? batch.want_logits[i] != 0 : i + 1 == n) rank[i] = wanted++;
    }
    const size_t nv = n_vocab();
    out_logits.resize(wanted * nv);
    size_t row = 0;
    for (size_t j = 0; j < n; ++j) {
        if (want[j] == 0) continue;
        std::copy_n(rows.begin() + static_cast<std::ptrdiff_t>(row * nv), nv,
                    out_logits.begin() + static_cast<std::ptrdiff_t>(rank[order[j]] * nv));
        ++row;
    }
    return true;
}

uint32_t Session::checkpoint_every() const {
    const uint32_t B = checkpoints_.block();
    return std::max(B, kCheckpointEvery / B * B);
}

void Session::keep_checkpoints(const int32_t* seqs, size_t n) {
    const uint32_t B = checkpoints_.block();
    for (size_t t = 0; t < n; ++t) {
        const auto s = static_cast<size_t>(seqs[t]);
        const uint32_t len = state_.seq_len[s];
        auto& tokens = state_.seq_tokens[s];
        if (len == 0 || len % B != 0 || tokens.size() != len) continue;
        // A sequence may have rows apart in one pass; keep it once.
        if (std::find(seqs + t + 1, seqs + n, seqs[t]) != seqs + n) continue;
        // A checkpoint at a multiple of checkpoint_every() stays (until evicted). Elsewhere a sequence keeps its
        // latest of each kind: decoding (and a speculative verify: fewer rows than a block) passes a boundary every
        // B tokens, a chunked prompt ends each piece on one.
        if (len % checkpoint_every() != 0) {
            uint32_t& last = state_.batch_rows[s] < B ? state_.decode_checkpoint[s] : state_.piece_checkpoint[s];
            if (last != 0) checkpoints_.erase(state_.seq_salt[s], tokens.data(), last);
            last = len;
        }
        std::vector<uint8_t> state = checkpoints_.buffer();
        res_.read_state(seqs[t], state);
        checkpoints_.put(state_.seq_salt[s], tokens.data(), len, std::move(state));
    }
}

void Session::decode_chunk(const basalt_batch& batch, size_t begin, size_t end, std::vector<float>& out_logits) {
    const size_t n = end - begin;
    const int32_t* seqs = batch.seq_ids + begin;
    // Slots for the new tokens (all or nothing) and the copies to do first; then the step's inputs (the visible
    // lists include the new slots), its graph, and the outputs.
    reservation_.reserve(res_, n, batch.tokens + begin, batch.positions + begin, seqs);
    step_.set_rows(false, n, batch.tokens + begin, batch.positions + begin, seqs);
    step_.want_logits = batch.want_logits == nullptr ? nullptr : batch.want_logits + begin;
    step_.rows_left = batch.n_tokens - begin;
    step_.reservation = &reservation_;
    step_.logits = &out_logits;
    graph_.prepare(step_);
    const basalt_status st = graph_.compute(step_);
    if (st != BASALT_OK) fail_compute(st);
    for (size_t t = 0; t < n; ++t) state_.seq_len[static_cast<size_t>(seqs[t])] += 1;
    if (checkpoints_.enabled()) {
        for (size_t t = 0; t < n; ++t)
            state_.seq_tokens[static_cast<size_t>(seqs[t])].push_back(batch.tokens[begin + t]);
        keep_checkpoints(seqs, n);
    }
    graph_.read_back(step_);
}

void Session::fail_compute(basalt_status st) {
    // The reserved slots hold no valid K/V now: forget the affected sequences rather than keep a corrupt cache
    // (every sequence when window copies, which may target sequences outside the batch, did not run).
    std::string dropped;
    const bool window_copies = reservation_.has_window_copies();
    for (size_t s = 0; s < step_.list_of_seq.size(); ++s) {
        if (step_.list_of_seq[s] < 0 && (!window_copies || state_.seq_len[s] == 0)) continue;
        res_.kv.iface().seq_drop(res_.kv.get(), static_cast<int32_t>(s));
        state_.seq_len[s] = 0;
        forget_tokens(static_cast<int32_t>(s));
        dropped += (dropped.empty() ? "" : ", ") + std::to_string(s);
    }
    fail(st, "backend '{}': graph_compute: {} (sequences {} were reset)", config_.backend, plugin_message(st), dropped);
}

uint32_t Session::seq_source_length(int32_t seq) const {
    seq_length(seq);
    const auto& sources = state_.seq_source;
    if (sources.empty() || sources[static_cast<size_t>(seq)] == nullptr) return 0;
    return static_cast<uint32_t>(sources[static_cast<size_t>(seq)]->size());
}

void Session::release_source(int32_t seq) {
    if (state_.seq_source.empty()) return;
    auto& src = state_.seq_source[static_cast<size_t>(seq)];
    auto& free_rows = state_.cross_free;
    if (src != nullptr && src.use_count() == 1) free_rows.insert(free_rows.end(), src->rbegin(), src->rend());
    src.reset();
}

void Session::encode(const basalt_batch& batch) {
    const ModelHparams& hp = model_.hparams;
    if (!hp.encoder_decoder) {
        fail(BASALT_ERR_UNSUPPORTED, "encode: '{}' is not an encoder-decoder model (it has no encoder)", hp.arch);
    }
    if (batch.struct_size < offsetof(basalt_batch, want_logits) + sizeof(batch.want_logits)) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_batch.struct_size {} is too small", batch.struct_size);
    }
    if (batch.n_tokens == 0) fail(BASALT_ERR_INVALID_ARGUMENT, "encode: empty batch");
    if (batch.tokens == nullptr || batch.positions == nullptr || batch.seq_ids == nullptr) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "encode: the batch needs tokens, positions and seq_ids");
    }
    // Validate everything before any work: each sequence empty, its source whole (positions 0..n-1 in order).
    std::vector<std::vector<size_t>> rows(state_.seq_len.size());
    std::vector<int32_t> order;
    check_sources(batch, rows, order);
    // Rows for every source, then passes of whole sources of at most n_batch tokens (a longer source: a pass of its
    // own, at most n_ctx tokens, which the memory plan's encoder activations allow for).
    for (int32_t s : order) {
        auto src = std::make_shared<std::vector<int32_t>>();
        for (size_t i = 0; i < rows[static_cast<size_t>(s)].size(); ++i) {
            src->push_back(state_.cross_free.back());
            state_.cross_free.pop_back();
        }
        state_.seq_source[static_cast<size_t>(s)] = std::move(src);
    }
    try {
        std::vector<int32_t> pass;
        size_t in_pass = 0;
        for (size_t k = 0; k <= order.size(); ++k) {
            const size_t len = k < order.size() ? rows[static_cast<size_t>(order[k])].size() : 0;
            if (!pass.empty() && (k == order.size() || in_pass + len > res_.n_batch)) {
                encode_pass(batch, pass, rows);
                pass.clear();
                in_pass = 0;
            }
            if (k < order.size()) {
                pass.push_back(order[k]);
                in_pass += len;
            }
        }
    } catch (...) {
        for (int32_t s : order) release_source(s);  // no half-written sources
        throw;
    }
}

void Session::check_sources(const basalt_batch& batch, std::vector<std::vector<size_t>>& rows,
                            std::vector<int32_t>& order) const {
    const ModelHparams& hp = model_.hparams;
    const size_t n_seq = state_.seq_len.size();
    for (size_t i = 0; i < batch.n_tokens; ++i) {
        const int32_t tok = batch.tokens[i], seq = batch.seq_ids[i], pos = batch.positions[i];
        if (tok < 0 || static_cast<uint32_t>(tok) >= hp.n_vocab) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "encode: token {} = {} is not in the vocabulary (0..{})", i, tok,
                 hp.n_vocab - 1);
        }
        if (seq < 0 || static_cast<size_t>(seq) >= n_seq) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "encode: token {} has sequence id {} (session allows 0..{})", i, seq,
                 n_seq - 1);
        }
        auto& r = rows[static_cast<size_t>(seq)];
        if (r.empty()) {
            if (state_.seq_len[static_cast<size_t>(seq)] != 0 ||
                state_.seq_source[static_cast<size_t>(seq)] != nullptr) {
                fail(BASALT_ERR_INVALID_ARGUMENT,
                     "encode: sequence {} is not empty (a source starts a sequence; drop it first)", seq);
            }
            order.push_back(seq);
        }
        if (pos < 0 || static_cast<size_t>(pos) != r.size()) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "encode: token {} of sequence {} has position {}, expected {}", i, seq,
                 pos, r.size());
        }
        r.push_back(i);
    }
    size_t total = 0;
    for (int32_t s : order) total += rows[static_cast<size_t>(s)].size();
    if (total > state_.cross_free.size()) {
        fail(BASALT_ERR_CAPACITY,
             "encode: {} source tokens need as many cross-attention rows; {} of {} are free (n_ctx)", total,
             state_.cross_free.size(), res_.n_ctx);
    }
}

void Session::encode_pass(const basalt_batch& batch, const std::vector<int32_t>& seqs,
                          const std::vector<std::vector<size_t>>& rows) {
    // Sources packed one after another, each at positions 0..n-1.
    enc_tokens_.clear();
    enc_positions_.clear();
    enc_seqs_.clear();
    for (int32_t s : seqs) {
        const auto& r = rows[static_cast<size_t>(s)];
        for (size_t i = 0; i < r.size(); ++i) {
            enc_tokens_.push_back(batch.tokens[r[i]]);
            enc_positions_.push_back(static_cast<int32_t>(i));
            enc_seqs_.push_back(s);
        }
    }
    step_.set_rows(true, enc_tokens_.size(), enc_tokens_.data(), enc_positions_.data(), enc_seqs_.data());
    step_.want_logits = nullptr;
    step_.reservation = nullptr;
    step_.logits = nullptr;
    graph_.prepare(step_);
    const basalt_status st = graph_.compute(step_);
    if (st != BASALT_OK) {
        fail(st, "backend '{}': graph_compute (encoder): {}", config_.backend, plugin_message(st));
    }
}

}  // namespace basalt
