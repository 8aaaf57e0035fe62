#version 450
// COPY: units of unit_bytes (4: words, 2: halves, 1: bytes of block rows) from src rows of src_row_units units to
// dst rows of dst_row_units units, in logical order (CopyPush).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

PUSH_CONSTANTS(CopyPush)
DECLARE_BINDING(0)
DECLARE_BINDING(1)
DECLARE_LOADS(0)
DECLARE_STORES(1)

void main() {
    const uint es = pc.unit_bytes;
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint idx = gl_GlobalInvocationID.x; idx < pc.total; idx += stride) {
        const uint s = tensor_row(pc.src, idx / pc.src_row_units) + (idx % pc.src_row_units) * es;
        const uint d = tensor_row(pc.dst, idx / pc.dst_row_units) + (idx % pc.dst_row_units) * es;
        if (es == 4u) {
            b1u.d[d >> 2] = b0u.d[s >> 2];
        } else if (es == 2u) {
            st16_1(d, ld16_0(s));
        } else {
            st8_1(d, ld8_0(s));
        }
    }
}
