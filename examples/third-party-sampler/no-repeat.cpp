// A third-party sampler plugin: "no_repeat" bans every token accepted in the last n steps of its sequence
// (logit = -inf, p = 0), so a chain cannot emit the same token twice within that window. If every live candidate
// is banned it changes nothing, so the chain can still pick a token. Parameter: n (default 16; 0 disables,
// -1 bans every token seen). Stateful: accept records the token, reset forgets, clone copies the window.
// Built out of tree with only find_package(Basalt) + basalt_add_plugin; the C++ helpers come from the SDK:
// the class below is the sampler's logic, the last lines declare the component and the library.
#include <basalt/sdk/sampler-plugin.hpp>
#include <basalt/sdk/token-window.hpp>

#include <cmath>

namespace {

// No flags: it changes the argmax on purpose; not for draft distributions.
constexpr basalt::sdk::sampler_spec kNoRepeat = {
    "no_repeat",
    "bans the tokens accepted in the last n steps",
    0,
};

// One sequence's window. accept/reset make it stateful, so the SDK clones it with the copy constructor.
struct NoRepeat {
    basalt::sdk::token_window window;  // the last n accepted tokens

    explicit NoRepeat(const basalt::sdk::params& p) {
        p.expect_only({"n"});
        const long long n = p.get_int("n", 16);
        if (n < -1) p.bad("n", *p.find("n"), "-1 (all), 0 (off) or a window length");
        window = basalt::sdk::token_window(n);
    }

    bool banned(int32_t id) const { return window.count(id) != 0; }

    void apply(basalt_candidates& c) const {
        c.selected = -1;
        size_t live = 0, hit = 0;
        for (size_t i = 0; i < c.size; ++i) {
            if (std::isinf(c.data[i].logit) && c.data[i].logit < 0) continue;
            ++live;
            if (banned(c.data[i].id)) ++hit;
        }
        if (hit == 0 || hit == live) return;  // nothing to ban, or banning would leave nothing
        for (size_t i = 0; i < c.size; ++i) {
            if (!banned(c.data[i].id)) continue;
            c.data[i].logit = -INFINITY;
            c.data[i].p = 0.f;
        }
        c.sorted = 0;
        c.probs_valid = 0;
    }

    void accept(int32_t token) { window.push(token); }
    void reset() { window.clear(); }
};

}  // namespace

BASALT_DECLARE_PLUGIN("sampler-no-repeat", basalt::sdk::sampler<NoRepeat, kNoRepeat>)
