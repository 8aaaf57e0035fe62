#version 450
// Row reductions: RMS_NORM (0), LAYER_NORM (1), SOFTMAX (2). One workgroup per row (NormPush). fused_mul != 0:
// RMS_NORM fused with the MUL by a weight row that follows it (binding 2), one dispatch instead of two.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

PUSH_CONSTANTS(NormPush)
DECLARE_BINDING(0)
DECLARE_BINDING(1)
DECLARE_BINDING(2)

void main() {
    const uint op = pc.op;
    const uint n = pc.n;
    const uint r = gl_WorkGroupID.x + gl_WorkGroupID.z * gl_NumWorkGroups.x;
    if (r >= pc.rows) return;
    const uint x = tensor_row(pc.src, r) >> 2;
    const uint y = tensor_row(pc.dst, r) >> 2;
    const uint l = gl_LocalInvocationID.x;
    const uint wg = gl_WorkGroupSize.x;
    if (op == 0u) {
        float s = 0.0;
        for (uint i = l; i < n; i += wg) s += b0f.d[x + i] * b0f.d[x + i];
        const float scale = inversesqrt(wg_sum1(s) / float(n) + pc.eps);
        if (pc.fused_mul != 0u) {
            const uint w = pc.weight_offset >> 2;
            for (uint i = l; i < n; i += wg) b1f.d[y + i] = b0f.d[x + i] * scale * b2f.d[w + i];
        } else {
            for (uint i = l; i < n; i += wg) b1f.d[y + i] = b0f.d[x + i] * scale;
        }
    } else if (op == 1u) {
        float s = 0.0;
        for (uint i = l; i < n; i += wg) s += b0f.d[x + i];
        const float mean = wg_sum1(s) / float(n);
        float v = 0.0;
        for (uint i = l; i < n; i += wg) v += (b0f.d[x + i] - mean) * (b0f.d[x + i] - mean);
        const float inv = inversesqrt(wg_sum1(v) / float(n) + pc.eps);
        for (uint i = l; i < n; i += wg) b1f.d[y + i] = (b0f.d[x + i] - mean) * inv;
    } else {
        const float sc = pc.scale;
        float m = uintBitsToFloat(0xff800000u);
        for (uint i = l; i < n; i += wg) m = max(m, b0f.d[x + i] * sc);
        m = wg_max1(m);
        if (isinf(m) && m < 0.0) {
            for (uint i = l; i < n; i += wg) b1f.d[y + i] = 1.0 / float(n);
            return;
        }
        float s = 0.0;
        for (uint i = l; i < n; i += wg) s += exp(b0f.d[x + i] * sc - m);
        const float inv = 1.0 / wg_sum1(s);
        for (uint i = l; i < n; i += wg) b1f.d[y + i] = exp(b0f.d[x + i] * sc - m) * inv;
    }
}
