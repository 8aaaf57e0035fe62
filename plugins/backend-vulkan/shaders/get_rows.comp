#version 450
// GET_ROWS: out[:, i] = dequant(src row ids[i]). One workgroup per id; invocations take 32-value units.
// Ids outside [P(16), P(17)) belong to another dispatch (row windows of huge tables); ids past the table give 0.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "dequant.glsl"

DECLARE_BINDING(0)
DECLARE_BINDING(1)
DECLARE_BINDING(2)
DECLARE_LOADS(0)
DECLARE_DEQUANT(0)

void main() {
    const uint n = P(0);
    const uint i = gl_WorkGroupID.x + gl_WorkGroupID.z * gl_NumWorkGroups.x;
    if (i >= P(1)) return;
    const int id = int(b1u.d[(P(9) >> 2) + i]);
    const bool inside = id >= int(P(16)) && id < int(P(17));
    if (!inside && !(P(18) != 0u && (id < 0 || id >= int(P(19))))) return;  // P(18): the last window zero-fills
    const uint o = (P(10) + row_offset(i, P(11), P(12), P(13), P(14), P(15))) >> 2;
    const uint src = inside ? P(3) + row_offset(uint(id) - P(16), P(5), P(6), P(4), P(7), P(8)) : 0u;
    float w[32];
    for (uint u = gl_LocalInvocationID.x; u * 32u < n; u += gl_WorkGroupSize.x) {
        const uint lim = min(32u, n - u * 32u);
        if (inside) {
            deq32_0(P(2), src, u, n, w);
        } else {
            for (uint k = 0u; k < 32u; ++k) w[k] = 0.0;
        }
        for (uint k = 0u; k < lim; ++k) b2f.d[o + u * 32u + k] = w[k];
    }
}
