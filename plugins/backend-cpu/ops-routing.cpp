// MoE routing: TOPK (router logits -> expert ids), GATHER (weights of the chosen experts, optionally
// renormalised), MOE_ROUTE (top-k under expert capacity) and MOE_COMBINE (weighted sum of the experts' outputs); STEER
// (a steering slot's vector per row).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "graph.hpp"

namespace basalt::cpu {

void run_topk(NodeCtx& c) {
    const int64_t n = c.in[0].ne[0];
    const int k = c.ip(op::topk::k);
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

// The capacity routing of plugin_backend.h's MOE_ROUTE, serially (it is O(k T + overflow x n) after the ranking).
void run_moe_route(NodeCtx& c) {
    const int64_t n = c.in[0].ne[0];
    const int64_t tokens = c.in[0].nrows();
    const auto k = static_cast<int64_t>(c.ip(op::moe_route::k));
    const int64_t cap = c.ip(op::moe_route::capacity);
    const bool reroute = c.ip(op::moe_route::overflow) != 0;
    const int what = c.ip(op::moe_route::output);
    const auto kz = static_cast<size_t>(k);
    const auto nz = static_cast<size_t>(n);
    // Each token's full ranking (TOPK's order: descending, NaN lowest, ties by lower index).
    std::vector<int32_t> rank(nz * static_cast<size_t>(tokens));
    for (int64_t t = 0; t < tokens; ++t) {
        const float* x = c.in[0].frow(t);
        auto key = [x](int32_t i) { return std::isnan(x[i]) ? -INFINITY : x[i]; };
        int32_t* r = rank.data() + static_cast<size_t>(t) * nz;
        std::iota(r, r + n, 0);
        std::sort(r, r + n, [&](int32_t a, int32_t b) {
            const float ka = key(a);
            const float kb = key(b);
            return ka > kb || (ka == kb && a < b);
        });
    }
    std::vector<int64_t> load(nz, 0);
    std::vector<int32_t> expert(kz * static_cast<size_t>(tokens));
    std::vector<int32_t> status(expert.size(), 0);  // 0 kept, 1 dropped (overflowed), 2 + e rerouted from e
    for (int64_t j = 0; j < k; ++j) {
        for (int64_t t = 0; t < tokens; ++t) {
            const size_t a = static_cast<size_t>(t) * kz + static_cast<size_t>(j);
            const int32_t e = rank[static_cast<size_t>(t) * nz + static_cast<size_t>(j)];
            expert[a] = e;
            if (load[static_cast<size_t>(e)] < cap) {
                ++load[static_cast<size_t>(e)];
            } else {
                status[a] = 1;
            }
        }
    }
    if (reroute) {
        // Experts ranked before a token's cursor were taken by it or full when passed (loads only grow).
        std::vector<int64_t> cursor(static_cast<size_t>(tokens), k);
        for (int64_t j = 0; j < k; ++j) {
            for (int64_t t = 0; t < tokens; ++t) {
                const size_t a = static_cast<size_t>(t) * kz + static_cast<size_t>(j);
                if (status[a] != 1) continue;
                const int32_t* r = rank.data() + static_cast<size_t>(t) * nz;
                int64_t& m = cursor[static_cast<size_t>(t)];
                while (m < n && load[static_cast<size_t>(r[m])] >= cap) ++m;
                if (m == n) continue;
                const int32_t e = r[m++];
                ++load[static_cast<size_t>(e)];
                status[a] = 2 + expert[a];
                expert[a] = e;
            }
        }
    }
    for (int64_t t = 0; t < tokens; ++t) {
        const size_t a0 = static_cast<size_t>(t) * kz;
        if (what == 1) {
            // The dropless weights' normaliser (GATHER with ip[0] != 0 over the top k), so that a batch without
            // overflow gives the dropless weights bit for bit.
            const float* x = c.in[0].frow(t);
            const int32_t* r = rank.data() + static_cast<size_t>(t) * nz;
            double sum = 0;
            for (int64_t j = 0; j < k; ++j) sum += x[r[j]];
            const auto inv = static_cast<float>(1.0 / sum);
            float* y = c.out.frow(t);
            for (int64_t j = 0; j < k; ++j) {
                const size_t a = a0 + static_cast<size_t>(j);
                y[j] = status[a] == 1 ? 0.0f : x[expert[a]] * inv;
            }
        } else {
            auto* y = reinterpret_cast<int32_t*>(c.out.row(t));
            const std::vector<int32_t>& src = what == 0 ? expert : status;
            std::copy(src.begin() + static_cast<std::ptrdiff_t>(a0), src.begin() + static_cast<std::ptrdiff_t>(a0 + kz),
                      y);
        }
    }
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
        if (c.ip(op::gather::renormalise) != 0) {
            const auto inv = static_cast<float>(1.0 / sum);
            for (int64_t j = 0; j < k; ++j) y[j] *= inv;
        }
    }
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
