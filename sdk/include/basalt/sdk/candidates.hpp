// Basalt SDK: header-only helpers for sampler plugins working on basalt_candidates (ordering, softmax,
// renormalisation after a truncation). Compiled into the plugin; nothing here crosses the ABI.
#pragma once

#include <basalt/common.h>

#include <cmath>
#include <cstdint>

namespace basalt::sdk {

// Descending by logit, NaN last, ties by the lower token id (so the order never depends on the input order).
inline bool before(const basalt_token_data& a, const basalt_token_data& b) {
    const float ka = std::isnan(a.logit) ? -INFINITY : a.logit;
    const float kb = std::isnan(b.logit) ? -INFINITY : b.logit;
    return ka > kb || (ka == kb && a.id < b.id);
}

// Index of the candidate with the highest logit (ties: the lowest token id; NaN logits ignored), or -1 when
// there is none. Reads only; no allocation.
inline int64_t argmax(const basalt_candidates& c) {
    int64_t best = -1;
    for (size_t i = 0; i < c.size; ++i) {
        const basalt_token_data& t = c.data[i];
        if (std::isnan(t.logit)) continue;
        if (best < 0) {
            best = static_cast<int64_t>(i);
            continue;
        }
        const basalt_token_data& b = c.data[best];
        if (t.logit > b.logit || (t.logit == b.logit && t.id < b.id)) best = static_cast<int64_t>(i);
    }
    return best;
}

// The largest logit that is not NaN, or -inf when there is none (no candidates, all NaN or -inf).
inline float max_logit(const basalt_candidates& c) {
    float mx = -INFINITY;
    for (size_t i = 0; i < c.size; ++i) {
        if (!std::isnan(c.data[i].logit) && c.data[i].logit > mx) mx = c.data[i].logit;
    }
    return mx;
}

// Sets p = softmax(logit) over the live candidates (NaN and -inf get 0, +inf share the mass). Returns false,
// touching nothing, when no candidate has a usable logit.
inline bool softmax(basalt_candidates* c) {
    const float mx = max_logit(*c);
    if (!(mx > -INFINITY)) return false;
    double sum = 0;
    for (size_t i = 0; i < c->size; ++i) {
        const float l = c->data[i].logit;
        const double e = std::isnan(l) ? 0.0 : std::isinf(mx) ? (l == mx ? 1.0 : 0.0) : std::exp(double(l) - mx);
        c->data[i].p = static_cast<float>(e);
        sum += e;
    }
    for (size_t i = 0; i < c->size; ++i) c->data[i].p = static_cast<float>(c->data[i].p / sum);
    c->probs_valid = 1;
    return true;
}

// Rescales valid probabilities to sum to 1 over the live candidates (after a truncation).
inline void renormalize(basalt_candidates* c) {
    if (!c->probs_valid) return;
    double sum = 0;
    for (size_t i = 0; i < c->size; ++i) sum += c->data[i].p;
    if (!(sum > 0)) {
        c->probs_valid = 0;
        return;
    }
    for (size_t i = 0; i < c->size; ++i) c->data[i].p = static_cast<float>(c->data[i].p / sum);
}

}  // namespace basalt::sdk
