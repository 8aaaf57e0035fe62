#version 450
// STEER: out[:, t] = x[:, t] + table[:, slot[t]] for a slot in 0..S-1, else x[:, t] unchanged (a plain copy).
// P(0) n, P(1) rows, P(2) slots S; x: P(3..8); table: P(9..14); slot offset P(15); out: P(16..21).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

DECLARE_BINDING(0)
DECLARE_BINDING(1)
DECLARE_BINDING(2)
DECLARE_BINDING(3)

void main() {
    const uint n = P(0);
    const uint total = n * P(1);
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint idx = gl_GlobalInvocationID.x; idx < total; idx += stride) {
        const uint i = idx % n;
        const uint t = idx / n;
        const uint x = (P(3) + row_offset(t, P(4), P(5), P(6), P(7), P(8))) >> 2;
        const uint o = (P(16) + row_offset(t, P(17), P(18), P(19), P(20), P(21))) >> 2;
        const int s = int(b2u.d[(P(15) >> 2) + t]);
        if (s >= 0 && uint(s) < P(2)) {
            const uint v = (P(9) + row_offset(uint(s), P(10), P(11), P(12), P(13), P(14))) >> 2;
            b3f.d[o + i] = b0f.d[x + i] + b1f.d[v + i];
        } else {
            b3f.d[o + i] = b0f.d[x + i];
        }
    }
}
