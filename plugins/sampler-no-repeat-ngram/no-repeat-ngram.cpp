// sampler-no-repeat-ngram ("no_repeat_ngram"): Hugging Face's NoRepeatNGramLogitsProcessor. With history
// t_1 .. t_L (every token accepted for this sequence; the engine accepts the prompt first, so it counts, as in
// HF's input_ids) and n = N, a candidate v is banned (logit -inf, p 0) when t_{L-N+2} .. t_L, v is an n-gram that
// already occurs in the history, i.e. some i has t_i .. t_{i+N-2} = t_{L-N+2} .. t_L and t_{i+N-1} = v. Nothing is
// banned while L < N - 1. n = 1 bans every token seen. Like HF, it bans even when that leaves no finite candidate
// (the selecting sampler then reports it). State: the history's n-grams, indexed by their first n - 1 tokens;
// accept() extends it, reset() forgets it, clone() copies it. Not draft-safe (a draft's proposals are not in the
// history) and not argmax-invariant.
#include <basalt/sdk/sampler-plugin.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

// No flags: it changes the argmax on purpose; its history lags behind a draft.
constexpr basalt::sdk::sampler_spec kNoRepeatNgram = {
    "no_repeat_ngram",
    "bans a token that would complete an n-gram already in the sequence (prompt included), Hugging Face's semantics",
    0,
};

// Hash of a window of token ids (FNV-1a over the 32-bit ids).
struct WindowHash {
    size_t operator()(const std::vector<int32_t>& w) const noexcept {
        uint64_t h = 1469598103934665603ull;
        for (int32_t t : w) {
            h ^= static_cast<uint32_t>(t);
            h *= 1099511628211ull;
        }
        return static_cast<size_t>(h);
    }
};

struct NoRepeatNgram {
    size_t n = 3;
    std::vector<int32_t> history;
    // first n - 1 tokens of each n-gram seen -> the tokens that followed them (each once)
    std::unordered_map<std::vector<int32_t>, std::vector<int32_t>, WindowHash> next;

    explicit NoRepeatNgram(const basalt::sdk::params& p) {
        p.expect_only({"n"});
        const long long v = p.get_int("n", 3);
        if (v < 1 || v > 1024) p.bad("n", *p.find("n"), "an n-gram size in 1..1024");
        n = static_cast<size_t>(v);
    }

    // The tokens that would complete a repeated n-gram now (nullptr: none).
    const std::vector<int32_t>* banned() const {
        if (history.size() + 1 < n) return nullptr;
        const std::vector<int32_t> key(history.end() - static_cast<std::ptrdiff_t>(n - 1), history.end());
        auto it = next.find(key);
        return it == next.end() ? nullptr : &it->second;
    }

    void apply(basalt_candidates& c) const {
        c.selected = -1;
        const std::vector<int32_t>* ban = banned();
        if (ban == nullptr) return;
        bool changed = false;
        for (size_t i = 0; i < c.size; ++i) {
            basalt_token_data& d = c.data[i];
            bool hit = false;
            for (int32_t t : *ban) hit = hit || t == d.id;
            if (!hit || (std::isinf(d.logit) && d.logit < 0)) continue;
            d.logit = -INFINITY;
            d.p = 0.f;
            changed = true;
        }
        if (changed) {
            c.sorted = 0;
            c.probs_valid = 0;
        }
    }

    void accept(int32_t token) {
        history.push_back(token);
        if (history.size() < n) return;
        const auto end = history.end() - 1;
        std::vector<int32_t> key(end - static_cast<std::ptrdiff_t>(n - 1), end);
        std::vector<int32_t>& after = next[std::move(key)];
        for (int32_t t : after) {
            if (t == token) return;
        }
        after.push_back(token);
    }

    void reset() {
        history.clear();
        next.clear();
    }
};

}  // namespace

BASALT_DECLARE_PLUGIN("sampler-no-repeat-ngram", basalt::sdk::sampler<NoRepeatNgram, kNoRepeatNgram>)
