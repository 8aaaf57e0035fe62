#version 450
// GATED_DELTA, chunked form (prefill; the WY / UT-transform form of plugins/backend-cpu/ops-gated-delta-chunked.cpp):
// the tokens of one slot in chunks of up to pc.chunk (<= CMAX). Within a chunk of n tokens, with G_i the cumulative
// log-decay up to token i and S the state before the chunk:
//     u_i + sum_{j<i} A_ij u_j = beta_i (v_i - e^G_i S k_i),   A_ij = beta_i e^(G_i - G_j) k_i.k_j   (i > j)
//     o_i = e^G_i S q_i + sum_{j<=i} M_ij u_j,                  M_ij = e^(G_i - G_j) q_i.k_j         (i >= j)
//     S'  = e^G_n S + sum_j e^(G_n - G_j) u_j k_j^T
// Only differences G_i - G_j with i >= j are exponentiated, so nothing overflows however strong the decay.
// One workgroup per (value head h = x, block of ROWS state rows = y) walks the node's chunks in token order (a slot
// change stores the block and loads the next slot's, a fresh start zeroes it). Per chunk, in shared memory: A and M
// (built by the whole workgroup from k, q, G, beta), the block of S (row stride dk + 1: lanes of one token reading
// consecutive rows touch distinct banks) and u [token][row]; the S k, S q and output products run over (token, row)
// pairs, the triangular solve over rows, the state update over (row, element) pairs. With chunk_from F > 0 it runs
// only when some sequence has a run of F tokens (else gated_delta.comp, recorded beside it, does the work).
// Bindings as gated_delta.comp: 0 q, 1 k [dk, nk, T], 2 v [dv, nv, T], 3 log-decay, 4 beta [nv, T], 5 state
// [dv dk nv, slots] (read and written), 6 (slot, fresh) I32 [2, T], 7 out [dv, nv, T].
// ROWS and DKMAX come from the build (dk <= DKMAX); shared memory stays under 32 KiB for both variants.
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

#include "state_rows.glsl"

shared float s_state[ROWS * (DKMAX + 1u)];  // the block's state rows, row r at r (dk + 1)
shared float s_am[CMAX * CMAX];             // M_ij at [i][j] (j <= i), A_ij at [j][i] (j < i)
shared float s_u[CMAX * ROWS];              // u (first the right-hand sides) at [token][row]
shared float s_g[CMAX];                     // G_i
shared float s_eg[CMAX];                    // e^G_i
shared float s_w[CMAX];                     // e^(G_n - G_i)
shared float s_beta[CMAX];

void main() {
    const uint lid = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
    const uint h = gl_WorkGroupID.x, i0 = gl_WorkGroupID.y * ROWS;
    const uint dk = pc.dk, dv = pc.dv, nv = pc.nv, nk = pc.nk, T = pc.tokens;
    const uint rows = pc.rows_offset >> 2;
    if (pc.chunk_from != 0u && !some_run_reaches(rows, T, pc.chunk_from)) return;
    const uint nr = min(ROWS, dv - i0);
    const uint sp = dk + 1u;
    const uint hk = h % nk;
    const uint qo = pc.q_offset >> 2, ko = pc.k_offset >> 2, vo = pc.v_offset >> 2;
    const uint go = pc.g_offset >> 2, bo = pc.beta_offset >> 2, oo = pc.dst_offset >> 2;
    const uint C = min(pc.chunk, CMAX);
    uint held = 0xffffffffu;
    uint t0 = 0u;
    while (t0 < T) {
        // The chunk: tokens t0 .. t0 + n - 1 of one slot, only the first of them possibly fresh.
        const uint slot = b6u.d[rows + 2u * t0];
        const bool fresh = b6u.d[rows + 2u * t0 + 1u] != 0u;
        uint n = 1u;
        while (n < C && t0 + n < T && b6u.d[rows + 2u * (t0 + n)] == slot && b6u.d[rows + 2u * (t0 + n) + 1u] == 0u) {
            ++n;
        }
        barrier();  // the previous chunk's reads of the shared arrays are done
        if (slot != held) {
            const uint base_old = (pc.state_offset >> 2) + held * (pc.state_nb1 >> 2) + (h * dv + i0) * dk;
            const uint base_new = (pc.state_offset >> 2) + slot * (pc.state_nb1 >> 2) + (h * dv + i0) * dk;
            for (uint e = lid; e < nr * dk; e += wg) {
                const uint r = e / dk, d = e % dk;
                if (held != 0xffffffffu) b5f.d[base_old + r * dk + d] = s_state[r * sp + d];
                s_state[r * sp + d] = fresh ? 0.0 : b5f.d[base_new + r * dk + d];
            }
            held = slot;
        } else if (fresh) {
            for (uint e = lid; e < nr * dk; e += wg) s_state[(e / dk) * sp + e % dk] = 0.0;
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
        // A and M.
        for (uint e = lid; e < n * n; e += wg) {
            const uint i = e / n, j = e % n;
            if (j > i) continue;
            const uint ki = ko + ((t0 + i) * nk + hk) * dk, kj = ko + ((t0 + j) * nk + hk) * dk;
            const uint qi = qo + ((t0 + i) * nk + hk) * dk;
            float kk = 0.0, qk = 0.0;
            for (uint d = 0u; d < dk; ++d) {
                const float x = b1f.d[kj + d];
                kk += b1f.d[ki + d] * x;
                qk += b0f.d[qi + d] * x;
            }
            const float decay = exp(s_g[i] - s_g[j]);
            s_am[i * CMAX + j] = decay * qk;
            if (j < i) s_am[j * CMAX + i] = s_beta[i] * decay * kk;
        }
        // Right-hand sides beta_i (v_i - e^G_i S k_i), one (token, row) pair per invocation and step.
        for (uint e = lid; e < n * ROWS; e += wg) {
            const uint i = e / ROWS, r = e % ROWS;
            float rhs = 0.0;
            if (r < nr) {
                const uint ki = ko + ((t0 + i) * nk + hk) * dk;
                float sk = 0.0;
                for (uint d = 0u; d < dk; ++d) sk += s_state[r * sp + d] * b1f.d[ki + d];
                rhs = s_beta[i] * (b2f.d[vo + ((t0 + i) * nv + h) * dv + i0 + r] - s_eg[i] * sk);
            }
            s_u[i * ROWS + r] = rhs;
        }
        barrier();
        // u: forward substitution of the unit lower-triangular system, one row per invocation.
        if (lid < nr) {
            for (uint i = 1u; i < n; ++i) {
                float u = s_u[i * ROWS + lid];
                for (uint j = 0u; j < i; ++j) u -= s_am[j * CMAX + i] * s_u[j * ROWS + lid];
                s_u[i * ROWS + lid] = u;
            }
        }
        barrier();
        // Outputs e^G_i S q_i + sum_{j<=i} M_ij u_j.
        for (uint e = lid; e < n * ROWS; e += wg) {
            const uint i = e / ROWS, r = e % ROWS;
            if (r >= nr) continue;
            const uint qi = qo + ((t0 + i) * nk + hk) * dk;
            float sq = 0.0;
            for (uint d = 0u; d < dk; ++d) sq += s_state[r * sp + d] * b0f.d[qi + d];
            float o = s_eg[i] * sq;
            for (uint j = 0u; j <= i; ++j) o += s_am[i * CMAX + j] * s_u[j * ROWS + r];
            b7f.d[oo + ((t0 + i) * nv + h) * dv + i0 + r] = o;
        }
        barrier();  // every read of S before the chunk is done
        // S' = e^G_n S + sum_j e^(G_n - G_j) u_j k_j^T, one (row, element) pair per invocation and step.
        const float egn = s_eg[n - 1u];
        for (uint e = lid; e < nr * dk; e += wg) {
            const uint r = e / dk, d = e % dk;
            float s = egn * s_state[r * sp + d];
            for (uint j = 0u; j < n; ++j) {
                s += s_w[j] * s_u[j * ROWS + r] * b1f.d[ko + ((t0 + j) * nk + hk) * dk + d];
            }
            s_state[r * sp + d] = s;
        }
        t0 += n;
    }
    // Each invocation stores the elements it updated last (the same (row, element) split): no barrier needed.
    if (held != 0xffffffffu) {
        const uint base = (pc.state_offset >> 2) + held * (pc.state_nb1 >> 2) + (h * dv + i0) * dk;
        for (uint e = lid; e < nr * dk; e += wg) b5f.d[base + e] = s_state[(e / dk) * sp + e % dk];
    }
}
