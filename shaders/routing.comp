#version 450
// MoE routing: TOPK (MODE_TOPK), GATHER (MODE_GATHER), MOE_COMBINE (MODE_COMBINE).
// Tensor a: P(3) offset, P(4) ne1, P(5) ne2, P(6..8) nb1..nb3; b: P(15..20); out: P(9..14).
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
