#version 450
// ADD (0), MUL (1), SWIGLU (2), GEGLU (3), SWIGLU_OAI (4: gpt-oss's clamped SwiGLU): out = f(a, b); b may be one
// row broadcast over a's rows (BinaryPush).
#extension GL_GOOGLE_include_directive : require
#include "activations.glsl"
#include "common.glsl"

PUSH_CONSTANTS(BinaryPush)
DECLARE_BINDING(0)
DECLARE_BINDING(1)
DECLARE_BINDING(2)

void main() {
    const uint op = pc.op;
    const uint n = pc.n;
    const uint total = n * pc.rows;
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint idx = gl_GlobalInvocationID.x; idx < total; idx += stride) {
        const uint r = idx / n;
        const uint i = idx % n;
        const float a = b0f.d[(tensor_row(pc.a, r) >> 2) + i];
        const uint rb = pc.broadcast != 0u ? 0u : r;
        const float b = b1f.d[(tensor_row(pc.b, rb) >> 2) + i];
        float y;
        if (op == 0u) {
            y = a + b;
        } else if (op == 1u) {
            y = a * b;
        } else if (op == 2u) {
            y = silu(a) * b;
        } else if (op == 3u) {
            y = gelu_tanh(a) * b;
        } else {
            const float x = min(a, pc.limit);
            y = x / (1.0 + exp(pc.alpha * -x)) * (clamp(b, -pc.limit, pc.limit) + 1.0);
        }
        b2f.d[(tensor_row(pc.dst, r) >> 2) + i] = y;
    }
}
