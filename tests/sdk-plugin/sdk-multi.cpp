// A plugin library of three components written only with the SDK's declaration helpers (two samplers, one
// decoder, one BASALT_DECLARE_PLUGIN), for tests/test-sdk-plugin.cpp: what the helpers generate is checked through
// the real plugin host and by calling the generated C tables directly.
#include <basalt/sdk/decoder-plugin.hpp>
#include <basalt/sdk/sampler-plugin.hpp>
#include <basalt/sdk/token-window.hpp>

#include <cmath>
#include <stdexcept>
#include <vector>

namespace {

constexpr basalt::sdk::sampler_spec kShift = {
    "sdk_shift",
    "adds `by` to every logit; throws on token 666",
    BASALT_SAMPLER_ARGMAX_INVARIANT,
    {2, 3, 4},
};

// Stateless: no accept/reset, so the generated table leaves accept, reset and clone NULL.
struct Shift {
    float by = 1.f;

    explicit Shift(const basalt::sdk::params& p) {
        p.expect_only({"by"});
        by = p.get_float("by", 1.f);
    }

    void apply(basalt_candidates& c) const {
        for (size_t i = 0; i < c.size; ++i) {
            if (c.data[i].id == 666) throw std::runtime_error("token 666 is not allowed");
            c.data[i].logit += by;
        }
    }
};

constexpr basalt::sdk::sampler_spec kBanRecent = {
    "sdk_ban_recent",
    "bans the tokens accepted in the last n steps",
    0,
};

// Stateful (accept, reset): the generated table clones it with the copy constructor.
struct BanRecent {
    basalt::sdk::token_window window;

    explicit BanRecent(const basalt::sdk::params& p) {
        p.expect_only({"n"});
        window = basalt::sdk::token_window(p.get_int("n", 4));
    }

    void apply(basalt_candidates& c) const {
        for (size_t i = 0; i < c.size; ++i) {
            if (window.count(c.data[i].id) != 0) c.data[i].logit = -INFINITY;
        }
    }
    void accept(int32_t token) { window.push(token); }
    void reset() { window.clear(); }
};

constexpr basalt::sdk::decoder_spec kOnce = {
    "sdk_once",
    "feeds the prompt on `width` sequences, emits one sampled token and stops (flags, snapshots: the info it declares)",
};

struct Once {
    uint32_t width = 1;
    uint32_t flags = 0, snapshots = 0;  // declared only (basalt_decoder_info.flags, n_snapshot_seq)
    const basalt_decoder_host* host = nullptr;
    std::vector<int32_t> prompt;
    bool done = false;

    explicit Once(const basalt::sdk::params& p) {
        p.expect_only({"width", "flags", "snapshots"});
        const long long w = p.get_int("width", 1);
        if (w < 1 || w > 8) p.bad("width", *p.find("width"), "an integer in 1..8");
        width = static_cast<uint32_t>(w);
        flags = static_cast<uint32_t>(p.get_int("flags", 0));
        snapshots = static_cast<uint32_t>(p.get_int("snapshots", 0));
    }

    basalt::sdk::decoder_needs requirements() const { return {width, 1, width, flags, snapshots}; }

    void begin(const basalt_decoder_host& h, const basalt_decoder_request& request) {
        host = &h;
        prompt.assign(request.prompt, request.prompt + request.n_prompt);
    }

    void plan(basalt_decoder_plan& plan, int32_t& finish) {
        if (done) {
            plan.n_feeds = 0;
            finish = BASALT_FINISH_STOP;
            return;
        }
        if (plan.capacity < 1) {
            plan.n_feeds = 1;
            kOnce.fail(BASALT_ERR_CAPACITY, "plan needs 1 feed");
        }
        plan.feeds[0] = basalt_decoder_feed{0, 0, prompt.data(), prompt.size(), BASALT_DECODER_LOGITS_LAST, 0};
        plan.n_feeds = 1;
        finish = BASALT_FINISH_NONE;
    }

    void consume(const basalt_decoder_result* results, size_t n_results) {
        if (results == nullptr || n_results != 1) kOnce.fail(BASALT_ERR_INVALID_ARGUMENT, "consume expects 1 result");
        int32_t token = -1;
        basalt::sdk::check_host(host->sample(host->ctx, 0, results[0].logits, &token));
        done = true;
        const basalt_status st = host->emit(host->ctx, 0, &token, 1, 0.f);
        if (st != BASALT_ERR_CANCELLED) basalt::sdk::check_host(st);
    }
};

}  // namespace

BASALT_DECLARE_PLUGIN("sdk-multi", basalt::sdk::sampler<Shift, kShift>, basalt::sdk::sampler<BanRecent, kBanRecent>,
                      basalt::sdk::decoder<Once, kOnce>)
