#version 450
// MATMUL and MOE_MATMUL: out[n, m] = dot(W row n, x column m). One workgroup per MROWS output rows and tile of up
// to 8 columns: each invocation dequantizes 32-value units of the rows into registers once, loads each column's
// activations of the unit once (vec4 when aligned) and applies them to every row, then the workgroup reduces.
// The weight type is a compile-time define. Push constants: MatmulPush.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "dequant.glsl"

PUSH_CONSTANTS(MatmulPush)
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
#elif defined(W_Q2_K)
#define WTYPE T_Q2_K
#elif defined(W_Q3_K)
#define WTYPE T_Q3_K
#elif defined(W_Q4_K)
#define WTYPE T_Q4_K
#elif defined(W_Q5_K)
#define WTYPE T_Q5_K
#elif defined(W_Q6_K)
#define WTYPE T_Q6_K
#elif defined(W_MXFP4)
#define WTYPE T_MXFP4
#endif

#define TM_MAX 8u

#if defined(W_Q8_0)
#include "q8_0.glsl"
#endif
layout(std430, binding = 1) buffer B1v {
    vec4 d[];
}
b1v;

#ifndef MROWS
#define MROWS 8u
#endif

void main() {
    const uint K = pc.k;
    const uint N = pc.n;
    const uint M = pc.m;
    const uint row0 = (gl_WorkGroupID.x + gl_WorkGroupID.z * gl_NumWorkGroups.x) * MROWS;
    if (row0 >= N) return;  // uniform per workgroup
    const bool moe = pc.moe != 0u;
    const uint tile = pc.tile;
    const uint c0 = gl_WorkGroupID.y * tile;
    const uint tm = min(tile, M - c0);

    // w_offset: this dispatch's first row (row chunks of huge weights); MoE: the tile's expert (ids past n_expert
    // are clamped).
    const uint expert = moe ? min(b3u.d[(pc.ids_offset >> 2) + c0], pc.n_expert - 1u) * pc.expert_stride : 0u;
    uint wrow[MROWS];
    for (uint r = 0u; r < MROWS; ++r) wrow[r] = pc.w_offset + min(row0 + r, N - 1u) * pc.w_nb1 + expert;
    uint xrow[TM_MAX];
    float acc[MROWS * TM_MAX];
    for (uint t = 0u; t < TM_MAX; ++t) {
        const uint c = c0 + min(t, tm - 1u);
        const uint xr = moe && pc.shared_x != 0u ? c / pc.experts_per_token : c;
        xrow[t] = tensor_row(pc.x, xr) >> 2;
        for (uint r = 0u; r < MROWS; ++r) acc[r * TM_MAX + t] = 0.0;
    }

    const uint units = (K + 31u) / 32u;
    const bool xvec = pc.x_vec4 != 0u;  // x rows start on 16 bytes: vec4 loads (on lavapipe each load is a lane loop)
    vec4 w4[MROWS * 8u];
    vec4 xv[8];
    for (uint u = gl_LocalInvocationID.x; u < units; u += gl_WorkGroupSize.x) {
        // Dequantize the unit of every row once; each column's activations are loaded once for all rows.
        for (uint r = 0u; r < MROWS; ++r) {
#if defined(W_Q8_0)
            float d;
            uint q[8];
            q8_0_load(wrow[r] + u * 34u, d, q);
            for (uint j = 0u; j < 8u; ++j) w4[r * 8u + j] = d * i8x4(q[j]);
#else
            float w[32];
            deq32_0(WTYPE, wrow[r], u, K, w);
            for (uint j = 0u; j < 8u; ++j) {
                w4[r * 8u + j] = vec4(w[4u * j], w[4u * j + 1u], w[4u * j + 2u], w[4u * j + 3u]);
            }
#endif
        }
        const uint lim = min(32u, K - u * 32u);
        for (uint t = 0u; t < tm; ++t) {
            const uint xb = xrow[t] + u * 32u;
            if (lim == 32u && xvec) {
                for (uint j = 0u; j < 8u; ++j) xv[j] = b1v.d[(xb >> 2) + j];
            } else {
                for (uint j = 0u; j < 8u; ++j) {
                    for (uint k = 0u; k < 4u; ++k) xv[j][k] = 4u * j + k < lim ? b1f.d[xb + 4u * j + k] : 0.0;
                }
            }
            for (uint r = 0u; r < MROWS; ++r) {
                float s = 0.0;
                for (uint j = 0u; j < 8u; ++j) s += dot(w4[r * 8u + j], xv[j]);
                acc[r * TM_MAX + t] += s;
            }
        }
    }
    for (uint t = 0u; t < tm; ++t) {
        const uint o = tensor_row(pc.dst, c0 + t) >> 2;
        for (uint r = 0u; r < MROWS; ++r) {
            const float v = wg_sum1(acc[r * TM_MAX + t]);
            if (gl_LocalInvocationID.x == 0u && row0 + r < N) b2f.d[o + pc.first_row + row0 + r] = v;
        }
    }
}
