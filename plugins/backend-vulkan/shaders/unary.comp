#version 450
// SCALE (0), SILU (1), GELU (2), GELU_ERF (3), TANH (4), SIGMOID (5), SOFTPLUS (6), element-wise over rows (UnaryPush).
#extension GL_GOOGLE_include_directive : require
#include "activations.glsl"
#include "common.glsl"

PUSH_CONSTANTS(UnaryPush)
DECLARE_BINDING(0)
DECLARE_BINDING(1)

void main() {
    const uint op = pc.op;
    const uint n = pc.n;
    const uint total = n * pc.rows;
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint idx = gl_GlobalInvocationID.x; idx < total; idx += stride) {
        const uint r = idx / n;
        const uint i = idx % n;
        const float x = b0f.d[(tensor_row(pc.src, r) >> 2) + i];
        float y;
        if (op == 0u) {
            y = x * pc.factor;
        } else if (op == 1u) {
            y = silu(x);
        } else if (op == 2u) {
            y = gelu_tanh(x);
        } else if (op == 3u) {
            y = 0.5 * x * (1.0 + erf_approx(x * 0.70710678118654752));
        } else if (op == 4u) {
            y = tanh_safe(x);
        } else if (op == 5u) {
            y = sigmoid(x);
        } else {
            y = x > 20.0 ? x : log(1.0 + exp(x));
        }
        b1f.d[(tensor_row(pc.dst, r) >> 2) + i] = y;
    }
}
