// basalt.hpp: a header-only C++17 wrapper over the public C API (basalt/basalt.h), in the manner of ONNX Runtime's
// C++ API: RAII owners of every handle, parameter builders that own the strings their C structs point into, and
// one exception type, basalt::cpp::Error, that carries the failed call's basalt_status and the library's message.
// It adds no behaviour: every member is one or a few C calls, so the C header's comments (ownership, threading,
// what is validated) hold for the wrapper too; the one-line comments here say what each adds.
//
//   basalt::cpp::EngineOptions o;
//   o.model = "target";
//   basalt::cpp::OpenEngine e = basalt::cpp::open_engine(o);      // runtime, model(s) and engine, or an Error
//   basalt::cpp::RequestParams r;
//   r.prompt = "Once upon a time";
//   basalt::cpp::Request q = e.engine.submit(r);
//   e.engine.run();
//
// Handles are move-only; a moved-from handle is empty (get() == nullptr) and destroys nothing. Objects made from a
// runtime or a model (sessions, engines, chains) must be destroyed before it, as in C: OpenEngine keeps that order.
#pragma once

#include <basalt/basalt.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace basalt::cpp {

// ---- errors ---------------------------------------------------------------------------------------------------

// A failed C call: status() is its basalt_status, what() the message basalt_last_error() gave on the failing thread.
class Error : public std::runtime_error {
  public:
    // Makes an error of status with message (copied). Thread-safe.
    Error(basalt_status status, const std::string& message) : std::runtime_error(message), status_(status) {}
    // The C status of the failed call. Thread-safe.
    basalt_status status() const noexcept { return status_; }
    // The status's static name, e.g. "BASALT_ERR_NOT_FOUND". Thread-safe.
    const char* status_name() const noexcept { return basalt_status_name(status_); }

  private:
    basalt_status status_;
};

// Throws Error(status, basalt_last_error()) unless status is BASALT_OK; call it right after the C call, on its
// thread (the message is per thread). Thread-safe.
inline void check(basalt_status status) {
    if (status != BASALT_OK) throw Error(status, basalt_last_error());
}

namespace detail {

// Sole owner of one C handle T*, freed with Free (which ignores NULL). Move-only. Not thread-safe itself.
template <class T, void (*Free)(T*)>
class Handle {
  public:
    Handle() = default;
    explicit Handle(T* p) noexcept : p_(p) {}
    ~Handle() { Free(p_); }
    Handle(Handle&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
    Handle& operator=(Handle&& o) noexcept {
        if (this != &o) {
            Free(p_);
            p_ = std::exchange(o.p_, nullptr);
        }
        return *this;
    }
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;
    // The C handle (borrowed; still owned by *this), NULL when empty.
    T* get() const noexcept { return p_; }
    // Gives up ownership: the caller frees the returned handle.
    T* release() noexcept { return std::exchange(p_, nullptr); }
    // True when a handle is held.
    explicit operator bool() const noexcept { return p_ != nullptr; }

  private:
    T* p_ = nullptr;
};

}  // namespace detail

// ---- parameters -----------------------------------------------------------------------------------------------

// An ordered KEY=VALUE list (owned strings) behind a basalt_params, e.g. a backend's or a cache manager's
// parameters. Entries keep the order they were added in; a key may repeat (the component decides). Not thread-safe.
class Params {
  public:
    // Appends key=value (both copied); returns *this for chaining.
    Params& add(std::string key, std::string value) {
        entries_.emplace_back(std::move(key), std::move(value));
        return *this;
    }
    // The value of the first entry named key, or nullptr (borrowed until *this changes).
    const std::string* find(const std::string& key) const {
        for (const auto& [k, v] : entries_)
            if (k == key) return &v;
        return nullptr;
    }
    // Number of entries.
    size_t size() const noexcept { return entries_.size(); }
    // True when there is no entry.
    bool empty() const noexcept { return entries_.empty(); }
    // The entries in order (borrowed until *this changes).
    const std::vector<std::pair<std::string, std::string>>& entries() const noexcept { return entries_; }
    // The C view, pointing into *this: valid until *this is modified, moved or destroyed.
    const basalt_params* raw() const {
        keys_.clear();
        values_.clear();
        for (const auto& [k, v] : entries_) {
            keys_.push_back(k.c_str());
            values_.push_back(v.c_str());
        }
        raw_ = basalt_params{};
        raw_.struct_size = sizeof(basalt_params);
        raw_.count = entries_.size();
        raw_.keys = keys_.data();
        raw_.values = values_.data();
        return &raw_;
    }

  private:
    std::vector<std::pair<std::string, std::string>> entries_;
    mutable std::vector<const char*> keys_, values_;
    mutable basalt_params raw_{};
};

// Where a session's or an engine's math runs and how its KV cache is kept; shared by SessionParams and
// EngineParams. Not thread-safe.
struct ComputeParams {
    std::string backend = "cpu";     // backend component
    std::optional<uint32_t> device;  // the backend's device index (its "device" parameter); unset: the backend's
    Params backend_params;           // further backend parameters, after "device"
    std::string kv_cache = "paged";  // KV cache manager NAME[:key=value,...]
    Params kv_params;                // the manager's parameters (kv-paged: k_type, v_type, residual)
    uint32_t n_threads = 0;          // backend threads; 0: the backend's default
    std::string moe_router;          // "" : dropless; or capacity:factor=C,overflow=drop|reroute

    // The backend parameters the C struct gets: "device" first when set, then backend_params; NULL when none.
    // Points into *this (and into storage it keeps): valid until *this is modified, moved or destroyed.
    const basalt_params* raw_backend_params() const {
        all_backend_ = Params();
        if (device) all_backend_.add("device", std::to_string(*device));
        for (const auto& [k, v] : backend_params.entries()) all_backend_.add(k, v);
        return all_backend_.empty() ? nullptr : all_backend_.raw();
    }

  private:
    mutable Params all_backend_;
};

// Builder of a basalt_session_params (zero: the C defaults). Not thread-safe.
struct SessionParams {
    ComputeParams compute;
    uint32_t n_ctx = 0;                   // cache slots of all sequences; 0: training context, at most 4096
    uint32_t n_batch = 0;                 // tokens per forward pass; 0: 512
    uint32_t n_seq_max = 0;               // sequences; 0: 1
    uint64_t state_checkpoint_bytes = 0;  // hybrid models: host memory for recurrent-state checkpoints; 0: none

    // The C struct, pointing into *this: valid until *this is modified, moved or destroyed.
    basalt_session_params raw() const {
        basalt_session_params p{};
        p.struct_size = sizeof(p);
        p.n_ctx = n_ctx;
        p.n_batch = n_batch;
        p.n_seq_max = n_seq_max;
        p.n_threads = compute.n_threads;
        p.backend = compute.backend.c_str();
        p.kv_cache = compute.kv_cache.c_str();
        p.backend_params = compute.raw_backend_params();
        p.kv_params = compute.kv_params.raw();
        p.moe_router = compute.moe_router.empty() ? nullptr : compute.moe_router.c_str();
        p.state_checkpoint_bytes = state_checkpoint_bytes;
        return p;
    }
};

// Builder of a basalt_engine_params (zero: the C defaults). second_model is borrowed: the model must outlive the
// engine. Not thread-safe.
struct EngineParams {
    ComputeParams compute;
    uint32_t flags = 0;                          // BASALT_ENGINE_*
    uint32_t n_ctx = 0;                          // positions one request may hold; 0: training context, at most 4096
    uint32_t n_parallel = 1;                     // requests running at once
    uint32_t n_seq_max = 0;                      // cache sequences; 0: n_parallel
    uint32_t n_kv_slots = 0;                     // KV slots of all sequences; 0: n_ctx x n_seq_max
    uint32_t max_batch_tokens = 0;               // token budget of one step; 0: 512
    uint32_t prefill_chunk = 0;                  // longest prefill piece per step; 0: whole prompts
    const basalt_model* second_model = nullptr;  // draft / amateur (borrowed), or NULL

    // Step-time budget while requests decode: > 0 ms; 0: max_step_factor (0: 2) x the decode rows' predicted time;
    // < 0: none.
    double max_step_ms = 0;
    double max_step_factor = 0;
    // A hybrid model's prefix cache: host memory for recurrent-state checkpoints; 0: room for 16 states, or 2 per
    // running request (n_parallel) when that is more.
    uint64_t prefix_state_bytes = 0;

    // The C struct, pointing into *this: valid until *this is modified, moved or destroyed.
    basalt_engine_params raw() const {
        basalt_engine_params p{};
        p.struct_size = sizeof(p);
        p.flags = flags;
        p.n_ctx = n_ctx;
        p.n_parallel = n_parallel;
        p.n_seq_max = n_seq_max;
        p.n_kv_slots = n_kv_slots;
        p.max_batch_tokens = max_batch_tokens;
        p.prefill_chunk = prefill_chunk;
        p.n_threads = compute.n_threads;
        p.backend = compute.backend.c_str();
        p.kv_cache = compute.kv_cache.c_str();
        p.backend_params = compute.raw_backend_params();
        p.kv_params = compute.kv_params.raw();
        p.second_model = second_model;
        p.moe_router = compute.moe_router.empty() ? nullptr : compute.moe_router.c_str();
        p.max_step_ms = max_step_ms;
        p.max_step_factor = max_step_factor;
        p.prefix_state_bytes = prefix_state_bytes;
        return p;
    }
};

// Builder of one engine request (basalt_request_params): the strings and arrays it points into, owned here.
// Not thread-safe.
struct RequestParams {
    std::string prompt;                  // text prompt (used unless has_tokens)
    std::vector<int32_t> tokens;         // the prompt as ids, when has_tokens
    bool has_tokens = false;             //
    uint32_t flags = 0;                  // BASALT_REQUEST_*
    int32_t max_tokens = 64;             // -1: until the context is full
    std::string samplers = "greedy";     // sampler chain text
    std::string decoder;                 // "" : the engine's default ("sample")
    std::vector<std::string> stop;       // stop strings
    std::vector<int32_t> stop_tokens;    // extra end-of-generation ids
    int64_t seed = -1;                   // -1: the chain's own
    std::string cache_salt;              // "" : the shared prefix cache
    std::vector<std::string> steer;      // control vectors "FILE[:SCALE[:A-B]]"
    std::string source;                  // encoder-decoder models: the encoder's input text, when has_source
    std::vector<int32_t> source_tokens;  // or as ids, when has_source_tokens
    bool has_source = false, has_source_tokens = false;
    int32_t n_top_logprobs = 0;  // with BASALT_REQUEST_LOGPROBS: alternatives per token (0..20)
    // With BASALT_REQUEST_EMBED (docs/embeddings.md):
    int32_t pooling = BASALT_POOLING_MODEL;
    int32_t normalize = BASALT_NORMALIZE_L2;
    uint32_t dimensions = 0;                     // 0: all
    int32_t grammar_kind = BASALT_GRAMMAR_NONE;  // structured output: BASALT_GRAMMAR_*
    std::string grammar;                         // its text (GBNF, JSON Schema, regex)

    // The C struct with callback and user_data as given (borrowed by the engine until the request finishes),
    // pointing into *this: valid until *this is modified, moved or destroyed.
    basalt_request_params raw(basalt_request_callback callback = nullptr, void* user_data = nullptr) {
        basalt_request_params rp{};
        rp.struct_size = sizeof(rp);
        rp.n_top_logprobs = n_top_logprobs;
        rp.flags = flags;
        rp.pooling = pooling;
        rp.normalize = normalize;
        rp.dimensions = dimensions;
        if (has_tokens) {
            rp.tokens = tokens.data();
            rp.n_tokens = tokens.size();
        } else if (!prompt.empty() || (!has_source && !has_source_tokens)) {
            rp.prompt = prompt.data();
            rp.prompt_len = prompt.size();
        }
        if (has_source_tokens) {
            rp.source_tokens = source_tokens.data();
            rp.n_source_tokens = source_tokens.size();
        } else if (has_source) {
            rp.source = source.c_str();
        }
        rp.samplers = samplers.c_str();
        rp.decoder = decoder.empty() ? nullptr : decoder.c_str();
        rp.max_tokens = max_tokens;
        rp.seed = seed;
        rp.cache_salt = cache_salt.empty() ? nullptr : cache_salt.c_str();
        stop_ptrs_.clear();
        for (const auto& s : stop) stop_ptrs_.push_back(s.c_str());
        rp.stop = stop_ptrs_.data();
        rp.n_stop = stop_ptrs_.size();
        rp.stop_tokens = stop_tokens.empty() ? nullptr : stop_tokens.data();
        rp.n_stop_tokens = stop_tokens.size();
        steer_ptrs_.clear();
        for (const auto& v : steer) steer_ptrs_.push_back(v.c_str());
        rp.steer = steer_ptrs_.data();
        rp.n_steer = steer_ptrs_.size();
        rp.callback = callback;
        rp.user_data = user_data;
        rp.grammar_kind = grammar_kind;
        rp.grammar = grammar_kind != BASALT_GRAMMAR_NONE ? grammar.c_str() : nullptr;
        return rp;
    }

  private:
    std::vector<const char*> stop_ptrs_, steer_ptrs_;
};

// ---- runtime ----------------------------------------------------------------------------------------------------

// How a runtime is made: plugin discovery flags and plugin files loaded explicitly, in order.
struct RuntimeOptions {
    uint32_t flags = 0;                // BASALT_RUNTIME_*
    std::vector<std::string> plugins;  // loaded after discovery (basalt_runtime_load_plugin)
};

// Owns a basalt_runtime (the loaded plugins). Lookups are thread-safe; loading is not (as in C).
class Runtime : public detail::Handle<basalt_runtime, basalt_runtime_destroy> {
  public:
    // An empty handle.
    Runtime() = default;
    // Creates a runtime with discovery per options.flags, then loads options.plugins; throws Error (and keeps
    // nothing) when either fails.
    explicit Runtime(const RuntimeOptions& options) {
        basalt_runtime_params p{};
        p.struct_size = sizeof(p);
        p.flags = options.flags;
        basalt_runtime* rt = nullptr;
        check(basalt_runtime_create(&p, &rt));
        Runtime owner(rt);
        for (const auto& file : options.plugins) check(basalt_runtime_load_plugin(rt, file.c_str()));
        *this = std::move(owner);
    }
    // Loads one more plugin library; throws Error. Not thread-safe with other calls on this runtime.
    void load_plugin(const std::string& path) { check(basalt_runtime_load_plugin(get(), path.c_str())); }
    // Number of loaded components. Thread-safe.
    size_t component_count() const { return basalt_runtime_component_count(get()); }
    // Describes component index (borrowed strings live as long as the runtime); throws Error. Thread-safe.
    basalt_component_info component(size_t index) const {
        basalt_component_info info{};
        info.struct_size = sizeof(info);
        check(basalt_runtime_component_info(get(), index, &info));
        return info;
    }
    // What decoder spec "NAME[:key=value,...]" needs for one request; throws Error for an unknown or refused spec.
    // Thread-safe.
    basalt_decoder_needs decoder_needs(const std::string& spec) const {
        basalt_decoder_needs n{};
        n.struct_size = sizeof(n);
        check(basalt_decoder_requirements(get(), spec.c_str(), &n));
        return n;
    }

  private:
    explicit Runtime(basalt_runtime* rt) : Handle(rt) {}
};

// ---- models -----------------------------------------------------------------------------------------------------

// Owns a basalt_model (a mapped, validated GGUF). Every read is thread-safe (as in C).
class Model : public detail::Handle<basalt_model, basalt_model_free> {
  public:
    // An empty handle.
    Model() = default;
    // Loads a GGUF file or a shipped model's name ("target", "draft"); runtime may be NULL; throws Error.
    explicit Model(const std::string& path, const Runtime* runtime = nullptr) {
        basalt_model* m = nullptr;
        check(basalt_model_load(runtime != nullptr ? runtime->get() : nullptr, path.c_str(), nullptr, &m));
        reset(m);
    }
    // Hyper-parameters and sizes (borrowed strings live as long as the model); throws Error.
    basalt_model_info info() const {
        basalt_model_info i{};
        i.struct_size = sizeof(i);
        check(basalt_model_describe(get(), &i));
        return i;
    }
    // The decoder's block count of an encoder-decoder model (0: decoder-only); throws Error.
    uint32_t decoder_layers() const {
        uint32_t n = 0;
        check(basalt_model_decoder_layers(get(), &n));
        return n;
    }
    // Metadata key rendered as text, or nullopt when the file has no such key.
    std::optional<std::string> meta(const std::string& key) const {
        const char* v = nullptr;
        if (basalt_model_meta(get(), key.c_str(), &v) != BASALT_OK) return std::nullopt;
        return std::string(v);
    }
    // Throws Error unless Basalt can run the model (basalt_model_check_runnable).
    void check_runnable() const { check(basalt_model_check_runnable(get())); }
    // The ids of text (BASALT_TOKENIZE_* flags); throws Error.
    std::vector<int32_t> tokenize(const std::string& text, uint32_t flags) const {
        std::vector<int32_t> out(text.size() + 8);
        size_t n = 0;
        basalt_status st = basalt_tokenize(get(), text.data(), text.size(), flags, out.data(), out.size(), &n);
        if (st == BASALT_ERR_CAPACITY) {
            out.assign(n, 0);
            st = basalt_tokenize(get(), text.data(), text.size(), flags, out.data(), out.size(), &n);
        }
        check(st);
        out.resize(n);
        return out;
    }
    // The text of one token (special: control tokens as their text); "" when the id is bad.
    std::string piece(int32_t token, bool special) const {
        char buf[256];
        size_t len = 0;
        const basalt_status st = basalt_token_to_piece(get(), token, special ? 1 : 0, buf, sizeof(buf), &len);
        if (st == BASALT_ERR_CAPACITY) {
            std::string big(len + 1, '\0');
            if (basalt_token_to_piece(get(), token, special ? 1 : 0, big.data(), big.size(), &len) != BASALT_OK)
                return {};
            big.resize(len);
            return big;
        }
        return st == BASALT_OK ? std::string(buf, len) : std::string();
    }
    // The text of tokens (BASALT_DETOKENIZE_* flags); throws Error for a bad id.
    std::string detokenize(const std::vector<int32_t>& tokens, uint32_t flags) const {
        std::string out(tokens.size() * 8 + 16, '\0');
        size_t len = 0;
        basalt_status st = basalt_detokenize(get(), tokens.data(), tokens.size(), flags, out.data(), out.size(), &len);
        if (st == BASALT_ERR_CAPACITY) {
            out.assign(len + 1, '\0');
            st = basalt_detokenize(get(), tokens.data(), tokens.size(), flags, out.data(), out.size(), &len);
        }
        check(st);
        out.resize(len);
        return out;
    }
    // The vocabulary's special tokens; throws Error.
    basalt_special_tokens special_tokens() const {
        basalt_special_tokens s{};
        s.struct_size = sizeof(s);
        check(basalt_model_special_tokens(get(), &s));
        return s;
    }
    // The memory a session of shape params (NULL: defaults) needs; throws Error.
    basalt_memory_plan plan(const basalt_plan_params* params) const {
        basalt_memory_plan m{};
        m.struct_size = sizeof(m);
        check(basalt_model_plan(get(), params, &m));
        return m;
    }

  private:
    void reset(basalt_model* m) { static_cast<Handle&>(*this) = Handle(m); }
};

// ---- samplers ---------------------------------------------------------------------------------------------------

// Owns a basalt_sampler_chain. One thread per chain at a time (as in C); the runtime must outlive it.
class SamplerChain : public detail::Handle<basalt_sampler_chain, basalt_sampler_chain_destroy> {
  public:
    // An empty handle.
    SamplerChain() = default;
    // Creates a chain from its text ("top_k:40;temp:0.7;dist"); throws Error (BASALT_ERR_FORMAT when malformed).
    SamplerChain(const Runtime& runtime, const std::string& spec) {
        basalt_sampler_chain* c = nullptr;
        check(basalt_sampler_chain_create(runtime.get(), spec.c_str(), &c));
        static_cast<Handle&>(*this) = Handle(c);
    }
    // One step over n_vocab logits (borrowed for the call): the chosen token, accepted into every sampler.
    int32_t sample(const float* logits, size_t n_vocab) {
        int32_t t = -1;
        check(basalt_sampler_chain_sample(get(), logits, n_vocab, &t));
        return t;
    }
    // Tells every sampler that token was chosen; throws Error.
    void accept(int32_t token) { check(basalt_sampler_chain_accept(get(), token)); }
    // Forgets every sampler's per-sequence state; throws Error.
    void reset() { check(basalt_sampler_chain_reset(get())); }
    // A deep copy, state included; throws Error.
    SamplerChain clone() const {
        basalt_sampler_chain* c = nullptr;
        check(basalt_sampler_chain_clone(get(), &c));
        SamplerChain out;
        static_cast<Handle&>(out) = Handle(c);
        return out;
    }
    // Number of samplers.
    size_t size() const { return basalt_sampler_chain_length(get()); }
    // Name of sampler index ("" past the end).
    std::string name(size_t index) const {
        const char* n = basalt_sampler_chain_name(get(), index);
        return n != nullptr ? n : "";
    }
};

// ---- sessions ---------------------------------------------------------------------------------------------------

// Owns a basalt_session (one model on one backend, decoding ragged batches). One thread at a time (as in C); the
// runtime and the model must outlive it.
class Session : public detail::Handle<basalt_session, basalt_session_free> {
  public:
    // An empty handle.
    Session() = default;
    // Creates a session; throws Error naming what the backend or cache manager refused.
    Session(const Runtime& runtime, const Model& model, const SessionParams& params) {
        const basalt_session_params p = params.raw();
        basalt_session* s = nullptr;
        check(basalt_session_create(runtime.get(), model.get(), &p, &s));
        static_cast<Handle&>(*this) = Handle(s);
    }
    // Runs a ragged batch (borrowed for the call); throws Error and changes nothing when it is refused.
    void decode(const basalt_batch& batch) { check(basalt_session_decode(get(), &batch)); }
    // Logits row of the last decode (n_vocab floats, borrowed until the next decode); throws Error.
    const float* logits(size_t row) const {
        const float* l = nullptr;
        check(basalt_session_logits(get(), row, &l));
        return l;
    }
    // Logits rows the last decode produced.
    size_t n_outputs() const { return basalt_session_n_outputs(get()); }
    // Length of a logits row.
    size_t n_vocab() const { return basalt_session_n_vocab(get()); }
    // The session's context size.
    uint32_t n_ctx() const { return basalt_session_n_ctx(get()); }
    // Tokens cached for seq; throws Error.
    uint32_t seq_length(int32_t seq) const {
        uint32_t n = 0;
        check(basalt_session_seq_length(get(), seq, &n));
        return n;
    }
    // Forgets seq; throws Error.
    void seq_drop(int32_t seq) { check(basalt_session_seq_drop(get(), seq)); }
    // Makes empty dst a copy-on-write copy of src; throws Error.
    void seq_fork(int32_t src, int32_t dst) { check(basalt_session_seq_fork(get(), src, dst)); }
    // Forgets positions >= n_keep of seq; throws Error.
    void seq_truncate(int32_t seq, uint32_t n_keep) { check(basalt_session_seq_truncate(get(), seq, n_keep)); }
    // What the session allocated; throws Error.
    basalt_memory_plan memory() const {
        basalt_memory_plan m{};
        m.struct_size = sizeof(m);
        check(basalt_session_memory(get(), &m));
        return m;
    }
};

// ---- engine and requests ------------------------------------------------------------------------------------------

// One log-probability entry of a request (basalt_request_logprob).
struct Logprob {
    int32_t token = -1;
    float logprob = 0.f;
    std::vector<std::pair<int32_t, float>> top;  // most likely first
};

// Owns a basalt_request. Every call is thread-safe (as in C); freeing cancels an unfinished request.
class Request : public detail::Handle<basalt_request, basalt_request_free> {
  public:
    // An empty handle.
    Request() = default;
    // Takes ownership of r (from basalt_engine_submit).
    explicit Request(basalt_request* r) noexcept : Handle(r) {}
    // BASALT_FINISH_* (NONE while queued or running).
    int32_t finish_reason() const { return basalt_request_finish_reason(get()); }
    // The message of a request that finished with BASALT_FINISH_ERROR ("" otherwise).
    std::string error() const { return basalt_request_error(get()); }
    // Appends the output not read yet to tokens and text; false when there was none.
    bool read(std::vector<int32_t>& tokens, std::string& text) {
        bool any = false;
        for (;;) {
            int32_t tb[256];
            char cb[4096];
            size_t nt = 0, nc = 0;
            check(basalt_request_read(get(), tb, 256, &nt, cb, sizeof cb, &nc));
            if (nt == 0 && nc == 0) return any;
            tokens.insert(tokens.end(), tb, tb + nt);
            text.append(cb, nc);
            any = true;
        }
    }
    // Waits until there is unread output or the request finished, at most timeout_ms (-1: no limit).
    void wait(int32_t timeout_ms) { check(basalt_request_wait(get(), timeout_ms)); }
    // Cancels the request (it finishes CANCELLED at the next step); idempotent.
    void cancel() { check(basalt_request_cancel(get())); }
    // The request's figures so far.
    basalt_request_stats stats() const {
        basalt_request_stats s{};
        s.struct_size = sizeof(s);
        check(basalt_request_stats_get(get(), &s));
        return s;
    }
    // Number of hypotheses (n-best of beam search; 1 for a plain request once it has output).
    size_t n_hypotheses() const { return basalt_request_n_hypotheses(get()); }
    // Tokens of hypothesis index and, into *score when non-NULL, its score; throws Error past the last.
    std::vector<int32_t> hypothesis(size_t index, float* score = nullptr) const {
        size_t n = 0;
        float s = 0.f;
        check(basalt_request_hypothesis(get(), index, nullptr, 0, &n, &s));
        std::vector<int32_t> t(n);
        check(basalt_request_hypothesis(get(), index, t.data(), t.size(), &n, &s));
        if (score != nullptr) *score = s;
        return t;
    }
    // The named figures the decoder recorded, in order (e.g. speculative's "acceptance_rate").
    std::vector<std::pair<std::string, double>> decoder_stats() const {
        std::vector<std::pair<std::string, double>> out;
        const char* name = nullptr;
        double value = 0;
        for (size_t i = 0; basalt_request_decoder_stat(get(), i, &name, &value) == BASALT_OK; ++i)
            out.emplace_back(name, value);
        return out;
    }
    // The result of a finished embedding request (BASALT_REQUEST_EMBED); throws Error while it runs or when it failed.
    std::vector<float> embedding() const {
        size_t n = 0;
        check(basalt_request_embedding(get(), nullptr, 0, &n));
        std::vector<float> v(n);
        check(basalt_request_embedding(get(), v.data(), v.size(), &n));
        return v;
    }
    // Number of emitted tokens with a log-probability (BASALT_REQUEST_LOGPROBS).
    size_t n_logprobs() const { return basalt_request_n_logprobs(get()); }
    // Entry index of the log-probabilities with up to max_top alternatives; throws Error past the last.
    Logprob logprob(size_t index, size_t max_top = 20) const {
        Logprob lp;
        std::vector<int32_t> ids(max_top);
        std::vector<float> lps(max_top);
        size_t n_top = 0;
        check(basalt_request_logprob(get(), index, &lp.token, &lp.logprob, ids.data(), lps.data(), max_top, &n_top));
        for (size_t t = 0; t < std::min(n_top, max_top); ++t) lp.top.emplace_back(ids[t], lps[t]);
        return lp;
    }
};

// Owns a basalt_engine (the generation loop). submit is thread-safe; step/run from one thread at a time (as in C).
// The runtime and the models must outlive it.
class Engine : public detail::Handle<basalt_engine, basalt_engine_destroy> {
  public:
    // An empty handle.
    Engine() = default;
    // Creates an engine; throws Error naming what the backend, the cache manager or the models refused.
    Engine(const Runtime& runtime, const Model& model, const EngineParams& params) {
        const basalt_engine_params p = params.raw();
        basalt_engine* e = nullptr;
        check(basalt_engine_create(runtime.get(), model.get(), &p, &e));
        static_cast<Handle&>(*this) = Handle(e);
    }
    // Queues a request (params' strings are copied or borrowed for the call as the C header says; callback and
    // user_data are borrowed until it finishes); throws Error for a refused request. The caller owns the result.
    Request submit(RequestParams& params, basalt_request_callback callback = nullptr, void* user_data = nullptr) {
        const basalt_request_params rp = params.raw(callback, user_data);
        return submit(rp);
    }
    // The same from a filled C struct.
    Request submit(const basalt_request_params& rp) {
        basalt_request* r = nullptr;
        check(basalt_engine_submit(get(), &rp, &r));
        return Request(r);
    }
    // One scheduler step; returns the requests queued or running after it. Throws Error when the forward failed.
    size_t step() {
        size_t active = 0;
        check(basalt_engine_step(get(), &active));
        return active;
    }
    // Steps until no request is queued or running; throws Error when a forward failed.
    void run() { check(basalt_engine_run(get())); }
    // Loads the control vector spec "FILE[:SCALE[:A-B]]" now and keeps it under `name` (requests' steer specs then
    // name it and open no file); throws Error naming a refused file or name. Thread-safe.
    void add_control_vector(const std::string& name, const std::string& spec) {
        check(basalt_engine_add_control_vector(get(), name.c_str(), spec.c_str()));
    }
    // The engine's counters. Thread-safe.
    basalt_engine_stats stats() const {
        basalt_engine_stats s{};
        s.struct_size = sizeof(s);
        check(basalt_engine_stats_get(get(), &s));
        return s;
    }
    // MoE routing statistics of layer (BASALT_ENGINE_MOE_STATS) and per-expert counts into per_expert.
    basalt_moe_stats moe_stats(uint32_t layer, std::vector<uint64_t>& per_expert) const {
        basalt_moe_stats s{};
        s.struct_size = sizeof(s);
        check(basalt_engine_moe_stats(get(), layer, &s, per_expert.data(), per_expert.size()));
        return s;
    }
};

// ---- one call: runtime, models, engine ------------------------------------------------------------------------------

// Everything open_engine needs. Not thread-safe.
struct EngineOptions {
    RuntimeOptions runtime;        // plugins
    std::string model = "target";  // GGUF file or shipped model name
    std::string second_model;      // draft / amateur file or name; "" : none
    EngineParams params;           // params.second_model is set by open_engine
    // Called once the runtime and the main model are loaded, before the second model and the engine: size params
    // from them (a context from a chat template, sequences from a decoder's needs). May throw; nothing is kept.
    std::function<void(const Runtime&, const Model&, EngineParams&)> prepare;
};

// A runtime, its model(s) and an engine over them, destroyed in the right order (engine first). Move-constructible
// only: a move assignment would free the old runtime before the old engine.
struct OpenEngine {
    OpenEngine() = default;
    OpenEngine(OpenEngine&&) noexcept = default;
    OpenEngine& operator=(OpenEngine&&) = delete;
    ~OpenEngine() = default;

    Runtime runtime;
    Model model;
    Model second;  // empty without a second model
    Engine engine;
};

// Creates the runtime, loads the model, calls options.prepare, loads the second model and creates the engine, in
// that order; throws Error (or what prepare threw) and keeps nothing on failure. Thread-safe.
inline OpenEngine open_engine(EngineOptions options) {
    OpenEngine e;
    e.runtime = Runtime(options.runtime);
    e.model = Model(options.model, &e.runtime);
    if (options.prepare) options.prepare(e.runtime, e.model, options.params);
    if (!options.second_model.empty()) e.second = Model(options.second_model, &e.runtime);
    options.params.second_model = e.second.get();
    e.engine = Engine(e.runtime, e.model, options.params);
    return e;
}

}  // namespace basalt::cpp
