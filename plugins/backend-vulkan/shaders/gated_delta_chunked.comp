#version 450
// GATED_DELTA, chunked form (prefill; the WY / UT-transform form of plugins/backend-cpu/ops-gated-delta-chunked.cpp):
// the tokens of one slot in chunks of up to pc.chunk (<= CMAX). Within a chunk of n tokens, with G_i the cumulative
// log-decay up to token i and S the state before the chunk:
//     u_i + sum_{j<i} A_ij u_j = beta_i (v_i - e^G_i S k_i),   A_ij = beta_i e^(G_i - G_j) k_i.k_j   (i > j)
//     o_i = e^G_i S q_i + sum_{j<=i} M_ij u_j,                  M_ij = e^(G_i - G_j) q_i.k_j         (i >= j)
//     S'  = e^G_n S + sum_j e^(G_n - G_j) u_j k_j^T
// Only differences G_i - G_j with i >= j are exponentiated, so nothing overflows however strong the decay.
// One workgroup per (value head h = x, block of ROWS state rows = y) walks the node's chunks in token order (a slot
// change stores the block and loads the next slot's, a fresh start zeroes it). Per chunk, three phases between
// barriers, each a list of small register tiles shared out over the invocations:
//   1. S K^T and S Q^T (4 tokens x 4 rows per tile; the right-hand sides and e^G_i S q_i kept), A and M (4 x 4
//      token tiles on and below the diagonal);
//   2. the unit lower-triangular solve for u, one row per invocation;
//   3. the outputs (4 tokens x 4 rows per tile) and the state update (4 rows x 4 elements per tile).
// Shared memory: the block of S as vec4 rows of dk / 4 + 1 (the pad spreads rows of one tile over banks), A and M,
// u and e^G S q [token][row]. Reads of k and q are vec4 loads when pc.kq_vec4 says their rows start on 16 bytes
// (on lavapipe every load instruction is a loop over the lanes). With chunk_from F > 0 it skips the tokens of slots
// with fewer than F tokens in the node (gated_delta.comp, recorded beside it, runs those and skips these), deciding
// once per run of a slot; a slot's chunks do not depend on the skipped tokens. dk is a multiple of 4.
// Bindings as gated_delta.comp: 0 q, 1 k [dk, nk, T], 2 v [dv, nv, T], 3 log-decay, 4 beta [nv, T], 5 state
// [dv dk nv, slots] (read and written), 6 (slot, fresh) I32 [2, T], 7 out [dv, nv, T].
// ROWS (a multiple of 4) and DKMAX come from the build (dk <= DKMAX); shared memory stays under 32 KiB.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#define CMAX 32u

PUSH_CONSTANTS(GatedDeltaPush)
DECLARE_BINDING(0)
DECLARE_BINDING(1)
DECLARE_BINDING(2)
DECLARE_BINDING(3)
DECLARE_BINDING(4)
DECLARE_BINDING(5)
DECLARE_BINDING(6)
DECLARE_BINDING(7)
layout(std430, binding = 0) buffer B0v {
    vec4 d[];
}
b0v;
layout(std430, binding = 1) buffer B1v {
    vec4 d[];
}
b1v;

#include "state_rows.glsl"

#define SV (DKMAX / 4u + 1u)

shared vec4 s_state[ROWS * SV];  // the block's state rows, row r at r (dk / 4 + 1)
shared float s_am[CMAX * CMAX];  // M_ij at [i][j] (j <= i), A_ij at [j][i] (j < i)
shared float s_u[CMAX * ROWS];   // u (first the right-hand sides) at [token][row]
shared float s_y[CMAX * ROWS];   // e^G_i S q_i at [token][row]
shared float s_g[CMAX];          // G_i
shared float s_eg[CMAX];         // e^G_i
shared float s_w[CMAX];          // e^(G_n - G_i)
shared float s_beta[CMAX];

// Four floats of q (binding 0) or k (binding 1) from float index w (a multiple of 4).
vec4 ld_q(uint w) {
    if (pc.kq_vec4 != 0u) return b0v.d[w >> 2];
    return vec4(b0f.d[w], b0f.d[w + 1u], b0f.d[w + 2u], b0f.d[w + 3u]);
}
vec4 ld_k(uint w) {
    if (pc.kq_vec4 != 0u) return b1v.d[w >> 2];
    return vec4(b1f.d[w], b1f.d[w + 1u], b1f.d[w + 2u], b1f.d[w + 3u]);
}

void main() {
    const uint lid = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
    const uint h = gl_WorkGroupID.x, i0 = gl_WorkGroupID.y * ROWS;
    const uint dk = pc.dk, dv = pc.dv, nv = pc.nv, nk = pc.nk, T = pc.tokens;
    const uint rows = pc.rows_offset >> 2;
    const uint nr = min(ROWS, dv - i0);
    const uint dk4 = dk / 4u, sv = dk4 + 1u;
    const uint hk = h % nk;
    const uint qo = pc.q_offset >> 2, ko = pc.k_offset >> 2, vo = pc.v_offset >> 2;
    const uint go = pc.g_offset >> 2, bo = pc.beta_offset >> 2, oo = pc.dst_offset >> 2;
    const uint C = min(pc.chunk, CMAX);
    const uint rt = ROWS / 4u;  // row tiles
    uint held = 0xffffffffu;
    uint run_slot = 0xffffffffu;  // the slot of the run token t0 belongs to, and whether it is this form's
    bool mine = true;
    uint t0 = 0u;
    while (t0 < T) {
        // The chunk: tokens t0 .. t0 + n - 1 of one slot, only the first of them possibly fresh.
        const uint slot = b6u.d[rows + 2u * t0];
        const bool fresh = b6u.d[rows + 2u * t0 + 1u] != 0u;
        if (pc.chunk_from != 0u) {
            if (slot != run_slot) {
                run_slot = slot;
                mine = slot_reaches(rows, T, t0, pc.chunk_from);  // the same for the whole workgroup
            }
            if (!mine) {
                ++t0;
                continue;
            }
        }
        uint n = 1u;
        while (n < C && t0 + n < T && b6u.d[rows + 2u * (t0 + n)] == slot && b6u.d[rows + 2u * (t0 + n) + 1u] == 0u) {
            ++n;
        }
        barrier();  // the previous chunk is done with the shared arrays
        if (slot != held || fresh) {
            const uint base_old = (pc.state_offset >> 2) + held * (pc.state_nb1 >> 2) + (h * dv + i0) * dk;
            const uint base_new = (pc.state_offset >> 2) + slot * (pc.state_nb1 >> 2) + (h * dv + i0) * dk;
            for (uint e = lid; e < ROWS * dk; e += wg) {
                const uint r = e / dk, d = e % dk;
                if (r < nr && held != 0xffffffffu && slot != held)
                    b5f.d[base_old + r * dk + d] = s_state[r * sv + d / 4u][d % 4u];
                s_state[r * sv + d / 4u][d % 4u] = r < nr && !fresh ? b5f.d[base_new + r * dk + d] : 0.0;
            }
            held = slot;
        }
        if (lid < n) {
            float gi = 0.0, gn = 0.0;
            for (uint j = 0u; j < n; ++j) {
                gn += b3f.d[go + (t0 + j) * nv + h];
                if (j == lid) gi = gn;
            }
            s_g[lid] = gi;
            s_eg[lid] = exp(gi);
            s_w[lid] = exp(gn - gi);
            s_beta[lid] = b4f.d[bo + (t0 + lid) * nv + h];
        }
        barrier();
        // Phase 1: S K^T and S Q^T tiles, then A and M tiles.
        const uint nt = (n + 3u) / 4u;  // token tiles
        const uint n_sk = 2u * nt * rt, n_am = nt * (nt + 1u) / 2u;
        for (uint task = lid; task < n_sk + n_am; task += wg) {
            if (task < n_sk) {
                const bool with_q = task >= nt * rt;
                const uint ti = (task % (nt * rt)) / rt, r0 = (task % rt) * 4u;
                const uint kq0 = (with_q ? qo : ko) + ((t0 + 4u * ti) * nk + hk) * dk;
                vec4 acc[4] = vec4[4](vec4(0.0), vec4(0.0), vec4(0.0), vec4(0.0));  // [token].row
                for (uint d4 = 0u; d4 < dk4; ++d4) {
                    const vec4 s0 = s_state[r0 * sv + d4], s1 = s_state[(r0 + 1u) * sv + d4];
                    const vec4 s2 = s_state[(r0 + 2u) * sv + d4], s3 = s_state[(r0 + 3u) * sv + d4];
                    for (uint a = 0u; a < 4u; ++a) {
                        if (4u * ti + a >= n) break;
                        const uint w = kq0 + a * nk * dk + 4u * d4;
                        const vec4 x = with_q ? ld_q(w) : ld_k(w);
                        acc[a] += vec4(dot(x, s0), dot(x, s1), dot(x, s2), dot(x, s3));
                    }
                }
                for (uint a = 0u; a < 4u; ++a) {
                    const uint i = 4u * ti + a;
                    if (i >= n) break;
                    for (uint b = 0u; b < 4u; ++b) {
                        const uint r = r0 + b;
                        if (with_q) {
                            s_y[i * ROWS + r] = s_eg[i] * acc[a][b];
                        } else {
                            const float vi = r < nr ? b2f.d[vo + ((t0 + i) * nv + h) * dv + i0 + r] : 0.0;
                            s_u[i * ROWS + r] = r < nr ? s_beta[i] * (vi - s_eg[i] * acc[a][b]) : 0.0;
                        }
                    }
                }
            } else {
                // Token tile (ti, tj), tj <= ti: k_i.k_j and q_i.k_j.
                uint e = task - n_sk, ti = 0u;
                while (e > ti) {
                    e -= ti + 1u;
                    ++ti;
                }
                const uint tj = e;
                const uint base = ((t0 + 4u * ti) * nk + hk) * dk, basej = ((t0 + 4u * tj) * nk + hk) * dk;
                vec4 kk[4] = vec4[4](vec4(0.0), vec4(0.0), vec4(0.0), vec4(0.0));  // [i].j
                vec4 qk[4] = vec4[4](vec4(0.0), vec4(0.0), vec4(0.0), vec4(0.0));
                for (uint d4 = 0u; d4 < dk4; ++d4) {
                    vec4 kj[4];
                    for (uint b = 0u; b < 4u; ++b) {
                        kj[b] = 4u * tj + b < n ? ld_k(ko + basej + b * nk * dk + 4u * d4) : vec4(0.0);
                    }
                    for (uint a = 0u; a < 4u; ++a) {
                        if (4u * ti + a >= n) break;
                        const vec4 ki = ld_k(ko + base + a * nk * dk + 4u * d4);
                        const vec4 qi = ld_q(qo + base + a * nk * dk + 4u * d4);
                        kk[a] += vec4(dot(ki, kj[0]), dot(ki, kj[1]), dot(ki, kj[2]), dot(ki, kj[3]));
                        qk[a] += vec4(dot(qi, kj[0]), dot(qi, kj[1]), dot(qi, kj[2]), dot(qi, kj[3]));
                    }
                }
                for (uint a = 0u; a < 4u; ++a) {
                    const uint i = 4u * ti + a;
                    for (uint b = 0u; b < 4u; ++b) {
                        const uint j = 4u * tj + b;
                        if (i >= n || j >= n || j > i) continue;
                        const float decay = exp(s_g[i] - s_g[j]);
                        s_am[i * CMAX + j] = decay * qk[a][b];
                        if (j < i) s_am[j * CMAX + i] = s_beta[i] * decay * kk[a][b];
                    }
                }
            }
        }
        barrier();
        // Phase 2: u by forward substitution, one row per invocation.
        if (lid < nr) {
            for (uint i = 1u; i < n; ++i) {
                float u = s_u[i * ROWS + lid];
                for (uint j = 0u; j < i; ++j) u -= s_am[j * CMAX + i] * s_u[j * ROWS + lid];
                s_u[i * ROWS + lid] = u;
            }
        }
        barrier();
        // Phase 3: outputs e^G_i S q_i + sum_{j<=i} M_ij u_j (token x row tiles), then
        // S' = e^G_n S + sum_j e^(G_n - G_j) u_j k_j^T (row x element tiles; nothing else reads S in this phase).
        const uint n_out = nt * rt, n_upd = rt * dk4;
        const float egn = s_eg[n - 1u];
        for (uint task = lid; task < n_out + n_upd; task += wg) {
            if (task < n_out) {
                const uint ti = task / rt, r0 = (task % rt) * 4u;
                vec4 o[4];  // [token].row
                for (uint a = 0u; a < 4u; ++a) {
                    const uint i = min(4u * ti + a, n - 1u);
                    o[a] = vec4(s_y[i * ROWS + r0], s_y[i * ROWS + r0 + 1u], s_y[i * ROWS + r0 + 2u],
                                s_y[i * ROWS + r0 + 3u]);
                }
                const uint jend = min(4u * ti + 4u, n);
                for (uint j = 0u; j < jend; ++j) {
                    const vec4 uj = vec4(s_u[j * ROWS + r0], s_u[j * ROWS + r0 + 1u], s_u[j * ROWS + r0 + 2u],
                                         s_u[j * ROWS + r0 + 3u]);
                    for (uint a = 0u; a < 4u; ++a) {
                        const uint i = 4u * ti + a;
                        if (j <= i && i < n) o[a] += s_am[i * CMAX + j] * uj;
                    }
                }
                for (uint a = 0u; a < 4u; ++a) {
                    const uint i = 4u * ti + a;
                    if (i >= n) break;
                    for (uint b = 0u; b < 4u; ++b) {
                        if (r0 + b < nr) b7f.d[oo + ((t0 + i) * nv + h) * dv + i0 + r0 + b] = o[a][b];
                    }
                }
            } else {
                const uint e = task - n_out;
                const uint r0 = (e / dk4) * 4u, d4 = e % dk4;
                vec4 acc[4] = vec4[4](vec4(0.0), vec4(0.0), vec4(0.0), vec4(0.0));  // [row].element
                for (uint j = 0u; j < n; ++j) {
                    const vec4 kj = s_w[j] * ld_k(ko + ((t0 + j) * nk + hk) * dk + 4u * d4);
                    for (uint b = 0u; b < 4u; ++b) acc[b] += s_u[j * ROWS + r0 + b] * kj;
                }
                for (uint b = 0u; b < 4u; ++b) {
                    s_state[(r0 + b) * sv + d4] = egn * s_state[(r0 + b) * sv + d4] + acc[b];
                }
            }
        }
        t0 += n;
    }
    barrier();
    if (held != 0xffffffffu) {
        const uint base = (pc.state_offset >> 2) + held * (pc.state_nb1 >> 2) + (h * dv + i0) * dk;
        for (uint e = lid; e < nr * dk; e += wg) b5f.d[base + e] = s_state[(e / dk) * sv + (e % dk) / 4u][e % 4u];
    }
}
