// Engine::submit: a request is checked (tokens, chain, steering, decoder, capacity) and its chain and decoder are
// created before it is queued, so everything wrong with it fails the submit and never a shared step.
#include <utility>

#include "engine/engine.hpp"
#include "engine/steering.hpp"
#include "model/model.hpp"
#include "support/error.hpp"

namespace basalt::engine {

std::shared_ptr<Request> Engine::submit(RequestSpec spec, basalt_request* handle) {
    if (spec.embed) return submit_embed(std::move(spec), handle);
    if (model_.hparams.encoder_only) {
        fail(BASALT_ERR_UNSUPPORTED, "'{}' is an embedding model (encoder-only): it cannot generate; embed instead",
             model_.hparams.arch);
    }
    check_tokens(spec);
    auto r = std::make_shared<Request>();
    r->spec = std::move(spec);
    r->engine = this;
    r->handle = handle;
    r->text = TextStream(r->spec.stop);
    // The chain is parsed once, here; from now on it is read and instantiated in its typed form.
    r->chain_spec = SamplerChainSpec::parse(r->spec.samplers);
    r->chain_spec.seed_dist(r->spec.seed);
    check_chain_tokens(r->chain_spec);
    add_grammar(r->chain_spec, r->spec);
    // Steering vectors are loaded (and refused) now; the identity joins the salt so no K/V computed under one
    // steering is ever attached to a request under another (or none).
    if (!r->spec.steer.empty()) {
        SteerTable st = load_steering(runtime_, model_.hparams, r->spec.steer, &steer_registry_);
        r->spec.cache_salt = steer_salt(r->spec.cache_salt, st.hash);
        r->steer_vectors = std::move(st.vectors);
        r->steer_layers = std::move(st.layers);
    }
    prepare_chain(*r);
    create_request_decoder(*r);
    r->chains.resize(r->info.n_seq);
    {
        std::lock_guard lock(r->mutex);
        r->submitted = Clock::now();
        r->prompt_tokens = r->spec.prompt.size();
    }
    enqueue(r);
    return r;
}

// The source, prompt and stop tokens against the model's kind, the context and the vocabulary.
void Engine::check_tokens(RequestSpec& spec) const {
    const ModelHparams& hp = model_.hparams;
    auto check_vocab = [&](const std::vector<int32_t>& tokens, const char* what) {
        for (size_t i = 0; i < tokens.size(); ++i) {
            if (tokens[i] < 0 || static_cast<size_t>(tokens[i]) >= n_vocab()) {
                fail(BASALT_ERR_INVALID_ARGUMENT, "{} token {} = {} is not in the vocabulary (0..{})", what, i,
                     tokens[i], n_vocab() - 1);
            }
        }
    };
    if (hp.encoder_decoder) {
        // The source goes to the encoder (its rows come from the cross-attention storage of n_ctx rows); the
        // decoder starts from the model's decoder start token unless a prefix was given.
        if (spec.source.empty()) fail(BASALT_ERR_INVALID_ARGUMENT, "the source (the encoder's input) is empty");
        if (spec.source.size() > n_ctx_) {
            fail(BASALT_ERR_CAPACITY, "the source has {} tokens, more than the context of {} (n_ctx)",
                 spec.source.size(), n_ctx_);
        }
        check_vocab(spec.source, "source");
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
    check_vocab(spec.prompt, "prompt");
    for (size_t i = 0; i < spec.stop_tokens.size(); ++i) {
        if (spec.stop_tokens[i] < 0 || static_cast<size_t>(spec.stop_tokens[i]) >= n_vocab()) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "stop_tokens[{}] = {} is not in the vocabulary (0..{})", i,
                 spec.stop_tokens[i], n_vocab() - 1);
        }
    }
}

// Token ids in the chain's parameters must exist in this model's vocabulary (a sampler cannot know it).
void Engine::check_chain_tokens(const SamplerChainSpec& chain) const {
    for (const long long id : chain.logit_bias_tokens()) {
        if (id >= static_cast<long long>(n_vocab())) {
            fail(BASALT_ERR_INVALID_ARGUMENT,
                 "sampler 'logit_bias': token {} is not in the vocabulary (0..{}) of this model", id, n_vocab() - 1);
        }
    }
}

// A request's grammar (structured output) becomes the chain's first sampler, so every later one sees only the
// tokens it allows. The text travels as a parameter value (never through the chain's text syntax).
void Engine::add_grammar(SamplerChainSpec& chain, const RequestSpec& spec) {
    static const char* const kKinds[] = {"", "gbnf", "json_schema", "regex", "json", "gbnf_schemas"};
    if (spec.grammar_kind == BASALT_GRAMMAR_NONE) return;
    SamplerSpec g{"grammar", {{"kind", kKinds[spec.grammar_kind]}}};
    if (spec.grammar_kind != BASALT_GRAMMAR_JSON) g.params.emplace_back("text", spec.grammar);
    chain.entries.insert(chain.entries.begin(), std::move(g));
}

// The chain of sequence 0 (others are forked from it), created now so a bad chain fails the submit.
void Engine::prepare_chain(Request& r) {
    // The vocabulary view is built (once per model) only for chains with a sampler that needs it.
    bool needs_vocab = false;
    for (const SamplerSpec& e : r.chain_spec.entries) {
        needs_vocab = needs_vocab || (sampler_vtable(basalt_sampler::find_component(runtime_.plugins, e.name)).flags &
                                      BASALT_SAMPLER_NEEDS_VOCAB) != 0;
    }
    auto chain0 = SamplerChain::create(runtime_.plugins, r.chain_spec, needs_vocab ? model_.sampler_vocab() : nullptr);
    // The prompt is the chain's history before the first draw (penalties, no_repeat_ngram count it), as in
    // llama.cpp's generation loop and Hugging Face's input_ids; sequences forked later inherit it with the chain.
    // Samplers of the generated output only (a grammar) do not see it.
    for (const int32_t t : r.spec.prompt) chain0->accept_prompt(t);
    r.chains.push_back(std::move(chain0));
}

// The request's decoder instance, checked against the request (logprobs, chain) and the engine (models, room).
void Engine::create_request_decoder(Request& r) {
    if (r.spec.logprobs && r.spec.decoder != "sample") {
        fail(BASALT_ERR_UNSUPPORTED,
             "log-probabilities are recorded for decoder 'sample' only (each token drawn from one logits row), "
             "not for decoder '{}'",
             r.spec.decoder);
    }
    if (r.spec.n_top_logprobs < 0 || r.spec.n_top_logprobs > kMaxTopLogprobs) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "n_top_logprobs {} is out of range (0..{})", r.spec.n_top_logprobs,
             kMaxTopLogprobs);
    }
    r.info = create_decoder(runtime_, r.spec.decoder, r.spec.decoder_params, r.dec, r.dec_instance);
    if (r.info.n_models > 1 && !sessions_[1]) {
        fail(BASALT_ERR_INVALID_ARGUMENT,
             "decoder '{}' needs a second model (a draft or amateur) and the engine has none", r.spec.decoder);
    }
    if (BASALT_HAS_FIELD(&r.info, basalt_decoder_info, flags) && (r.info.flags & BASALT_DECODER_NEEDS_DRAFT_SAFE)) {
        if (const std::string unsafe = r.chains[0]->draft_unsafe(); !unsafe.empty()) {
            fail(BASALT_ERR_INVALID_ARGUMENT,
                 "decoder '{}' verifies drafts with the sampler chain, and sampler {} is not draft-safe (its output "
                 "depends on more than the logits and the accepted tokens): drop it or use decoder 'sample'",
                 r.spec.decoder, unsafe);
        }
    }
    // A model with a recurrent state cannot cut a sequence back: a decoder that rejects fed tokens (it verifies
    // drafts) runs there only when it restores snapshots instead, on the sequences it asked for.
    const ModelHparams* recurrent =
        model_recurrent(0) ? &model_.hparams : (model_recurrent(1) ? &second_->hparams : nullptr);
    const uint32_t flags = BASALT_HAS_FIELD(&r.info, basalt_decoder_info, flags) ? r.info.flags : 0;
    const bool snapshots = (flags & BASALT_DECODER_SNAPSHOTS_RECURRENT) != 0;
    if (recurrent != nullptr && (flags & BASALT_DECODER_NEEDS_DRAFT_SAFE) && !snapshots) {
        fail(BASALT_ERR_UNSUPPORTED,
             "decoder '{}' verifies drafts and cuts rejected ones back, and the hybrid model '{}' keeps a recurrent "
             "state that cannot be cut back (the decoder does not restore snapshots instead): use decoder 'sample' "
             "or 'beam'",
             r.spec.decoder, recurrent->arch);
    }
    if (recurrent != nullptr && snapshots && BASALT_HAS_FIELD(&r.info, basalt_decoder_info, n_snapshot_seq)) {
        r.n_snapshot_seq = r.info.n_snapshot_seq;
        r.info.n_seq += r.n_snapshot_seq;
    }
    if (r.info.n_seq > n_seq_max_) {
        fail(BASALT_ERR_CAPACITY, "decoder '{}' needs {} sequences{}, the engine has {} (n_seq_max)", r.spec.decoder,
             r.info.n_seq,
             r.n_snapshot_seq > 0 ? fmt::format(" ({} of them snapshots of a recurrent state)", r.n_snapshot_seq) : "",
             n_seq_max_);
    }
    const uint64_t worst = scheduler_.worst_case_slots(r);
    if (worst > n_kv_slots_) {
        fail(BASALT_ERR_CAPACITY,
             "the request may need {} KV slots ({} sequences of up to {} positions), more than the cache's {}", worst,
             r.info.n_seq, worst / r.info.n_seq, n_kv_slots_);
    }
}

void Engine::enqueue(const std::shared_ptr<Request>& r) {
    {
        std::lock_guard lock(mutex_);
        if (stopping_) fail(BASALT_ERR_INVALID_ARGUMENT, "the engine is shutting down");
        r->id = next_id_++;
        queue_.push_back(r);
        stats_.queued = queue_.size();
        idle_now_ = false;
    }
    wake_.notify_all();
}

}  // namespace basalt::engine

namespace basalt::engine {

void Engine::add_control_vector(const std::string& name, const std::string& spec) {
    steer_registry_.add(name, load_steering(runtime_, model_.hparams, {spec}));
}

}  // namespace basalt::engine
