#version 450
// MoE routing: TOPK (MODE_TOPK), GATHER (MODE_GATHER), MOE_COMBINE (MODE_COMBINE), MOE_ROUTE (MODE_ROUTE).
// Tensor a: P(3) offset, P(4) ne1, P(5) ne2, P(6..8) nb1..nb3; b: P(15..20); out: P(9..14).
// MODE_ROUTE: P(0) n_expert (<= 1024), P(1) T, P(2) k, P(15) capacity, P(16) overflow (1 reroute), P(17) what
// out holds (0 ids, 1 weights, 2 status); one workgroup.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

DECLARE_BINDING(0)
DECLARE_BINDING(1)
DECLARE_BINDING(2)

uint a_row(uint r) {
    return (P(3) + row_offset(r, P(4), P(5), P(6), P(7), P(8))) >> 2;
}
uint b_row(uint r) {
    return (P(15) + row_offset(r, P(16), P(17), P(18), P(19), P(20))) >> 2;
}
uint o_row(uint r) {
    return (P(9) + row_offset(r, P(10), P(11), P(12), P(13), P(14))) >> 2;
}

#if defined(MODE_ROUTE)
shared uint route_load[1024];
#endif

void main() {
    const uint n = P(0);
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
#if defined(MODE_TOPK)
    // Row r: the k largest of n (NaN lowest), descending, ties by lower index: each pick is the best element
    // strictly after the previous pick in that order.
    for (uint r = gl_GlobalInvocationID.x; r < P(1); r += stride) {
        const uint x = a_row(r);
        const uint o = o_row(r);
        float pv = uintBitsToFloat(0x7f800000u);
        int pi = -1;
        for (uint j = 0u; j < P(2); ++j) {
            float bv = 0.0;
            int bi = -1;
            for (uint i = 0u; i < n; ++i) {
                float v = b0f.d[x + i];
                if (isnan(v)) v = uintBitsToFloat(0xff800000u);
                const bool after = v < pv || (v == pv && int(i) > pi);
                if (!after) continue;
                if (bi < 0 || v > bv) {
                    bv = v;
                    bi = int(i);
                }
            }
            b2u.d[o + j] = uint(bi);
            pv = bv;
            pi = bi;
        }
    }
#elif defined(MODE_GATHER)
    // out[j, t] = x[ids[j, t], t], optionally divided by the column's sum.
    for (uint t = gl_GlobalInvocationID.x; t < P(1); t += stride) {
        const uint x = a_row(t);
        const uint ids = b_row(t);
        const uint o = o_row(t);
        float s = 0.0;
        for (uint j = 0u; j < P(2); ++j) {
            const uint id = b1u.d[ids + j];
            const float v = id < n ? b0f.d[x + id] : 0.0;
            s += v;
            b2f.d[o + j] = v;
        }
        if (P(21) != 0u) {
            const float inv = 1.0 / s;
            for (uint j = 0u; j < P(2); ++j) b2f.d[o + j] *= inv;
        }
    }
#elif defined(MODE_ROUTE)
    // One workgroup. While routing, out[j, t] holds a packed word: final expert (bits 0..11), the rank-j expert
    // (bits 12..23), state (bits 24..25: 0 kept, 1 overflowed/dropped, 2 rerouted); the last phase writes what
    // P(17) asks for over it.
    const uint T = P(1);
    const uint k = P(2);
    const uint cap = P(15);
    const uint lid = gl_LocalInvocationID.x;
    const uint wg = gl_WorkGroupSize.x;
    // 1. Each token's top k (as MODE_TOPK).
    for (uint t = lid; t < T; t += wg) {
        const uint x = a_row(t);
        const uint o = o_row(t);
        float pv = uintBitsToFloat(0x7f800000u);
        int pi = -1;
        for (uint j = 0u; j < k; ++j) {
            float bv = 0.0;
            int bi = -1;
            for (uint i = 0u; i < n; ++i) {
                float v = b0f.d[x + i];
                if (isnan(v)) v = uintBitsToFloat(0xff800000u);
                const bool after = v < pv || (v == pv && int(i) > pi);
                if (!after) continue;
                if (bi < 0 || v > bv) {
                    bv = v;
                    bi = int(i);
                }
            }
            b2u.d[o + j] = uint(bi) | (uint(bi) << 12);
            pv = bv;
            pi = bi;
        }
    }
    memoryBarrierBuffer();
    barrier();
    // 2. Expert e's assignments claim its capacity rank by rank, tokens in order (one invocation per expert).
    for (uint e = lid; e < n; e += wg) {
        uint used = 0u;
        for (uint j = 0u; j < k; ++j) {
            for (uint t = 0u; t < T; ++t) {
                const uint at = o_row(t) + j;
                const uint w = b2u.d[at];
                if ((w & 0xfffu) != e) continue;
                if (used < cap) {
                    used += 1u;
                } else {
                    b2u.d[at] = w | (1u << 24);
                }
            }
        }
        route_load[e] = used;
    }
    memoryBarrierShared();
    memoryBarrierBuffer();
    barrier();
    // 3. Reroute (serial, in the same order): the best-ranked expert with room that the token does not use.
    if (P(16) != 0u && lid == 0u) {
        for (uint j = 0u; j < k; ++j) {
            for (uint t = 0u; t < T; ++t) {
                const uint o = o_row(t);
                const uint w = b2u.d[o + j];
                if ((w >> 24) != 1u) continue;
                const uint x = a_row(t);
                float bv = 0.0;
                int bi = -1;
                for (uint i = 0u; i < n; ++i) {
                    if (route_load[i] >= cap) continue;
                    bool taken = false;
                    for (uint jj = 0u; jj < k; ++jj) {
                        const uint u = b2u.d[o + jj];
                        taken = taken || (u & 0xfffu) == i || ((u >> 12) & 0xfffu) == i;
                    }
                    if (taken) continue;
                    float v = b0f.d[x + i];
                    if (isnan(v)) v = uintBitsToFloat(0xff800000u);
                    if (bi < 0 || v > bv) {
                        bv = v;
                        bi = int(i);
                    }
                }
                if (bi < 0) continue;
                route_load[uint(bi)] += 1u;
                b2u.d[o + j] = uint(bi) | (w & 0xfff000u) | (2u << 24);
            }
        }
    }
    memoryBarrierShared();
    memoryBarrierBuffer();
    barrier();
    // 4. The requested view. Weights: p / (sum of the top-k p), summed as MODE_GATHER sums them.
    for (uint t = lid; t < T; t += wg) {
        const uint x = a_row(t);
        const uint o = o_row(t);
        float s = 0.0;
        for (uint j = 0u; j < k; ++j) s += b0f.d[x + ((b2u.d[o + j] >> 12) & 0xfffu)];
        const float inv = 1.0 / s;
        for (uint j = 0u; j < k; ++j) {
            const uint w = b2u.d[o + j];
            const uint state = w >> 24;
            if (P(17) == 0u) {
                b2u.d[o + j] = w & 0xfffu;
            } else if (P(17) == 1u) {
                b2f.d[o + j] = state == 1u ? 0.0 : b0f.d[x + (w & 0xfffu)] * inv;
            } else {
                b2u.d[o + j] = state == 0u ? 0u : (state == 1u ? 1u : 2u + ((w >> 12) & 0xfffu));
            }
        }
    }
#elif defined(MODE_COMBINE)
    // out[i, t] = sum_j w[j, t] * x[i, j, t]; x rows are (j, t) pairs.
    const uint k = P(2);
    const uint total = n * P(1);
    for (uint idx = gl_GlobalInvocationID.x; idx < total; idx += stride) {
        const uint i = idx % n;
        const uint t = idx / n;
        const uint w = b_row(t);
        float s = 0.0;
        for (uint j = 0u; j < k; ++j) s += b1f.d[w + j] * b0f.d[a_row(t * k + j) + i];
        b2f.d[o_row(t) + i] = s;
    }
#endif
}
