#version 450
// ADD (0), MUL (1), SWIGLU (2), GEGLU (3): out = f(a, b); b may be one row broadcast over a's rows.
#extension GL_GOOGLE_include_directive : require
#include "activations.glsl"
#include "common.glsl"

DECLARE_BINDING(0)
DECLARE_BINDING(1)
DECLARE_BINDING(2)

void main() {
    const uint op = P(0);
    const uint n = P(1);
    const uint total = n * P(2);
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint idx = gl_GlobalInvocationID.x; idx < total; idx += stride) {
        const uint r = idx / n;
        const uint i = idx % n;
        const float a = b0f.d[((P(4) + row_offset(r, P(5), P(6), P(7), P(8), P(9))) >> 2) + i];
        const uint rb = P(3) != 0u ? 0u : r;
        const float b = b1f.d[((P(10) + row_offset(rb, P(11), P(12), P(13), P(14), P(15))) >> 2) + i];
        float y;
        if (op == 0u) {
            y = a + b;
        } else if (op == 1u) {
            y = a * b;
        } else if (op == 2u) {
            y = silu(a) * b;
        } else {
            y = gelu_tanh(a) * b;
        }
        b2f.d[((P(16) + row_offset(r, P(17), P(18), P(19), P(20), P(21))) >> 2) + i] = y;
    }
}
