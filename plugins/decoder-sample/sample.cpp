// decoder-sample: the default decoding strategy, component decoder 'sample'. One sequence: feed the prompt, then
// each round sample a token from the last logits with the request's sampler chain, emit it, and feed it back.
// The engine's stop conditions (end of generation, max_tokens, stop strings, cancel) end it through emit.
// No parameters.
#include <basalt/sdk/decoder-plugin.hpp>

#include <vector>

namespace {

using basalt::sdk::check_host;

constexpr basalt::sdk::decoder_spec kSample = {
    "sample",
    "sampling with the request's sampler chain (greedy, seeded distributions): one sequence, one token a step",
};

struct SampleDecoder {
    const basalt_decoder_host* host = nullptr;
    std::vector<int32_t> prompt;
    int32_t next = -1;  // the token to feed next round (-1: the prompt)
    bool done = false;
    int32_t finish = BASALT_FINISH_NONE;

    explicit SampleDecoder(const basalt::sdk::params& p) { p.expect_only({}); }

    basalt::sdk::decoder_needs requirements() const { return {}; }

    void begin(const basalt_decoder_host& h, const basalt_decoder_request& request) {
        host = &h;
        prompt.assign(request.prompt, request.prompt + request.n_prompt);
        next = -1;
        done = false;
    }

    void plan(basalt_decoder_plan& plan, int32_t& out_finish) {
        if (done) {
            plan.n_feeds = 0;
            out_finish = finish;
            return;
        }
        if (plan.capacity < 1) {
            plan.n_feeds = 1;
            kSample.fail(BASALT_ERR_CAPACITY, "plan needs 1 feed");
        }
        basalt_decoder_feed& f = plan.feeds[0];
        f = basalt_decoder_feed{};
        f.model = 0;
        f.seq = 0;
        f.tokens = next < 0 ? prompt.data() : &next;
        f.n_tokens = next < 0 ? prompt.size() : 1;
        f.logits = BASALT_DECODER_LOGITS_LAST;
        plan.n_feeds = 1;
        out_finish = BASALT_FINISH_NONE;
    }

    void consume(const basalt_decoder_result* results, size_t n_results) {
        if (results == nullptr || n_results != 1 || results[0].logits == nullptr || results[0].n_rows != 1)
            kSample.fail(BASALT_ERR_INVALID_ARGUMENT, "consume expects one logits row");
        int32_t token = -1;
        check_host(host->sample(host->ctx, 0, results[0].logits, &token));  // a failure keeps the host's message
        const basalt_status st = host->emit(host->ctx, 0, &token, 1, 0.f);
        if (st == BASALT_ERR_CANCELLED) {
            done = true;  // the engine knows why (stop, length, cancel)
            return;
        }
        check_host(st);
        next = token;
    }
};

}  // namespace

BASALT_DECLARE_PLUGIN("decoder-sample", basalt::sdk::decoder<SampleDecoder, kSample>)
