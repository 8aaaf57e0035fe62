#version 450
// COPY: units of P(1) bytes (4: words, 2: halves, 1: bytes of block rows) from in's rows of P(2) units to out's
// rows of P(3) units, in logical order.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

DECLARE_BINDING(0)
DECLARE_BINDING(1)
DECLARE_LOADS(0)
DECLARE_STORES(1)

void main() {
    const uint es = P(1);
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint idx = gl_GlobalInvocationID.x; idx < P(0); idx += stride) {
        const uint s = P(4) + row_offset(idx / P(2), P(5), P(6), P(7), P(8), P(9)) + (idx % P(2)) * es;
        const uint d = P(10) + row_offset(idx / P(3), P(11), P(12), P(13), P(14), P(15)) + (idx % P(3)) * es;
        if (es == 4u) {
            b1u.d[d >> 2] = b0u.d[s >> 2];
        } else if (es == 2u) {
            st16_1(d, ld16_0(s));
        } else {
            st8_1(d, ld8_0(s));
        }
    }
}
