#version 450
// MoE routing: TOPK (MODE_TOPK), GATHER (MODE_GATHER), MOE_COMBINE (MODE_COMBINE), MOE_ROUTE (MODE_ROUTE).
// Push constants: RoutingPush (MODE_ROUTE: n experts (<= 1024), rows T, one workgroup).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

PUSH_CONSTANTS(RoutingPush)
DECLARE_BINDING(0)
DECLARE_BINDING(1)
DECLARE_BINDING(2)

uint a_row(uint r) {
    return tensor_row(pc.a, r) >> 2;
}
uint b_row(uint r) {
    return tensor_row(pc.b, r) >> 2;
}
uint o_row(uint r) {
    return tensor_row(pc.dst, r) >> 2;
}

#if defined(MODE_ROUTE)
shared uint route_load[1024];
#endif

void main() {
    const uint n = pc.n;
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
#if defined(MODE_TOPK)
    // Row r: the k largest of n (NaN lowest), descending, ties by lower index: each pick is the best element
    // strictly after the previous pick in that order.
    for (uint r = gl_GlobalInvocationID.x; r < pc.rows; r += stride) {
        const uint x = a_row(r);
        const uint o = o_row(r);
        float pv = uintBitsToFloat(0x7f800000u);
        int pi = -1;
        for (uint j = 0u; j < pc.k; ++j) {
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
    for (uint t = gl_GlobalInvocationID.x; t < pc.rows; t += stride) {
        const uint x = a_row(t);
        const uint ids = b_row(t);
        const uint o = o_row(t);
        float s = 0.0;
        for (uint j = 0u; j < pc.k; ++j) {
            const uint id = b1u.d[ids + j];
            const float v = id < n ? b0f.d[x + id] : 0.0;
            s += v;
            b2f.d[o + j] = v;
        }
        if (pc.renormalise != 0u) {
            const float inv = 1.0 / s;
            for (uint j = 0u; j < pc.k; ++j) b2f.d[o + j] *= inv;
        }
    }
#elif defined(MODE_ROUTE)
    // One workgroup. While routing, out[j, t] holds a packed word: final expert (bits 0..11), the rank-j expert
    // (bits 12..23), state (bits 24..25: 0 kept, 1 overflowed/dropped, 2 rerouted); the last phase writes what
    // output_kind asks for over it.
    const uint T = pc.rows;
    const uint k = pc.k;
    const uint cap = pc.capacity;
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
    if (pc.overflow != 0u && lid == 0u) {
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
            if (pc.output_kind == 0u) {
                b2u.d[o + j] = w & 0xfffu;
            } else if (pc.output_kind == 1u) {
                b2f.d[o + j] = state == 1u ? 0.0 : b0f.d[x + (w & 0xfffu)] * inv;
            } else {
                b2u.d[o + j] = state == 0u ? 0u : (state == 1u ? 1u : 2u + ((w >> 12) & 0xfffu));
            }
        }
    }
#elif defined(MODE_COMBINE)
    // out[i, t] = sum_j w[j, t] * x[i, j, t]; x rows are (j, t) pairs.
    const uint k = pc.k;
    const uint total = n * pc.rows;
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
