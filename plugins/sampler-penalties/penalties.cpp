// sampler-penalties ("penalties"): llama.cpp's repetition / frequency / presence penalties over the last_n
// tokens accepted for this sequence. For every candidate whose token occurs c > 0 times in the window:
//   logit = logit > 0 ? logit / repeat : logit * repeat      (repetition: always towards "less likely")
//   logit = logit - c * freq - present                       (frequency and presence)
// Candidates not in the window are untouched. The state (the window and its counts) belongs to one sequence:
// accept() records a token, reset() forgets them, clone() copies them. last_n = 0 disables the sampler,
// last_n = -1 keeps every accepted token. Not argmax-invariant (it exists to change the choice), and not
// draft-safe: its window holds only accepted tokens, not the ones a draft has proposed since.
#include <basalt/sdk/sampler-plugin.hpp>
#include <basalt/sdk/token-window.hpp>

#include <cmath>
#include <string>

namespace {

// No flags: it changes the argmax on purpose; its window lags behind a draft.
constexpr basalt::sdk::sampler_spec kPenalties = {
    "penalties",
    "repetition, frequency and presence penalties over the last_n accepted tokens",
    0,
};

struct Penalties {
    float repeat = 1.f;
    float freq = 0.f;
    float present = 0.f;
    basalt::sdk::token_window window;  // the last_n accepted tokens

    explicit Penalties(const basalt::sdk::params& p) {
        p.expect_only({"repeat", "freq", "present", "last_n"});
        repeat = p.get_float("repeat", 1.f);
        if (repeat <= 0.f) p.bad("repeat", *p.find("repeat"), "a number > 0");
        freq = p.get_float("freq", 0.f);
        present = p.get_float("present", 0.f);
        const long long last_n = p.get_int("last_n", 64);
        if (last_n < -1) p.bad("last_n", *p.find("last_n"), "an integer >= -1");
        window = basalt::sdk::token_window(last_n);
    }

    void apply(basalt_candidates& c) const {
        c.selected = -1;
        if (window.empty()) return;
        bool changed = false;
        for (size_t i = 0; i < c.size; ++i) {
            const int n = window.count(c.data[i].id);
            if (n == 0) continue;
            float& l = c.data[i].logit;
            l = l > 0.f ? l / repeat : l * repeat;
            l -= static_cast<float>(n) * freq + present;
            changed = true;
        }
        if (changed) {
            c.sorted = 0;
            c.probs_valid = 0;
        }
    }

    void accept(int32_t token) { window.push(token); }
    void reset() { window.clear(); }
};

}  // namespace

BASALT_DECLARE_PLUGIN("sampler-penalties", basalt::sdk::sampler<Penalties, kPenalties>)
