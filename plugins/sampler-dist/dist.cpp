// sampler-dist ("dist"): computes p = softmax(logits) over the live candidates and draws one of them with a
// seeded xoshiro256** generator (seeded through splitmix64, uniform doubles from the top 53 bits), walking the
// candidates in their current order. Everything is integer or IEEE arithmetic we do ourselves, so the same seed
// gives the same draws with any standard library. seed = -1 (the default) takes a seed from std::random_device.
// reset() rewinds the generator to its seed; clone() copies the generator state (the copy continues the same
// stream). Empty arrays and arrays without a usable logit (all NaN / -inf) are errors, as for greedy.
#include <basalt/sdk/candidates.hpp>
#include <basalt/sdk/sampler-plugin.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>

namespace {

constexpr basalt::sdk::sampler_spec kDist = {
    "dist",
    "draws a token from softmax(logits) with a seeded, portable RNG",
    BASALT_SAMPLER_DRAFT_SAFE | BASALT_SAMPLER_SELECTS,
};

uint64_t splitmix64(uint64_t& x) {
    uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) {
    return (x << k) | (x >> (64 - k));
}

// The generator of one sequence; accept is not needed (the draw does not depend on the chosen token).
struct Dist {
    uint64_t seed = 0;
    uint64_t s[4] = {};

    explicit Dist(const basalt::sdk::params& p) {
        p.expect_only({"seed"});
        const long long v = p.get_int("seed", -1);
        if (v < -1) p.bad("seed", *p.find("seed"), "an integer >= 0 (or -1 for a random seed)");
        if (v == -1) {
            std::random_device rd;
            seed = (static_cast<uint64_t>(rd()) << 32) ^ rd();
        } else {
            seed = static_cast<uint64_t>(v);
        }
        reseed();
    }

    void reseed() {
        uint64_t x = seed;
        for (auto& w : s) w = splitmix64(x);
    }
    uint64_t next() {
        const uint64_t result = rotl(s[1] * 5, 7) * 9;
        const uint64_t t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = rotl(s[3], 45);
        return result;
    }
    // Uniform in [0, 1).
    double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

    void apply(basalt_candidates& c);
    void reset() { reseed(); }
};

void Dist::apply(basalt_candidates& c) {
    c.selected = -1;
    const float mx = basalt::sdk::max_logit(c);
    if (!(mx > -INFINITY)) {
        kDist.fail(BASALT_ERR_INVALID_ARGUMENT, "sequence " + std::to_string(c.seq_id) + " has " +
                                                    (c.size == 0 ? "no candidates" : "no finite logit"));
    }
    double total = 0;
    for (size_t i = 0; i < c.size; ++i) {
        const float l = c.data[i].logit;
        const double e = std::isnan(l) ? 0.0 : std::isinf(mx) ? (l == mx ? 1.0 : 0.0) : std::exp(double(l) - mx);
        c.data[i].p = static_cast<float>(e);
        total += e;
    }
    double sum = 0;
    for (size_t i = 0; i < c.size; ++i) {
        c.data[i].p = static_cast<float>(c.data[i].p / total);
        sum += c.data[i].p;
    }
    c.probs_valid = 1;
    const double u = uniform() * sum;
    double cum = 0;
    int64_t last = -1;
    for (size_t i = 0; i < c.size; ++i) {
        if (c.data[i].p <= 0.f) continue;
        last = static_cast<int64_t>(i);
        cum += c.data[i].p;
        if (u < cum) break;
    }
    c.selected = last;
}

}  // namespace

BASALT_DECLARE_PLUGIN("sampler-dist", basalt::sdk::sampler<Dist, kDist>)
