#version 450
// SCALE (0), SILU (1), GELU (2), GELU_ERF (3), element-wise over rows.
#extension GL_GOOGLE_include_directive : require
#include "activations.glsl"
#include "common.glsl"

DECLARE_BINDING(0)
DECLARE_BINDING(1)

void main() {
    const uint op = P(0);
    const uint n = P(1);
    const uint total = n * P(2);
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint idx = gl_GlobalInvocationID.x; idx < total; idx += stride) {
        const uint r = idx / n;
        const uint i = idx % n;
        const float x = b0f.d[((P(4) + row_offset(r, P(5), P(6), P(7), P(8), P(9))) >> 2) + i];
        float y;
        if (op == 0u) {
            y = x * PF(3);
        } else if (op == 1u) {
            y = silu(x);
        } else if (op == 2u) {
            y = gelu_tanh(x);
        } else {
            y = 0.5 * x * (1.0 + erf_approx(x * 0.70710678118654752));
        }
        b1f.d[((P(10) + row_offset(r, P(11), P(12), P(13), P(14), P(15))) >> 2) + i] = y;
    }
}
