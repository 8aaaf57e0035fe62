// A third-party sampler plugin: "no_repeat" bans every token accepted in the last n steps of its sequence
// (logit = -inf, p = 0), so a chain cannot emit the same token twice within that window. If every live candidate
// is banned it changes nothing, so the chain can still pick a token. Parameter: n (default 16; 0 disables,
// -1 bans every token seen). Stateful: accept records the token, reset forgets, clone copies the window.
// Built out of tree with only find_package(Basalt) + basalt_add_plugin; the C++ helpers come from the SDK:
// the class below is the sampler's logic, the last lines declare the component and the library.
#include <basalt/sdk/sampler-plugin.hpp>

#include <cmath>
#include <deque>
#include <unordered_map>

namespace {

constexpr basalt::sdk::sampler_spec kNoRepeat = {
    "no_repeat", "bans the tokens accepted in the last n steps",
    0,  // changes the argmax on purpose; not for draft distributions
};

// One sequence's window. accept/reset make it stateful, so the SDK clones it with the copy constructor.
struct NoRepeat {
    long long n = 16;
    std::deque<int32_t> window;               // accepted tokens, oldest first
    std::unordered_map<int32_t, int> counts;  // occurrences of each token in the window

    explicit NoRepeat(const basalt::sdk::params& p) {
        p.expect_only({"n"});
        n = p.get_int("n", 16);
        if (n < -1) p.bad("n", *p.find("n"), "-1 (all), 0 (off) or a window length");
    }

    bool banned(int32_t id) const { return counts.count(id) != 0; }

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

    void accept(int32_t token) {
        if (n == 0) return;
        window.push_back(token);
        ++counts[token];
        if (n > 0 && window.size() > static_cast<size_t>(n)) {
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

BASALT_DECLARE_PLUGIN("sampler-no-repeat", basalt::sdk::sampler<NoRepeat, kNoRepeat>)
