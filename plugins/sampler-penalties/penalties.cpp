// sampler-penalties ("penalties"): llama.cpp's repetition / frequency / presence penalties over the last_n
// tokens accepted for this sequence. For every candidate whose token occurs c > 0 times in the window:
//   logit = logit > 0 ? logit / repeat : logit * repeat      (repetition: always towards "less likely")
//   logit = logit - c * freq - present                       (frequency and presence)
// Candidates not in the window are untouched. The state (the window and its counts) belongs to one sequence:
// accept() records a token, reset() forgets them, clone() copies them. last_n = 0 disables the sampler,
// last_n = -1 keeps every accepted token. Not argmax-invariant (it exists to change the choice), and not
// draft-safe: its window holds only accepted tokens, not the ones a draft has proposed since.
#include <basalt/sdk/sampler-plugin.hpp>

#include <cmath>
#include <deque>
#include <string>
#include <unordered_map>

namespace {

constexpr basalt::sdk::sampler_spec kPenalties = {
    "penalties", "repetition, frequency and presence penalties over the last_n accepted tokens",
    0,  // changes the argmax on purpose; its window lags behind a draft
};

struct Penalties {
    float repeat = 1.f;
    float freq = 0.f;
    float present = 0.f;
    long long last_n = 64;
    std::deque<int32_t> window;
    std::unordered_map<int32_t, int> counts;

    explicit Penalties(const basalt::sdk::params& p) {
        p.expect_only({"repeat", "freq", "present", "last_n"});
        repeat = p.get_float("repeat", 1.f);
        if (repeat <= 0.f) p.bad("repeat", *p.find("repeat"), "a number > 0");
        freq = p.get_float("freq", 0.f);
        present = p.get_float("present", 0.f);
        last_n = p.get_int("last_n", 64);
        if (last_n < -1) p.bad("last_n", *p.find("last_n"), "an integer >= -1");
    }

    void apply(basalt_candidates& c) const {
        c.selected = -1;
        if (counts.empty()) return;
        bool changed = false;
        for (size_t i = 0; i < c.size; ++i) {
            auto it = counts.find(c.data[i].id);
            if (it == counts.end()) continue;
            float& l = c.data[i].logit;
            l = l > 0.f ? l / repeat : l * repeat;
            l -= static_cast<float>(it->second) * freq + present;
            changed = true;
        }
        if (changed) {
            c.sorted = 0;
            c.probs_valid = 0;
        }
    }

    void accept(int32_t token) {
        if (last_n == 0) return;
        window.push_back(token);
        ++counts[token];
        if (last_n > 0 && window.size() > static_cast<size_t>(last_n)) {
            const int32_t old = window.front();
            window.pop_front();
            if (--counts[old] == 0) counts.erase(old);
        }
    }

    void reset() {
        window.clear();
        counts.clear();
    }
};

}  // namespace

BASALT_DECLARE_PLUGIN("sampler-penalties", basalt::sdk::sampler<Penalties, kPenalties>)
