// GATED_DELTA in its chunked form (the WY / UT-transform form of the delta rule), for prefill: tokens of one
// sequence in chunks of up to C. Within a chunk of n tokens, with G_j the cumulative log-decay (sum of g over the
// chunk's tokens up to j) and S the state before the chunk, the rule S_j = e^g_j S_{j-1} + u_j k_j^T with
// u_j = beta_j (v_j - e^g_j S_{j-1} k_j) unrolls to
//     u_i + sum_{j<i} A_ij u_j = beta_i (v_i - e^G_i S k_i),   A_ij = beta_i e^(G_i - G_j) k_i.k_j   (i > j)
//     o_i = e^G_i S q_i + sum_{j<=i} e^(G_i - G_j) (q_i.k_j) u_j
//     S'  = e^G_n S + sum_j e^(G_n - G_j) u_j k_j^T
// (a unit lower-triangular solve for the u, then matrix products). Only differences G_i - G_j with i >= j are
// exponentiated, so nothing overflows however strong the decay. Phase 1 builds A and M (M_ij = e^(G_i - G_j)
// q_i.k_j) per value head and chunk; phase 2 runs blocks of state rows per value head, the block kept transposed
// (dk x R) so that every inner loop is an axpy over the R rows.
#include <algorithm>
#include <cmath>
#include <vector>

#include "graph.hpp"

namespace basalt::cpu {
namespace {

struct Chunk {
    int64_t t0 = 0;  // first token
    int64_t n = 0;   // tokens
    int32_t slot = 0;
    bool fresh = false;  // the first token starts the sequence (zero state)
};

// Consecutive tokens of one slot, a fresh start opening a new chunk, at most C tokens each; only slots s with
// chunked[s] != 0 (the chunks of a slot do not depend on the other slots' tokens).
std::vector<Chunk> make_chunks(const int32_t* rows, int64_t T, int64_t C, const uint8_t* chunked) {
    std::vector<Chunk> out;
    for (int64_t t = 0; t < T; ++t) {
        const int32_t slot = rows[2 * t];
        const bool fresh = rows[2 * t + 1] != 0;
        if (chunked[slot] == 0) continue;
        if (out.empty() || out.back().slot != slot || out.back().t0 + out.back().n != t || fresh || out.back().n == C) {
            out.push_back({t, 1, slot, fresh});
        } else {
            ++out.back().n;
        }
    }
    return out;
}

// The baseline loops (built for the plugin's baseline ISA; Kernels::delta_dots / delta_rows give the same floats).
void dots_baseline(int64_t n, int64_t dk, const float* ki, const float* qi, const float* kt, int64_t ld, float* kk,
                   float* qk) {
    std::fill(kk, kk + n, 0.0f);
    std::fill(qk, qk + n, 0.0f);
    for (int64_t d = 0; d < dk; ++d) {
        const float* col = kt + d * ld;
        const float kd = ki[d], qd = qi[d];
        for (int64_t j = 0; j < n; ++j) {
            kk[j] += kd * col[j];
            qk[j] += qd * col[j];
        }
    }
}

void rows_baseline(const DeltaChunkRows& p) {
    constexpr int64_t R = kDeltaRows;
    const int64_t n = p.n, dk = p.dk, nr = p.nr;
    float* st = p.st;
    // S k_j and S q_j for every token of the chunk: [j][r] (the same two dot products over the state's rows, held
    // transposed: column d of the block at st + d R).
    for (int64_t j = 0; j < n; ++j) dots_baseline(R, dk, p.k[j], p.q[j], st, R, p.sk + j * R, p.sq + j * R);
    // u: forward substitution of the unit lower-triangular system; then the outputs.
    for (int64_t i = 0; i < n; ++i) {
        const float eg = p.eg[i];
        const float bi = p.beta[i];
        const float* vi = p.v[i];
        float* ui = p.u + i * R;
        const float* ski = p.sk + i * R;
        for (int64_t r = 0; r < nr; ++r) ui[r] = bi * (vi[r] - eg * ski[r]);
        for (int64_t r = nr; r < R; ++r) ui[r] = 0.0f;
        for (int64_t j = 0; j < i; ++j) {
            const float aij = p.a[i * p.lda + j];
            const float* uj = p.u + j * R;
            for (int64_t r = 0; r < R; ++r) ui[r] -= aij * uj[r];
        }
        float o[R];
        const float* sqi = p.sq + i * R;
        for (int64_t r = 0; r < R; ++r) o[r] = eg * sqi[r];
        for (int64_t j = 0; j <= i; ++j) {
            const float mij = p.m[i * p.lda + j];
            const float* uj = p.u + j * R;
            for (int64_t r = 0; r < R; ++r) o[r] += mij * uj[r];
        }
        std::copy(o, o + nr, p.out[i]);
    }
    // S' = e^G_n S + sum_j e^(G_n - G_j) u_j k_j^T.
    for (int64_t d = 0; d < dk; ++d) {
        float* col = st + d * R;
        for (int64_t r = 0; r < R; ++r) col[r] *= p.egn;
    }
    for (int64_t j = 0; j < n; ++j) {
        const float wj = p.w[j];
        const float* kj = p.k[j];
        const float* uj = p.u + j * R;
        for (int64_t d = 0; d < dk; ++d) {
            const float kd = wj * kj[d];
            float* col = st + d * R;
            for (int64_t r = 0; r < R; ++r) col[r] += kd * uj[r];
        }
    }
}

}  // namespace

void run_gated_delta_chunked(NodeCtx& c, const int32_t* rows, int64_t C, const uint8_t* chunked) {
    const TensorView& q = c.in[0];
    const TensorView& k = c.in[1];
    const TensorView& v = c.in[2];
    const TensorView& g = c.in[3];
    const TensorView& beta = c.in[4];
    const TensorView& state = c.in[5];
    const int64_t dk = q.ne[0], nk = q.ne[1], T = q.ne[2], dv = v.ne[0], nv = v.ne[1];
    const std::vector<Chunk> chunks = make_chunks(rows, T, C, chunked);
    const auto nc = static_cast<int64_t>(chunks.size());
    auto kq_row = [&](const TensorView& x, int64_t h, int64_t t) {
        return reinterpret_cast<const float*>(x.at(0, h % nk, t));
    };

    const auto dots = c.be->kernels.delta_dots != nullptr ? c.be->kernels.delta_dots : dots_baseline;
    const auto block_rows = c.be->kernels.delta_rows != nullptr ? c.be->kernels.delta_rows : rows_baseline;

    // Phase 1, per (value head, chunk): G (cumulative, in double), A and M (C x C each, row i holds j <= i).
    std::vector<double> G(static_cast<size_t>(nv * T));
    std::vector<float> A(static_cast<size_t>(nv * nc * C * C)), M(A.size());
    const int64_t jobs1 = nv * nc;
    const int64_t tasks1 = chunk_count(jobs1, c.be->pool->size(), 1);
    const int64_t per1 = (jobs1 + tasks1 - 1) / tasks1;
    c.be->pool->parallel_for(tasks1, [&](int64_t task, int) {
        std::vector<float> kt(static_cast<size_t>(dk * C)), kk(static_cast<size_t>(C)), qk(static_cast<size_t>(C));
        for (int64_t job = task * per1; job < std::min(jobs1, (task + 1) * per1); ++job) {
            const int64_t h = job / nc;
            const Chunk& ch = chunks[static_cast<size_t>(job % nc)];
            double* gh = &G[static_cast<size_t>(h * T + ch.t0)];
            double acc = 0;
            for (int64_t j = 0; j < ch.n; ++j) gh[j] = acc += g.frow(ch.t0 + j)[h];
            for (int64_t j = 0; j < ch.n; ++j) {  // k transposed: kt[d][j]
                const float* kj = kq_row(k, h, ch.t0 + j);
                for (int64_t d = 0; d < dk; ++d) kt[static_cast<size_t>(d * ch.n + j)] = kj[d];
            }
            float* a = &A[static_cast<size_t>(job * C * C)];
            float* m = &M[static_cast<size_t>(job * C * C)];
            for (int64_t i = 0; i < ch.n; ++i) {
                const float* ki = kq_row(k, h, ch.t0 + i);
                const float* qi = kq_row(q, h, ch.t0 + i);
                dots(i + 1, dk, ki, qi, kt.data(), ch.n, kk.data(), qk.data());
                const float bi = beta.frow(ch.t0 + i)[h];
                for (int64_t j = 0; j <= i; ++j) {
                    const auto decay = static_cast<float>(std::exp(gh[i] - gh[j]));
                    a[i * C + j] = j < i ? bi * decay * kk[static_cast<size_t>(j)] : 0.0f;
                    m[i * C + j] = decay * qk[static_cast<size_t>(j)];
                }
            }
        }
    });

    // Phase 2, per (value head, block of R state rows): the chunks in token order.
    const int64_t blocks = (dv + kDeltaRows - 1) / kDeltaRows;
    const int64_t jobs2 = nv * blocks;
    const int64_t tasks2 = chunk_count(jobs2, c.be->pool->size(), 1);
    const int64_t per2 = (jobs2 + tasks2 - 1) / tasks2;
    c.be->pool->parallel_for(tasks2, [&](int64_t task, int) {
        constexpr int64_t R = kDeltaRows;
        std::vector<float> st(static_cast<size_t>(dk * R)), sk(static_cast<size_t>(C * R)),
            sq(static_cast<size_t>(C * R)), u(static_cast<size_t>(C * R)), eg(static_cast<size_t>(C)),
            w(static_cast<size_t>(C)), bt(static_cast<size_t>(C)), kw(static_cast<size_t>(C * dk));
        std::vector<const float*> kp(static_cast<size_t>(C)), qp(kp.size()), vp(kp.size());
        std::vector<float*> op(kp.size());
        DeltaChunkRows p;
        p.dk = dk;
        p.lda = C;
        p.k = kp.data();
        p.q = qp.data();
        p.v = vp.data();
        p.out = op.data();
        p.beta = bt.data();
        p.eg = eg.data();
        p.w = w.data();
        p.st = st.data();
        p.sk = sk.data();
        p.sq = sq.data();
        p.u = u.data();
        p.kw = kw.data();
        for (int64_t job = task * per2; job < std::min(jobs2, (task + 1) * per2); ++job) {
            const int64_t h = job / blocks, i0 = (job % blocks) * R, nr = std::min(R, dv - i0);
            int32_t held = -1;  // the slot whose rows st holds
            auto rows_of = [&](int32_t slot) { return state.frow(slot) + (h * dv + i0) * dk; };
            auto store = [&] {
                float* s = rows_of(held);
                for (int64_t r = 0; r < nr; ++r)
                    for (int64_t d = 0; d < dk; ++d) s[r * dk + d] = st[static_cast<size_t>(d * R + r)];
            };
            p.nr = nr;
            for (int64_t ci = 0; ci < nc; ++ci) {
                const Chunk& ch = chunks[static_cast<size_t>(ci)];
                if (ch.slot != held) {
                    if (held >= 0) store();
                    held = ch.slot;
                    const float* s = rows_of(held);
                    std::fill(st.begin(), st.end(), 0.0f);
                    if (!ch.fresh) {
                        for (int64_t r = 0; r < nr; ++r)
                            for (int64_t d = 0; d < dk; ++d) st[static_cast<size_t>(d * R + r)] = s[r * dk + d];
                    }
                } else if (ch.fresh) {
                    std::fill(st.begin(), st.end(), 0.0f);
                }
                const double* gh = &G[static_cast<size_t>(h * T + ch.t0)];
                const int64_t n = ch.n;
                for (int64_t j = 0; j < n; ++j) {
                    const auto sj = static_cast<size_t>(j);
                    const int64_t t = ch.t0 + j;
                    kp[sj] = kq_row(k, h, t);
                    qp[sj] = kq_row(q, h, t);
                    vp[sj] = reinterpret_cast<const float*>(v.at(0, h, t)) + i0;
                    op[sj] = reinterpret_cast<float*>(c.out.at(0, h, t)) + i0;
                    bt[sj] = beta.frow(t)[h];
                    eg[sj] = static_cast<float>(std::exp(gh[j]));
                    w[sj] = static_cast<float>(std::exp(gh[n - 1] - gh[j]));
                }
                p.n = n;
                p.a = &A[static_cast<size_t>((h * nc + ci) * C * C)];
                p.m = &M[static_cast<size_t>((h * nc + ci) * C * C)];
                p.egn = static_cast<float>(std::exp(gh[n - 1]));
                block_rows(p);
            }
            if (held >= 0) store();
        }
    });
}

}  // namespace basalt::cpu
