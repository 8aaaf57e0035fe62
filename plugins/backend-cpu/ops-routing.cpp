// MoE routing: TOPK (router logits -> expert ids), GATHER (weights of the chosen experts, optionally
// renormalised) and MOE_COMBINE (weighted sum of the experts' outputs); STEER (a steering slot's vector per row).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include <basalt/sdk/op-contracts.hpp>

#include "graph.hpp"

namespace basalt::cpu {

void check_topk(const NodeCtx& c) {
    sdk::contract::topk(c);
}

void run_topk(NodeCtx& c) {
    const int64_t n = c.in[0].ne[0];
    const int k = c.ip(0);
    std::vector<int32_t> idx(static_cast<size_t>(n));
    for (int64_t r = 0; r < c.in[0].nrows(); ++r) {
        const float* x = c.in[0].frow(r);
        std::iota(idx.begin(), idx.end(), 0);
        // NaN ranks below everything; ties keep the lower index first.
        auto key = [x](int32_t i) { return std::isnan(x[i]) ? -INFINITY : x[i]; };
        std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int32_t a, int32_t b) {
            const float ka = key(a);
            const float kb = key(b);
            return ka > kb || (ka == kb && a < b);
        });
        auto* y = reinterpret_cast<int32_t*>(c.out.row(r));
        std::copy(idx.begin(), idx.begin() + k, y);
    }
}

void check_moe_combine(const NodeCtx& c) {
    sdk::contract::moe_combine(c);
}

void run_moe_combine(NodeCtx& c) {
    const TensorView& x = c.in[0];
    const int64_t n = x.ne[0];
    const int64_t k = x.ne[1];
    const int64_t tokens = x.ne[2];
    c.be->pool->parallel_for(chunk_count(tokens, c.be->pool->size(), 1), [&](int64_t task, int) {
        const int64_t tasks = chunk_count(tokens, c.be->pool->size(), 1);
        const int64_t per = (tokens + tasks - 1) / tasks;
        for (int64_t t = task * per; t < std::min(tokens, (task + 1) * per); ++t) {
            const float* w = c.in[1].frow(t);
            float* y = c.out.frow(t);
            std::fill(y, y + n, 0.0f);
            for (int64_t j = 0; j < k; ++j) {
                const auto* xr = reinterpret_cast<const float*>(x.at(0, j, t));
                for (int64_t i = 0; i < n; ++i) y[i] += w[j] * xr[i];
            }
        }
    });
}

void check_gather(const NodeCtx& c) {
    sdk::contract::gather(c);
}

void run_gather(NodeCtx& c) {
    const int64_t n = c.in[0].ne[0];
    const int64_t k = c.in[1].ne[0];
    for (int64_t t = 0; t < c.in[0].nrows(); ++t) {
        const float* x = c.in[0].frow(t);
        const auto* id = reinterpret_cast<const int32_t*>(c.in[1].row(t));
        float* y = c.out.frow(t);
        double sum = 0;
        for (int64_t j = 0; j < k; ++j) {
            if (id[j] < 0 || id[j] >= n) {
                c.fail(BASALT_ERR_INVALID_ARGUMENT, "index " + std::to_string(id[j]) + " at (" + std::to_string(j) +
                                                        ", " + std::to_string(t) + ") is outside 0.." +
                                                        std::to_string(n - 1));
            }
            y[j] = x[id[j]];
            sum += y[j];
        }
        if (c.ip(0) != 0) {
            const auto inv = static_cast<float>(1.0 / sum);
            for (int64_t j = 0; j < k; ++j) y[j] *= inv;
        }
    }
}

void check_steer(const NodeCtx& c) {
    sdk::contract::steer(c);
}

void run_steer(NodeCtx& c) {
    const int64_t n = c.in[0].ne[0];
    const int64_t slots = c.in[1].ne[1];
    const auto* idx = reinterpret_cast<const int32_t*>(c.in[2].data);
    for (int64_t t = 0; t < c.in[0].nrows(); ++t) {
        const float* x = c.in[0].frow(t);
        float* y = c.out.frow(t);
        const int32_t s = idx[t];
        if (s < 0 || s >= slots) {
            // Rows without steering are copied, never touched by an add (bit for bit, even -0.0).
            if (y != x) std::copy(x, x + n, y);
            continue;
        }
        const float* v = c.in[1].frow(s);
        for (int64_t i = 0; i < n; ++i) y[i] = x[i] + v[i];
    }
}

}  // namespace basalt::cpu
