#version 450
// MATMUL and MOE_MATMUL: out[n, m] = dot(W row n, x column m). One workgroup per output row and tile of up to
// 8 columns: each invocation dequantizes 32-value units of the weight row into registers once and applies them
// to every column of the tile, then the workgroup reduces. The weight type is a compile-time define.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "dequant.glsl"

DECLARE_BINDING(0)
DECLARE_BINDING(1)
DECLARE_BINDING(2)
DECLARE_BINDING(3)
DECLARE_LOADS(0)
DECLARE_DEQUANT(0)

#if defined(W_F32)
#define WTYPE T_F32
#elif defined(W_F16)
#define WTYPE T_F16
#elif defined(W_BF16)
#define WTYPE T_BF16
#elif defined(W_Q8_0)
#define WTYPE T_Q8_0
#elif defined(W_Q4_0)
#define WTYPE T_Q4_0
#elif defined(W_Q4_1)
#define WTYPE T_Q4_1
#elif defined(W_Q5_0)
#define WTYPE T_Q5_0
#elif defined(W_Q5_1)
#define WTYPE T_Q5_1
#elif defined(W_Q4_K)
#define WTYPE T_Q4_K
#elif defined(W_Q6_K)
#define WTYPE T_Q6_K
#endif

#define TM_MAX 8u

void main() {
    const uint K = P(0);
    const uint N = P(1);
    const uint M = P(2);
    const uint row = gl_WorkGroupID.x + gl_WorkGroupID.z * gl_NumWorkGroups.x;
    if (row >= N) return;  // uniform per workgroup
    const bool moe = P(18) != 0u;
    const uint tile = P(24);
    const uint c0 = gl_WorkGroupID.y * tile;
    const uint tm = min(tile, M - c0);
    const uint n_out = P(17) + row;

    uint wrow = P(3) + row * P(4);  // P(3): this dispatch's first row (row chunks of huge weights)
    if (moe) wrow += min(b3u.d[(P(19) >> 2) + c0], P(23) - 1u) * P(21);  // ids past n_expert: clamped
    uint xrow[TM_MAX];
    float acc[TM_MAX];
    for (uint t = 0u; t < TM_MAX; ++t) {
        acc[t] = 0.0;
        const uint c = c0 + min(t, tm - 1u);
        const uint xr = moe && P(22) != 0u ? c / P(20) : c;
        xrow[t] = (P(5) + row_offset(xr, P(6), P(7), P(8), P(9), P(10))) >> 2;
    }

    const uint units = (K + 31u) / 32u;
    float w[32];
    for (uint u = gl_LocalInvocationID.x; u < units; u += gl_WorkGroupSize.x) {
        deq32_0(WTYPE, wrow, u, K, w);
        const uint lim = min(32u, K - u * 32u);
        for (uint t = 0u; t < tm; ++t) {
            const uint xb = xrow[t] + u * 32u;
            float s = 0.0;
            if (lim == 32u) {
                for (uint i = 0u; i < 32u; i += 4u) {
                    s += dot(vec4(w[i], w[i + 1u], w[i + 2u], w[i + 3u]),
                             vec4(b1f.d[xb + i], b1f.d[xb + i + 1u], b1f.d[xb + i + 2u], b1f.d[xb + i + 3u]));
                }
            } else {
                for (uint i = 0u; i < lim; ++i) s += w[i] * b1f.d[xb + i];
            }
            acc[t] += s;
        }
    }
    for (uint t = 0u; t < tm; ++t) {
        const float v = wg_sum(acc[t]);
        if (gl_LocalInvocationID.x == 0u) {
            const uint o = (P(11) + row_offset(c0 + t, P(12), P(13), P(14), P(15), P(16))) >> 2;
            b2f.d[o + n_out] = v;
        }
    }
}
