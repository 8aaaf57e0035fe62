// One generation request of the engine: what was asked (prompt, chain, decoder, stop conditions), the decoder
// instance and its plan while it runs, and its output and figures, which other threads read under `mutex`.
#pragma once

#include <basalt/basalt.h>
#include <basalt/plugin_decoder.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/kv-history.hpp"
#include "engine/text-stream.hpp"
#include "exec/sampler-chain-instance.hpp"

namespace basalt::engine {

class Engine;
using Clock = std::chrono::steady_clock;

// What a request asks for, checked and normalised by Engine::submit.
struct RequestSpec {
    std::vector<int32_t> prompt;      // encoder-decoder models: the decoder's prefix (the decoder start token first)
    std::vector<int32_t> source;      // encoder-decoder models: the encoder's input (empty otherwise)
    std::string samplers = "greedy";  // chain text: submit parses it once and gives `seed` to its dist entries
    std::string decoder = "sample";   // component name
    std::vector<std::pair<std::string, std::string>> decoder_params;
    int32_t max_tokens = -1;
    int64_t seed = -1;  // the request's seed (also applied to the chain's dist entries), for the decoder's draws
    std::vector<int32_t> stop_tokens;
    std::vector<std::string> stop;
    bool ignore_eog = false;
    uint64_t cache_salt = 0;         // prefix-cache salt (0: the shared default); submit mixes the steering identity in
    std::vector<std::string> steer;  // steering specs "FILE[:SCALE[:A-B]]" (the vectors sum)
    basalt_request_callback callback = nullptr;
    void* user_data = nullptr;
    bool logprobs = false;       // record each emitted token's log-probability (decoder 'sample' only)
    int32_t n_top_logprobs = 0;  // and this many most likely alternatives (0..kMaxTopLogprobs)
    // An embedding request (docs/embeddings.md): the prompt is embedded, not continued.
    bool embed = false;
    int32_t pooling = -1;      // Pooling (exec/pooling.hpp); -1: the model's
    bool normalize = true;     // L2
    uint32_t dimensions = 0;   // keep the first this many values before normalising (0: all)
    int32_t grammar_kind = 0;  // BASALT_GRAMMAR_*: submit puts a `grammar` sampler first in the chain
    std::string grammar;       // its text
};

constexpr int32_t kMaxTopLogprobs = 20;

// One emitted token's log-probability under the model's raw distribution (log-softmax of the logits row it was
// drawn from, before any sampler), and the n_top most likely tokens of that row, most likely first.
struct TokenLogprob {
    int32_t token = -1;
    float logprob = 0.f;
    std::vector<std::pair<int32_t, float>> top;
};

// One output of a request's decoder: hypothesis 0 is the streamed output, 1.. the n-best alternatives.
struct Hypothesis {
    std::vector<int32_t> tokens;
    float score = 0.f;
};

struct Request {
    RequestSpec spec;
    uint64_t id = 0;
    basalt_request* handle = nullptr;  // the C handle given to callbacks (owned by the caller)
    SamplerChainSpec chain_spec;       // spec.samplers parsed (at submit), seed applied

    // ---- loop-thread state (only the thread running steps touches these) ----
    basalt_decoder_iface dec{};
    void* dec_instance = nullptr;
    basalt_decoder_info info{};   // n_seq counts the snapshot sequences granted
    uint32_t n_snapshot_seq = 0;  // snapshot sequences granted (a model with a recurrent state): the last of n_seq
    basalt_decoder_host host{};
    Engine* engine = nullptr;
    std::vector<std::unique_ptr<SamplerChain>> chains;  // per request-local sequence (null until forked into)
    std::vector<int32_t> seq_ids[2];                    // request-local sequence -> session sequence id, per model
    uint64_t kv_reserved = 0;                           // slots counted against the cache at admission
    std::vector<float> steer_vectors;                   // the loaded steering (n_layer x n_embd; empty: none)
    std::vector<uint8_t> steer_layers;
    int32_t steer_slot = -1;                 // the model-0 session's steering slot while admitted
    bool encoded = false;                    // encoder-decoder: its source is encoded (into local sequence 0)
    std::vector<basalt_decoder_feed> feeds;  // the current plan
    std::vector<size_t> fed;                 // tokens of each feed computed (or found in the prefix cache) so far
    std::vector<size_t> cached;              // tokens of each feed found in the prefix cache
    std::vector<std::vector<float>> logits;  // rows of a feed computed over several steps, copied
    std::vector<const float*> direct;        // rows of a feed computed in one step: the session's own
    std::vector<size_t> direct_rows;
    bool planned = false;                         // feeds hold a plan not yet consumed
    int32_t finish_pending = BASALT_FINISH_NONE;  // set by stop conditions during consume
    int32_t done = BASALT_FINISH_NONE;            // finished (published as `finish` once its output is delivered)
    TextStream text{};
    Clock::time_point last_token{};
    TokenLogprob pending_logprob;  // with spec.logprobs: the last sampled row's figures, taken by emit
    bool has_pending_logprob = false;
    uint64_t rows_step = 0;       // the engine step own_rows counts (Engine::step_id_)
    size_t own_rows[2] = {0, 0};  // rows this request put into that step, per model
    KvHistory kv;                 // what its sequences hold, for preemption (preemption.cpp)

    // ---- shared state, under mutex ----
    mutable std::mutex mutex;
    std::condition_variable changed;
    std::vector<int32_t> unread_tokens;
    std::string unread_text;
    std::vector<int32_t> new_tokens;  // since the last callback
    std::string new_text;
    int32_t finish = BASALT_FINISH_NONE;  // what callers see: set after the last callback
    std::string error;
    Clock::time_point submitted{}, admitted{}, first_token{}, finished_at{};
    bool has_admitted = false, has_first = false;
    uint64_t prompt_tokens = 0, cached_tokens = 0;
    double encode_ms = 0;           // encoder-decoder: its share of the ragged encoder pass it ran in
    uint64_t generated_tokens = 0;  // written by the loop thread only (under mutex), so it reads it without one
    std::vector<double> itl_ms;
    std::vector<Hypothesis> hypotheses;                        // grows as the decoder emits them
    std::vector<TokenLogprob> logprobs;                        // with spec.logprobs: one per token of hypothesis 0
    std::vector<float> embedding;                              // an embedding request's result, once finished
    std::deque<std::pair<std::string, double>> decoder_stats;  // deque: names stay put (borrowed by the C API)
    std::atomic<bool> cancel{false};
    bool in_callback = false;  // the loop thread is inside this request's callback
    std::thread::id callback_thread;

    // Destroys the decoder instance and the sampler chains (plugin objects: before their plugins unload).
    // Idempotent.
    void release_plugin_objects();
    ~Request();
};

}  // namespace basalt::engine
