#include "engine/engine.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "engine/decoder-host.hpp"
#include "engine/steering.hpp"
#include "exec/sampler-chain.hpp"
#include "host/host-services.hpp"
#include "host/runtime.hpp"
#include "model/model.hpp"
#include "support/error.hpp"
#include "support/log.hpp"
#include "support/params.hpp"

namespace basalt::engine {
namespace {

double ms_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
}

uint64_t round_up(uint64_t x, uint64_t m) {
    return (x + m - 1) / m * m;
}

}  // namespace

basalt_decoder_info create_decoder(basalt_runtime& runtime, const std::string& name,
                                   const std::vector<std::pair<std::string, std::string>>& params,
                                   basalt_decoder_iface& table, void*& instance) {
    const Component* c = runtime.plugins.find(BASALT_COMPONENT_DECODER, name);
    if (c == nullptr) {
        std::string names;
        for (const auto& comp : runtime.plugins.components()) {
            if (comp.kind == BASALT_COMPONENT_DECODER) names += (names.empty() ? "" : ", ") + comp.name;
        }
        fail(BASALT_ERR_NOT_FOUND, "no decoder named '{}' is loaded (available: {})", name,
             names.empty() ? "none" : names);
    }
    table = read_table<basalt_decoder_iface>(*c);
    const ParamsView p(params);
    clear_plugin_error();
    instance = nullptr;
    const basalt_status st = table.create(host_services(), &p.params, &instance);
    if (st != BASALT_OK || instance == nullptr) {
        instance = nullptr;
        const std::string why = plugin_error_message().empty() ? "create failed" : plugin_error_message();
        if (why.rfind("decoder '", 0) == 0) fail(st != BASALT_OK ? st : BASALT_ERR_PLUGIN, "{}", why);
        fail(st != BASALT_OK ? st : BASALT_ERR_PLUGIN, "decoder '{}': {}", name, why);
    }
    basalt_decoder_info info{};
    info.struct_size = sizeof(info);
    clear_plugin_error();
    if (const basalt_status rs = table.requirements(instance, &info); rs != BASALT_OK) {
        const std::string why = plugin_error_message();
        table.destroy(instance);
        instance = nullptr;
        fail(rs, "decoder '{}': requirements: {}", name, why);
    }
    info.n_seq = std::max<uint32_t>(1, info.n_seq);
    info.n_models = std::max<uint32_t>(1, info.n_models);
    info.n_outputs = std::max<uint32_t>(1, info.n_outputs);
    return info;
}

void Request::release_plugin_objects() {
    for (basalt_sampler_chain* c : chains) basalt_sampler_chain_destroy(c);
    chains.clear();
    if (dec_instance != nullptr && dec.destroy != nullptr) dec.destroy(dec_instance);
    dec_instance = nullptr;
}

Request::~Request() {
    release_plugin_objects();
}

Engine::Engine(basalt_runtime& runtime, const basalt_model& model, const basalt_model* second,
               const EngineConfig& config)
    : runtime_(runtime), model_(model), second_(second), config_(config) {
    const ModelHparams& hp = model.hparams;
    if (second != nullptr && second->hparams.n_vocab != hp.n_vocab) {
        fail(BASALT_ERR_INVALID_ARGUMENT,
             "the second model's vocabulary has {} tokens, the main model's {}: a draft or amateur must share the "
             "vocabulary",
             second->hparams.n_vocab, hp.n_vocab);
    }
    if (config.n_parallel == 0) fail(BASALT_ERR_INVALID_ARGUMENT, "n_parallel must be at least 1");
    if (config.max_batch_tokens == 0) fail(BASALT_ERR_INVALID_ARGUMENT, "max_batch_tokens must be at least 1");
    n_ctx_ = config.n_ctx != 0 ? config.n_ctx : (hp.n_ctx_train != 0 ? std::min<uint32_t>(hp.n_ctx_train, 4096) : 4096);
    if (hp.arch == "gpt2" && hp.n_ctx_train != 0 && n_ctx_ > hp.n_ctx_train) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "context {} exceeds gpt2's {} learned positions", n_ctx_, hp.n_ctx_train);
    }
    if (hp.n_ctx_train != 0 && n_ctx_ > hp.n_ctx_train && hp.arch != "gpt2") {
        log::warn("context {} is above the {} positions the model was trained with: output past them degrades", n_ctx_,
                  hp.n_ctx_train);
    }
    n_seq_max_ = config.n_seq_max != 0 ? config.n_seq_max : config.n_parallel;
    const uint64_t slots = config.n_kv_slots != 0 ? config.n_kv_slots : uint64_t{n_ctx_} * n_seq_max_;
    if (slots > INT32_MAX) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "KV slots {} (n_ctx {} x n_seq_max {}) exceed the slot range", slots, n_ctx_,
             n_seq_max_);
    }
    n_kv_slots_ = static_cast<uint32_t>(slots);
    SessionConfig sc = config.session;
    sc.n_ctx = n_kv_slots_;
    sc.n_batch = config.max_batch_tokens;
    sc.n_seq_max = n_seq_max_;
    sc.warn_context = false;  // warned above, per request
    sessions_[0] = std::make_unique<Session>(runtime.plugins, model, sc);
    if (config.moe_stats) {
        sessions_[0]->set_moe_stats(true);
        moe_stats_ = sessions_[0]->moe_stats();
    }
    if (second != nullptr && second->hparams.n_expert == 0) sc.moe_router.clear();  // a dense draft stays dense
    if (second != nullptr) sessions_[1] = std::make_unique<Session>(runtime.plugins, *second, sc);
    block_size_ = std::max<uint32_t>(1, sessions_[0]->block_size());
    for (int m = 0; m < 2; ++m) {
        if (!sessions_[m]) continue;
        for (uint32_t s = n_seq_max_; s-- > 0;) free_seqs_[m].push_back(static_cast<int32_t>(s));
    }
    stats_.kv_slots = n_kv_slots_;
    try {
        model.tok();  // built now: a model without a vocabulary (a benchmark file) streams tokens without text
        has_text_ = true;
    } catch (const Error& e) {
        log::info("engine: {}: requests stream token ids only", e.what());
    }
    if (config.own_thread) thread_ = std::thread([this] { loop(); });
}

Engine::~Engine() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    idle_.notify_all();
    if (thread_.joinable()) thread_.join();
    // Whatever is left is cancelled: handles outlive the engine and must read as finished.
    std::vector<std::shared_ptr<Request>> left(queue_.begin(), queue_.end());
    left.insert(left.end(), running_.begin(), running_.end());
    for (auto& r : left) finish(*r, BASALT_FINISH_CANCELLED);
    for (auto& r : running_) release(*r);
    deliver(left);
    // Queued requests' decoders and chains belong to plugins that may be unloaded with the runtime: free them now
    // (running ones were freed by release).
    for (auto& r : left) r->release_plugin_objects();
}

void Engine::notify() {
    wake_.notify_all();
}

Session& Engine::session(int32_t model) {
    if (model < 0 || model > 1 || !sessions_[model]) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "model {} is not attached (the engine has {} model{})", model,
             sessions_[1] ? 2 : 1, sessions_[1] ? "s" : "");
    }
    return *sessions_[model];
}

int32_t Engine::session_seq(Request& r, int32_t model, int32_t seq) const {
    if (model < 0 || model > 1 || !sessions_[model])
        fail(BASALT_ERR_INVALID_ARGUMENT, "model {} is not attached", model);
    const auto& ids = r.seq_ids[model];
    if (seq < 0 || static_cast<size_t>(seq) >= ids.size()) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "sequence {} is out of the request's range 0..{}", seq,
             static_cast<int64_t>(ids.size()) - 1);
    }
    return ids[static_cast<size_t>(seq)];
}

basalt_sampler_chain* Engine::chain(Request& r, int32_t seq) const {
    if (seq < 0 || static_cast<size_t>(seq) >= r.chains.size() || r.chains[static_cast<size_t>(seq)] == nullptr) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "sequence {} of the request has no sampler chain (fork into it first)", seq);
    }
    return r.chains[static_cast<size_t>(seq)];
}

void Engine::fork(Request& r, int32_t model, int32_t src, int32_t dst) {
    session(model).seq_fork(session_seq(r, model, src), session_seq(r, model, dst));
    if (model != 0) return;
    basalt_sampler_chain* copy = nullptr;
    rethrow_if_failed(basalt_sampler_chain_clone(chain(r, src), &copy));
    auto& slot = r.chains[static_cast<size_t>(dst)];
    basalt_sampler_chain_destroy(slot);
    slot = copy;
}

bool Engine::is_eog(const Request& r, int32_t token) const {
    if (!r.spec.ignore_eog && has_text_ && basalt_token_is_eog(&model_, token) != 0) return true;
    return std::find(r.spec.stop_tokens.begin(), r.spec.stop_tokens.end(), token) != r.spec.stop_tokens.end();
}

void Engine::set_stat(Request& r, const std::string& name, double value) {
    std::lock_guard lock(r.mutex);
    for (auto& [key, v] : r.decoder_stats) {
        if (key == name) {
            v = value;
            return;
        }
    }
    r.decoder_stats.emplace_back(name, value);
}

basalt_status Engine::emit(Request& r, int32_t hypothesis, const int32_t* tokens, size_t n, float score) {
    if (hypothesis < 0 || static_cast<uint32_t>(hypothesis) >= std::max<uint32_t>(1, r.info.n_outputs)) {
        fail(BASALT_ERR_PLUGIN, "decoder '{}' emitted hypothesis {}, it declared {} output(s)", r.spec.decoder,
             hypothesis, std::max<uint32_t>(1, r.info.n_outputs));
    }
    for (size_t i = 0; i < n; ++i) {
        if (tokens[i] < 0 || static_cast<size_t>(tokens[i]) >= n_vocab()) {
            fail(BASALT_ERR_PLUGIN, "decoder '{}' emitted token {}, outside the vocabulary (0..{})", r.spec.decoder,
                 tokens[i], n_vocab() - 1);
        }
    }
    {
        std::lock_guard lock(r.mutex);
        if (r.hypotheses.size() <= static_cast<size_t>(hypothesis)) r.hypotheses.resize(hypothesis + 1);
        r.hypotheses[static_cast<size_t>(hypothesis)].score = score;
        if (hypothesis != 0) {  // n-best alternatives: stored as given, not streamed
            auto& h = r.hypotheses[static_cast<size_t>(hypothesis)].tokens;
            h.insert(h.end(), tokens, tokens + n);
            return BASALT_OK;
        }
    }
    if (r.finish_pending != BASALT_FINISH_NONE) return BASALT_ERR_CANCELLED;
    if (r.cancel.load()) {
        r.finish_pending = BASALT_FINISH_CANCELLED;
        return BASALT_ERR_CANCELLED;
    }
    for (size_t i = 0; i < n; ++i) {
        const int32_t token = tokens[i];
        if (is_eog(r, token)) {
            r.finish_pending = BASALT_FINISH_STOP;
            return BASALT_ERR_CANCELLED;
        }
        if (r.spec.logprobs && (!r.has_pending_logprob || r.pending_logprob.token != token)) {
            fail(BASALT_ERR_PLUGIN, "decoder '{}' emitted token {} without sampling it: no log-probability to record",
                 r.spec.decoder, token);
        }
        const std::string released = r.text.push(has_text_ ? model_.tok().token_to_piece(token, false) : "");
        const auto now = Clock::now();
        {
            std::lock_guard lock(r.mutex);
            r.unread_tokens.push_back(token);
            r.new_tokens.push_back(token);
            r.hypotheses[0].tokens.push_back(token);
            if (r.spec.logprobs) {
                r.logprobs.push_back(std::move(r.pending_logprob));
                r.has_pending_logprob = false;
            }
            r.unread_text += released;
            r.new_text += released;
            if (!r.has_first) {
                r.has_first = true;
                r.first_token = now;
            } else {
                r.itl_ms.push_back(ms_between(r.last_token, now));
            }
            r.generated_tokens += 1;
        }
        r.last_token = now;
        ++step_generated_;  // into stats_ at the end of the step, under its lock once
        if (r.text.stopped()) {
            r.finish_pending = BASALT_FINISH_STOP;
            return BASALT_ERR_CANCELLED;
        }
        if (r.spec.max_tokens >= 0 && r.generated_tokens >= static_cast<uint64_t>(r.spec.max_tokens)) {
            r.finish_pending = BASALT_FINISH_LENGTH;
            return BASALT_ERR_CANCELLED;
        }
    }
    return BASALT_OK;
}

uint64_t Engine::worst_case_slots(const Request& r) const {
    uint64_t len =
        r.spec.max_tokens < 0 ? n_ctx_ : std::min<uint64_t>(n_ctx_, r.spec.prompt.size() + r.spec.max_tokens);
    return uint64_t{r.info.n_seq} * round_up(len, block_size_);
}

std::shared_ptr<Request> Engine::submit(RequestSpec spec, basalt_request* handle) {
    const ModelHparams& hp = model_.hparams;
    if (hp.encoder_decoder) {
        // The source goes to the encoder (its rows come from the cross-attention storage of n_ctx rows); the
        // decoder starts from the model's decoder start token unless a prefix was given.
        if (spec.source.empty()) fail(BASALT_ERR_INVALID_ARGUMENT, "the source (the encoder's input) is empty");
        if (spec.source.size() > n_ctx_) {
            fail(BASALT_ERR_CAPACITY, "the source has {} tokens, more than the context of {} (n_ctx)",
                 spec.source.size(), n_ctx_);
        }
        for (size_t i = 0; i < spec.source.size(); ++i) {
            const int32_t t = spec.source[i];
            if (t < 0 || static_cast<size_t>(t) >= n_vocab()) {
                fail(BASALT_ERR_INVALID_ARGUMENT, "source token {} = {} is not in the vocabulary (0..{})", i, t,
                     n_vocab() - 1);
            }
        }
        if (spec.prompt.empty()) spec.prompt.push_back(hp.decoder_start_token);
        if (second_ != nullptr) {
            fail(BASALT_ERR_UNSUPPORTED, "encoder-decoder requests cannot use a second model (draft or amateur)");
        }
    } else if (!spec.source.empty()) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "a source (encoder input) was given, but '{}' is a decoder-only model",
             hp.arch);
    }
    if (spec.prompt.empty()) fail(BASALT_ERR_INVALID_ARGUMENT, "the prompt is empty");
    if (spec.prompt.size() > n_ctx_ && !sessions_[0]->streaming()) {
        fail(BASALT_ERR_CAPACITY, "the prompt has {} tokens, more than the context of {} (n_ctx)", spec.prompt.size(),
             n_ctx_);
    }
    for (size_t i = 0; i < spec.prompt.size(); ++i) {
        const int32_t t = spec.prompt[i];
        if (t < 0 || static_cast<size_t>(t) >= n_vocab()) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "prompt token {} = {} is not in the vocabulary (0..{})", i, t,
                 n_vocab() - 1);
        }
    }
    auto r = std::make_shared<Request>();
    r->spec = std::move(spec);
    r->engine = this;
    r->handle = handle;
    r->text = TextStream(r->spec.stop);

    // Token ids in the chain's parameters must exist in this model's vocabulary (a sampler cannot know it).
    for (const SamplerSpec& entry : parse_sampler_chain(r->spec.samplers)) {
        if (entry.name != "logit_bias") continue;
        for (const auto& [key, value] : entry.params) {
            if (key != "bias" && key != primary_key("logit_bias")) continue;
            size_t at = 0;
            while (at < value.size()) {
                const size_t end = std::min(value.find(',', at), value.size());
                const std::string item = value.substr(at, end - at);
                const long long id = std::atoll(item.c_str());
                if (id >= static_cast<long long>(n_vocab())) {
                    fail(BASALT_ERR_INVALID_ARGUMENT,
                         "sampler 'logit_bias': token {} is not in the vocabulary (0..{}) of this model", id,
                         n_vocab() - 1);
                }
                at = end + 1;
            }
        }
    }
    // Steering vectors are loaded (and refused) now; the identity joins the salt so no K/V computed under one
    // steering is ever attached to a request under another (or none).
    if (!r->spec.steer.empty()) {
        SteerTable st = load_steering(runtime_, model_.hparams, r->spec.steer);
        r->spec.cache_salt = steer_salt(r->spec.cache_salt, st.hash);
        r->steer_vectors = std::move(st.vectors);
        r->steer_layers = std::move(st.layers);
    }
    // The chain of sequence 0 (others are forked from it), created now so a bad chain fails the submit.
    basalt_sampler_chain* chain0 = nullptr;
    rethrow_if_failed(basalt_sampler_chain_create(&runtime_, r->spec.samplers.c_str(), &chain0));
    r->chains.push_back(chain0);
    // The prompt is the chain's history before the first draw (penalties, no_repeat_ngram count it), as in
    // llama.cpp's generation loop and Hugging Face's input_ids; sequences forked later inherit it with the chain.
    for (const int32_t t : r->spec.prompt) rethrow_if_failed(basalt_sampler_chain_accept(chain0, t));

    if (r->spec.logprobs && r->spec.decoder != "sample") {
        fail(BASALT_ERR_UNSUPPORTED,
             "log-probabilities are recorded for decoder 'sample' only (each token drawn from one logits row), "
             "not for decoder '{}'",
             r->spec.decoder);
    }
    if (r->spec.n_top_logprobs < 0 || r->spec.n_top_logprobs > kMaxTopLogprobs) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "n_top_logprobs {} is out of range (0..{})", r->spec.n_top_logprobs,
             kMaxTopLogprobs);
    }
    r->info = create_decoder(runtime_, r->spec.decoder, r->spec.decoder_params, r->dec, r->dec_instance);
    if (r->info.n_models > 1 && !sessions_[1]) {
        fail(BASALT_ERR_INVALID_ARGUMENT,
             "decoder '{}' needs a second model (a draft or amateur) and the engine has none", r->spec.decoder);
    }
    if (BASALT_HAS_FIELD(&r->info, basalt_decoder_info, flags) && (r->info.flags & BASALT_DECODER_NEEDS_DRAFT_SAFE)) {
        std::string unsafe;
        for (size_t i = 0; i < basalt_sampler_chain_length(chain0); ++i) {
            if ((basalt_sampler_flags(basalt_sampler_chain_get(chain0, i)) & BASALT_SAMPLER_DRAFT_SAFE) == 0)
                unsafe += (unsafe.empty() ? "'" : ", '") + std::string(basalt_sampler_chain_name(chain0, i)) + "'";
        }
        if (!unsafe.empty()) {
            fail(BASALT_ERR_INVALID_ARGUMENT,
                 "decoder '{}' verifies drafts with the sampler chain, and sampler {} is not draft-safe (its output "
                 "depends on more than the logits and the accepted tokens): drop it or use decoder 'sample'",
                 r->spec.decoder, unsafe);
        }
    }
    if (r->info.n_seq > n_seq_max_) {
        fail(BASALT_ERR_CAPACITY, "decoder '{}' needs {} sequences, the engine has {} (n_seq_max)", r->spec.decoder,
             r->info.n_seq, n_seq_max_);
    }
    if (worst_case_slots(*r) > n_kv_slots_) {
        fail(BASALT_ERR_CAPACITY,
             "the request may need {} KV slots ({} sequences of up to {} positions), more than the cache's {}",
             worst_case_slots(*r), r->info.n_seq, worst_case_slots(*r) / r->info.n_seq, n_kv_slots_);
    }
    r->chains.resize(r->info.n_seq, nullptr);
    {
        std::lock_guard lock(r->mutex);
        r->submitted = Clock::now();
        r->prompt_tokens = r->spec.prompt.size();
    }
    {
        std::lock_guard lock(mutex_);
        if (stopping_) fail(BASALT_ERR_INVALID_ARGUMENT, "the engine is shutting down");
        r->id = next_id_++;
        queue_.push_back(r);
        stats_.queued = queue_.size();
        idle_now_ = false;
    }
    wake_.notify_all();
    return r;
}

bool Engine::admissible(const Request& r) const {
    if (running_.size() >= config_.n_parallel) return false;
    for (int m = 0; m < 2; ++m) {
        const uint32_t need = m == 0 ? r.info.n_seq : (r.info.n_models > 1 ? r.info.n_seq : 0);
        if (free_seqs_[m].size() < need) return false;
    }
    // Encoder-decoder: room for the source's cross-attention rows too.
    if (!r.spec.source.empty() && source_reserved_ + r.spec.source.size() > sessions_[0]->free_source_rows())
        return false;
    return kv_reserved_ + worst_case_slots(r) <= n_kv_slots_;
}

void Engine::admit(const std::shared_ptr<Request>& r) {
    for (int m = 0; m < 2; ++m) {
        const uint32_t need = m == 0 ? r->info.n_seq : (r->info.n_models > 1 ? r->info.n_seq : 0);
        for (uint32_t i = 0; i < need; ++i) {
            r->seq_ids[m].push_back(free_seqs_[m].back());
            free_seqs_[m].pop_back();
        }
    }
    for (int m = 0; m < 2; ++m) {
        for (int32_t sid : r->seq_ids[m]) sessions_[m]->seq_set_salt(sid, r->spec.cache_salt);
    }
    // Steering applies to the target model (0) only: a draft stays a plain proposer, verified against the steered
    // target. The vectors go to the device once, here.
    if (!r->spec.source.empty()) source_reserved_ += r->spec.source.size();
    if (!r->steer_vectors.empty()) {
        r->steer_slot = sessions_[0]->steer_acquire(r->steer_vectors, r->steer_layers);
        for (int32_t sid : r->seq_ids[0]) sessions_[0]->seq_set_steer(sid, r->steer_slot);
    }
    r->kv_reserved = worst_case_slots(*r);
    kv_reserved_ += r->kv_reserved;
    running_.push_back(r);
    std::lock_guard lock(r->mutex);
    r->admitted = Clock::now();
    r->has_admitted = true;
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
            free_seqs_[m].push_back(s);
        }
        r.seq_ids[m].clear();
    }
    if (r.steer_slot >= 0) {
        sessions_[0]->steer_release(r.steer_slot);  // also clears the slot of its sequences
        r.steer_slot = -1;
    }
    kv_reserved_ -= r.kv_reserved;
    r.kv_reserved = 0;
    r.release_plugin_objects();  // now, not when the caller frees the handle
}

void Engine::encode_sources(const std::vector<std::shared_ptr<Request>>& started,
                            std::vector<std::shared_ptr<Request>>& touched) {
    std::vector<Request*> batch_of;
    std::vector<int32_t> toks, pos, seqs;
    for (const auto& rp : started) {
        Request& r = *rp;
        if (r.encoded || r.spec.source.empty()) continue;
        source_reserved_ -= std::min<uint64_t>(source_reserved_, r.spec.source.size());
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
        for (const SamplerSpec& entry : parse_sampler_chain(r.spec.samplers)) {
            for (const auto& [key, value] : entry.params) {
                if (entry.name == "dist" && (key == "seed" || key == primary_key("dist")))
                    dr.seed = std::atoll(value.c_str());
            }
        }
    }
    basalt_sampler_chain* c0 = r.chains[0];
    const size_t n_samplers = basalt_sampler_chain_length(c0);
    if (n_samplers > 0 && std::string(basalt_sampler_chain_name(c0, n_samplers - 1)) == "greedy")
        dr.chain_flags |= BASALT_DECODER_CHAIN_GREEDY;
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
    // Check every feed now, so a bad one fails this request and never a shared batch.
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

size_t Engine::step() {
    std::vector<std::shared_ptr<Request>> touched;
    std::vector<std::shared_ptr<Request>> started;
    {
        std::lock_guard lock(mutex_);
        // Cancelled requests leave the queue at once; then FIFO admission while the head fits.
        for (auto it = queue_.begin(); it != queue_.end();) {
            if ((*it)->cancel.load()) {
                finish(**it, BASALT_FINISH_CANCELLED);
                touched.push_back(*it);
                it = queue_.erase(it);
            } else {
                ++it;
            }
        }
        while (!queue_.empty() && admissible(*queue_.front())) {
            admit(queue_.front());
            started.push_back(queue_.front());
            queue_.pop_front();
        }
        stats_.queued = queue_.size();
    }
    for (auto& r : started) {
        if (!start(*r)) touched.push_back(r);
    }
    if (model_.hparams.encoder_decoder) encode_sources(started, touched);
    for (auto& r : running_) {
        if (r->cancel.load() && r->done == BASALT_FINISH_NONE) {
            finish(*r, BASALT_FINISH_CANCELLED);
            touched.push_back(r);
        }
    }

    // Pack the step: decode feeds (one token) first, then prefill pieces, in admission order, under the budget.
    struct Row {
        Request* r;
        size_t feed;
        size_t first;  // index in the feed of the first token taken
        size_t count;
    };
    std::vector<Row> rows[2];
    uint64_t budget = config_.max_batch_tokens;
    auto live = [](const Request& r) { return r.planned && r.done == BASALT_FINISH_NONE; };
    // A one-token feed is a decode: only the first pass takes it (a later step if the budget ran out).
    for (const auto& rp : running_) {
        Request& r = *rp;
        if (!live(r)) continue;
        for (size_t f = 0; f < r.feeds.size() && budget > 0; ++f) {
            if (r.feeds[f].n_tokens != 1 || r.fed[f] != 0) continue;
            rows[r.feeds[f].model].push_back({&r, f, 0, 1});
            budget -= 1;
        }
    }
    bool prefill_taken = false;
    for (const auto& rp : running_) {
        Request& r = *rp;
        if (!live(r)) continue;
        for (size_t f = 0; f < r.feeds.size(); ++f) {
            const size_t left = r.feeds[f].n_tokens - r.fed[f];
            if (left == 0 || r.feeds[f].n_tokens == 1) continue;
            size_t n = 0;
            if (config_.prefill_chunk == 0) {
                if (left <= budget || !prefill_taken) n = left;  // whole prompts, never split
            } else {
                n = std::min<uint64_t>({left, config_.prefill_chunk, budget});
            }
            if (n == 0) continue;
            rows[r.feeds[f].model].push_back({&r, f, r.fed[f], n});
            budget -= std::min<uint64_t>(budget, n);
            prefill_taken = true;
        }
    }

    // One forward per model.
    uint64_t step_tokens = 0, prefill_tokens = 0;
    basalt_status forward_status = BASALT_OK;
    std::string forward_error;
    for (int m = 0; m < 2; ++m) {
        if (rows[m].empty()) continue;
        std::vector<int32_t> tokens, positions, seqs;
        std::vector<int8_t> want;
        for (const Row& row : rows[m]) {
            const basalt_decoder_feed& f = row.r->feeds[row.feed];
            const int32_t sid = row.r->seq_ids[m][static_cast<size_t>(f.seq)];
            const uint32_t base = sessions_[m]->seq_length(sid);
            for (size_t i = 0; i < row.count; ++i) {
                const size_t k = row.first + i;
                tokens.push_back(f.tokens[k]);
                positions.push_back(static_cast<int32_t>(base + i));
                seqs.push_back(sid);
                const bool last = k + 1 == f.n_tokens;
                want.push_back(
                    f.logits == BASALT_DECODER_LOGITS_ALL || (f.logits == BASALT_DECODER_LOGITS_LAST && last) ? 1 : 0);
            }
        }
        basalt_batch b{};
        b.struct_size = sizeof(b);
        b.n_tokens = tokens.size();
        b.tokens = tokens.data();
        b.positions = positions.data();
        b.seq_ids = seqs.data();
        b.want_logits = want.data();
        step_tokens += tokens.size();
        try {
            sessions_[m]->decode(b);
        } catch (const Error& e) {
            forward_status = e.status();
            forward_error = fmt::format("forward of model {} failed: {}", m, e.what());
            for (const Row& row : rows[m]) finish(*row.r, BASALT_FINISH_ERROR, forward_error);
            continue;
        }
        size_t out = 0;
        const size_t nv = n_vocab();
        for (const Row& row : rows[m]) {
            Request& r = *row.r;
            const basalt_decoder_feed& f = r.feeds[row.feed];
            for (size_t i = 0; i < row.count; ++i) {
                const size_t k = row.first + i;
                const bool last = k + 1 == f.n_tokens;
                if (f.logits == BASALT_DECODER_LOGITS_ALL || (f.logits == BASALT_DECODER_LOGITS_LAST && last)) {
                    const float* l = sessions_[m]->logits(out++);
                    if (row.first == r.cached[row.feed] && row.first + row.count == f.n_tokens) {
                        // The whole feed is in this step: its rows are contiguous in the session's logits, which
                        // stay valid until that session's next decode (after consume).
                        if (i == 0 || f.logits == BASALT_DECODER_LOGITS_LAST) r.direct[row.feed] = l;
                        r.direct_rows[row.feed] += 1;
                    } else {
                        r.logits[row.feed].insert(r.logits[row.feed].end(), l, l + nv);
                    }
                }
            }
            r.fed[row.feed] += row.count;
            if (f.n_tokens > 1) prefill_tokens += row.count;
        }
    }
    {
        std::lock_guard lock(mutex_);
        if (step_tokens > 0) stats_.steps += 1;
        stats_.prompt_tokens += prefill_tokens;
        stats_.batch_tokens_max = std::max(stats_.batch_tokens_max, step_tokens);
        if (config_.moe_stats && !rows[0].empty()) moe_stats_ = sessions_[0]->moe_stats();
    }

    // Requests whose plan is complete consume their logits and plan again.
    for (auto& rp : running_) {
        Request& r = *rp;
        if (!live(r)) continue;
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

    // Finished requests give their sequences and KV room back.
    size_t active = 0;
    {
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
        stats_.generated_tokens += std::exchange(step_generated_, 0);  // what this step's consumes emitted
    }
    std::sort(touched.begin(), touched.end());
    touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
    deliver(touched);
    {
        std::lock_guard lock(mutex_);
        active = queue_.size() + running_.size();
        idle_now_ = active == 0;
    }
    if (active == 0) idle_.notify_all();
    if (forward_status != BASALT_OK) fail(forward_status, "{} (its requests finished with that error)", forward_error);
    return active;
}

void Engine::deliver(const std::vector<std::shared_ptr<Request>>& touched) {
    for (const auto& r : touched) {
        std::vector<int32_t> toks;
        std::string text;
        const int32_t finish = r->done;
        basalt_request_callback callback = nullptr;
        basalt_request* handle = nullptr;
        {
            std::lock_guard lock(r->mutex);
            toks.swap(r->new_tokens);
            text.swap(r->new_text);
            callback = r->spec.callback;  // cleared when the caller frees the handle
            handle = r->handle;
            if (callback != nullptr) {
                r->in_callback = true;  // basalt_request_free waits for the call to return
                r->callback_thread = std::this_thread::get_id();
            }
        }
        if (callback != nullptr && (!toks.empty() || !text.empty() || finish != BASALT_FINISH_NONE)) {
            callback(handle, toks.data(), toks.size(), text.data(), text.size(), finish, r->spec.user_data);
        }
        {
            std::lock_guard lock(r->mutex);
            r->in_callback = false;
            r->finish = finish;  // published after the last callback: whoever sees it has seen all the output
        }
        r->changed.notify_all();
    }
}

void Engine::run() {
    if (config_.own_thread) {
        std::unique_lock lock(mutex_);
        idle_.wait(lock, [&] { return stopping_ || idle_now_; });
        return;
    }
    while (step() > 0) {
    }
}

void Engine::loop() {
    for (;;) {
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [&] { return stopping_ || !queue_.empty() || !running_.empty(); });
            if (stopping_) return;
        }
        try {
            step();
        } catch (const Error& e) {
            log::warn("engine: {}", e.what());
        } catch (const std::exception& e) {
            log::warn("engine: step failed: {}", e.what());
        }
    }
}

std::vector<MoeLayerStats> Engine::moe_stats() const {
    if (!config_.moe_stats) {
        fail(BASALT_ERR_INVALID_ARGUMENT,
             "the engine does not collect MoE statistics (create it with BASALT_ENGINE_MOE_STATS)");
    }
    std::lock_guard lock(mutex_);
    return moe_stats_;
}

EngineStats Engine::stats() const {
    std::lock_guard lock(mutex_);
    EngineStats s = stats_;
    s.kv_slots_free = n_kv_slots_ - std::min<uint64_t>(n_kv_slots_, kv_reserved_);
    return s;
}

}  // namespace basalt::engine
