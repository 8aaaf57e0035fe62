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

constexpr int64_t kRowBlock = 16;  // state rows per phase-2 task

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
                std::fill(kk.begin(), kk.begin() + i + 1, 0.0f);
                std::fill(qk.begin(), qk.begin() + i + 1, 0.0f);
                for (int64_t d = 0; d < dk; ++d) {
                    const float* col = &kt[static_cast<size_t>(d * ch.n)];
                    const float kd = ki[d], qd = qi[d];
                    for (int64_t j = 0; j <= i; ++j) {
                        kk[static_cast<size_t>(j)] += kd * col[j];
                        qk[static_cast<size_t>(j)] += qd * col[j];
                    }
                }
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
    const int64_t blocks = (dv + kRowBlock - 1) / kRowBlock;
    const int64_t jobs2 = nv * blocks;
    const int64_t tasks2 = chunk_count(jobs2, c.be->pool->size(), 1);
    const int64_t per2 = (jobs2 + tasks2 - 1) / tasks2;
    c.be->pool->parallel_for(tasks2, [&](int64_t task, int) {
        constexpr int64_t R = kRowBlock;
        std::vector<float> st(static_cast<size_t>(dk * R)), sk(static_cast<size_t>(C * R)),
            sq(static_cast<size_t>(C * R)), u(static_cast<size_t>(C * R));
        for (int64_t job = task * per2; job < std::min(jobs2, (task + 1) * per2); ++job) {
            const int64_t h = job / blocks, i0 = (job % blocks) * R, nr = std::min(R, dv - i0);
            int32_t held = -1;  // the slot whose rows st holds
            auto rows_of = [&](int32_t slot) { return state.frow(slot) + (h * dv + i0) * dk; };
            auto store = [&] {
                float* s = rows_of(held);
                for (int64_t r = 0; r < nr; ++r)
                    for (int64_t d = 0; d < dk; ++d) s[r * dk + d] = st[static_cast<size_t>(d * R + r)];
            };
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
                const float* a = &A[static_cast<size_t>((h * nc + ci) * C * C)];
                const float* m = &M[static_cast<size_t>((h * nc + ci) * C * C)];
                const int64_t n = ch.n;
                // S k_j and S q_j for every token of the chunk: [j][r].
                std::fill(sk.begin(), sk.begin() + n * R, 0.0f);
                std::fill(sq.begin(), sq.begin() + n * R, 0.0f);
                for (int64_t j = 0; j < n; ++j) {
                    const float* kj = kq_row(k, h, ch.t0 + j);
                    const float* qj = kq_row(q, h, ch.t0 + j);
                    float* skj = &sk[static_cast<size_t>(j * R)];
                    float* sqj = &sq[static_cast<size_t>(j * R)];
                    for (int64_t d = 0; d < dk; ++d) {
                        const float* col = &st[static_cast<size_t>(d * R)];
                        const float kd = kj[d], qd = qj[d];
                        for (int64_t r = 0; r < R; ++r) {
                            skj[r] += kd * col[r];
                            sqj[r] += qd * col[r];
                        }
                    }
                }
                // u: forward substitution of the unit lower-triangular system; then the outputs.
                for (int64_t i = 0; i < n; ++i) {
                    const float eg = static_cast<float>(std::exp(gh[i]));
                    const float bi = beta.frow(ch.t0 + i)[h];
                    const float* vi = reinterpret_cast<const float*>(v.at(0, h, ch.t0 + i)) + i0;
                    float* ui = &u[static_cast<size_t>(i * R)];
                    const float* ski = &sk[static_cast<size_t>(i * R)];
                    for (int64_t r = 0; r < nr; ++r) ui[r] = bi * (vi[r] - eg * ski[r]);
                    for (int64_t r = nr; r < R; ++r) ui[r] = 0.0f;
                    for (int64_t j = 0; j < i; ++j) {
                        const float aij = a[i * C + j];
                        const float* uj = &u[static_cast<size_t>(j * R)];
                        for (int64_t r = 0; r < R; ++r) ui[r] -= aij * uj[r];
                    }
                    float o[R];
                    const float* sqi = &sq[static_cast<size_t>(i * R)];
                    for (int64_t r = 0; r < R; ++r) o[r] = eg * sqi[r];
                    for (int64_t j = 0; j <= i; ++j) {
                        const float mij = m[i * C + j];
                        const float* uj = &u[static_cast<size_t>(j * R)];
                        for (int64_t r = 0; r < R; ++r) o[r] += mij * uj[r];
                    }
                    float* out = reinterpret_cast<float*>(c.out.at(0, h, ch.t0 + i)) + i0;
                    std::copy(o, o + nr, out);
                }
                // S' = e^G_n S + sum_j e^(G_n - G_j) u_j k_j^T.
                const auto egn = static_cast<float>(std::exp(gh[n - 1]));
                for (int64_t d = 0; d < dk; ++d) {
                    float* col = &st[static_cast<size_t>(d * R)];
                    for (int64_t r = 0; r < R; ++r) col[r] *= egn;
                }
                for (int64_t j = 0; j < n; ++j) {
                    const auto wj = static_cast<float>(std::exp(gh[n - 1] - gh[j]));
                    const float* kj = kq_row(k, h, ch.t0 + j);
                    const float* uj = &u[static_cast<size_t>(j * R)];
                    for (int64_t d = 0; d < dk; ++d) {
                        const float kd = wj * kj[d];
                        float* col = &st[static_cast<size_t>(d * R)];
                        for (int64_t r = 0; r < R; ++r) col[r] += kd * uj[r];
                    }
                }
            }
            if (held >= 0) store();
        }
    });
}

}  // namespace basalt::cpu
