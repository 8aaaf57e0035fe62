// SLICE and the recurrent ops of hybrid architectures (qwen35's Gated DeltaNet layers): SSM_CONV (short causal
// convolution with a rolling state) and GATED_DELTA (the gated delta rule: the recurrent form here, the chunked form
// for prefill in ops-gated-delta-chunked.cpp). Their per-sequence state
// is an input read and written in place; each token's (slot, fresh) pair says which state it continues. Tokens of
// one slot run in row order; channels (conv) and value heads (delta rule) run in parallel.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "graph.hpp"

namespace basalt::cpu {
namespace {

// Checks every token's state slot against the state's rows before anything is written.
const int32_t* state_rows(NodeCtx& c, const TensorView& rows, const TensorView& state, int64_t tokens) {
    const auto* r = reinterpret_cast<const int32_t*>(rows.data);
    for (int64_t t = 0; t < tokens; ++t) {
        if (r[2 * t] < 0 || r[2 * t] >= state.nrows()) {
            c.fail(BASALT_ERR_INVALID_ARGUMENT, "state slot " + std::to_string(r[2 * t]) + " of token " +
                                                    std::to_string(t) + " is outside the state's " +
                                                    std::to_string(state.nrows()) + " slots");
        }
    }
    return r;
}

// Splits [0, n) over the pool: body(begin, end).
template <typename F>
void over(NodeCtx& c, int64_t n, F&& body) {
    const int64_t tasks = chunk_count(n, c.be->pool->size(), 1);
    const int64_t per = (n + tasks - 1) / tasks;
    c.be->pool->parallel_for(tasks, [&](int64_t task, int) {
        const int64_t b = task * per;
        body(b, std::min(n, b + per));
    });
}

// GATED_DELTA's default form, per sequence: chunks of kChunk tokens for a slot with kChunkFrom tokens or more in
// the node (prefill), token by token for the others (decode, a speculative verify), so that a sequence's floats do
// not depend on what else shares its step.
constexpr int64_t kChunk = 64;
constexpr int64_t kChunkFrom = 16;

// SSM_CONV's outputs of one token for n channels (Kernels::conv_rows gives the same floats): out[i] = (0 + taps
// 0..K-2 of wt [K][n] against the state's rows s + j C, then tap K-1 against xt) in double.
void conv_rows_baseline(int64_t n, int64_t K, const float* wt, const float* s, int64_t C, const float* xt, float* out) {
    const float* wl = wt + (K - 1) * n;
    for (int64_t i = 0; i < n; ++i) {
        double acc = 0;
        for (int64_t j = 0; j + 1 < K; ++j) acc += double{wt[j * n + i]} * s[j * C + i];
        acc += double{wl[i]} * xt[i];
        out[i] = static_cast<float>(acc);
    }
}

// One token of the recurrent form for G consecutive state rows (row g at s + g dk, its value vt[g], its output
// out[g]): per row, S *= e^g and the dot S . k in double in column order, delta, S += delta k and the dot S . q, as
// one row alone; the G rows interleaved so that their dependency chains overlap.
template <int G>
void recurrent_rows(float* s, int64_t dk, const float* kt, const float* qt, float decay, float b, const float* vt,
                    float* out) {
    double sk[G] = {};
    for (int64_t j = 0; j < dk; ++j) {
        for (int g = 0; g < G; ++g) {
            float& x = s[g * dk + j];
            x *= decay;
            sk[g] += double{x} * kt[j];
        }
    }
    float delta[G];
    for (int g = 0; g < G; ++g) delta[g] = static_cast<float>(b * (vt[g] - sk[g]));
    double o[G] = {};
    for (int64_t j = 0; j < dk; ++j) {
        for (int g = 0; g < G; ++g) {
            float& x = s[g * dk + j];
            x += delta[g] * kt[j];
            o[g] += double{x} * qt[j];
        }
    }
    for (int g = 0; g < G; ++g) out[g] = static_cast<float>(o[g]);
}
constexpr int kRowGroup = 8;

}  // namespace

void run_slice(NodeCtx& c) {
    const int64_t off = c.ip(op::slice::offset);
    const int64_t m = c.out.ne[0];
    for (int64_t r = 0; r < c.out.nrows(); ++r) {
        const float* x = c.in[0].frow(r) + off;
        std::copy(x, x + m, c.out.frow(r));
    }
}

// Each task takes a range of channels and walks the tokens in row order, the channels of a token contiguous (x, the
// output and the state rows are [C] per token or tap): every output is the same sum in the same order as channel by
// channel (acc = 0, then tap 0..K-2 against the state, then tap K-1 against x, in double), so only the memory order
// changes. w is read transposed ([K][range]) so that each tap is a contiguous row too.
void run_ssm_conv(NodeCtx& c) {
    const TensorView& x = c.in[0];
    const TensorView& w = c.in[1];
    const TensorView& state = c.in[2];
    const int64_t C = x.ne[0], T = x.ne[1], K = w.ne[0];
    const int32_t* rows = state_rows(c, c.in[3], state, T);
    const auto conv = c.be->kernels.conv_rows != nullptr ? c.be->kernels.conv_rows : conv_rows_baseline;
    over(c, C, [&](int64_t c0, int64_t c1) {
        const int64_t n = c1 - c0;
        std::vector<float> wt(static_cast<size_t>(K * n));
        for (int64_t ch = c0; ch < c1; ++ch) {
            const float* wc = w.frow(ch);
            for (int64_t j = 0; j < K; ++j) wt[static_cast<size_t>(j * n + ch - c0)] = wc[j];
        }
        for (int64_t t = 0; t < T; ++t) {
            float* s = state.frow(rows[2 * t]) + c0;
            if (rows[2 * t + 1] != 0) {
                for (int64_t j = 0; j + 1 < K; ++j) std::fill(s + j * C, s + j * C + n, 0.0f);
            }
            const float* xt = x.frow(t) + c0;
            float* out = c.out.frow(t) + c0;
            conv(n, K, wt.data(), s, C, xt, out);
            for (int64_t j = 0; j + 2 < K; ++j) std::copy(s + (j + 1) * C, s + (j + 1) * C + n, s + j * C);
            std::copy(xt, xt + n, s + (K - 2) * C);
        }
    });
}

void run_gated_delta(NodeCtx& c) {
    const TensorView& q = c.in[0];
    const TensorView& k = c.in[1];
    const TensorView& v = c.in[2];
    const TensorView& g = c.in[3];
    const TensorView& beta = c.in[4];
    const TensorView& state = c.in[5];
    const int64_t dk = q.ne[0], nk = q.ne[1], T = q.ne[2], dv = v.ne[0], nv = v.ne[1];
    const int32_t* rows = state_rows(c, c.in[6], state, T);
    // Per slot, whether its tokens take the chunked form: all or none when the hint asks for a form, else those of
    // slots with kChunkFrom tokens or more in the node (a slot never mixes forms: the two run one after the other).
    int64_t chunk = c.ip(op::gated_delta::chunk);
    std::vector<uint8_t> chunked(static_cast<size_t>(state.nrows()), chunk > 1 ? 1 : 0);
    if (chunk == 0) {
        std::vector<int64_t> count(chunked.size(), 0);
        for (int64_t t = 0; t < T; ++t) ++count[static_cast<size_t>(rows[2 * t])];
        for (size_t s = 0; s < count.size(); ++s) chunked[s] = count[s] >= kChunkFrom ? 1 : 0;
        chunk = kChunk;
    }
    bool any_chunked = false, any_recurrent = false;
    for (int64_t t = 0; t < T; ++t)
        (chunked[static_cast<size_t>(rows[2 * t])] != 0 ? any_chunked : any_recurrent) = true;
    if (any_chunked) run_gated_delta_chunked(c, rows, chunk, chunked.data());
    if (!any_recurrent) return;
    // Every row i of a head's matrix evolves on its own: S_i = e^g S_i; S_i += beta (v_i - S_i . k) k; o_i = S_i . q.
    // Consecutive rows of one head run in groups (recurrent_rows, or the ISA's delta_recurrent8), each row's
    // operations in its own order.
    const auto simd8 = dk % 8 == 0 ? c.be->kernels.delta_recurrent8 : nullptr;
    static_assert(kRowGroup == 8, "delta_recurrent8 takes 8 rows");
    over(c, nv * dv, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1;) {
            const int64_t h = r / dv, i = r % dv, hk = h % nk;
            const int64_t rows_here = std::min(r1 - r, dv - i);
            const int64_t n = rows_here >= kRowGroup ? kRowGroup : 1;
            for (int64_t t = 0; t < T; ++t) {
                if (chunked[static_cast<size_t>(rows[2 * t])] != 0) continue;
                float* s = state.frow(rows[2 * t]) + (h * dv + i) * dk;
                if (rows[2 * t + 1] != 0) std::fill(s, s + n * dk, 0.0f);
                const auto* kt = reinterpret_cast<const float*>(k.at(0, hk, t));
                const auto* qt = reinterpret_cast<const float*>(q.at(0, hk, t));
                const float decay = std::exp(g.frow(t)[h]);
                const float b = beta.frow(t)[h];
                const float* vt = reinterpret_cast<const float*>(v.at(0, h, t)) + i;
                float* out = reinterpret_cast<float*>(c.out.at(0, h, t)) + i;
                if (n == kRowGroup && simd8 != nullptr) {
                    simd8(s, dk, kt, qt, decay, b, vt, out);
                } else if (n == kRowGroup) {
                    recurrent_rows<kRowGroup>(s, dk, kt, qt, decay, b, vt, out);
                } else {
                    recurrent_rows<1>(s, dk, kt, qt, decay, b, vt, out);
                }
            }
            r += n;
        }
    });
}

}  // namespace basalt::cpu
