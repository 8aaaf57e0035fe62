#version 450
// GET_ROWS: out[:, i] = dequant(src row ids[i]). One workgroup per id; invocations take 32-value units.
// Ids outside [first_row, end_row) belong to another dispatch (row windows of huge tables); ids past the table
// give 0 (GetRowsPush).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "dequant.glsl"

PUSH_CONSTANTS(GetRowsPush)
DECLARE_BINDING(0)
DECLARE_BINDING(1)
DECLARE_BINDING(2)
DECLARE_LOADS(0)
DECLARE_DEQUANT(0)

void main() {
    const uint n = pc.n;
    const uint i = gl_WorkGroupID.x + gl_WorkGroupID.z * gl_NumWorkGroups.x;
    if (i >= pc.n_ids) return;
    const int id = int(b1u.d[(pc.ids_offset >> 2) + i]);
    const bool inside = id >= int(pc.first_row) && id < int(pc.end_row);
    // The last window zero-fills the ids past the table.
    if (!inside && !(pc.last_window != 0u && (id < 0 || id >= int(pc.table_rows)))) return;
    const uint o = tensor_row(pc.dst, i) >> 2;
    const uint src = inside ? tensor_row(pc.src, uint(id) - pc.first_row) : 0u;
    float w[32];
    for (uint u = gl_LocalInvocationID.x; u * 32u < n; u += gl_WorkGroupSize.x) {
        const uint lim = min(32u, n - u * 32u);
        if (inside) {
            deq32_0(pc.src_type, src, u, n, w);
        } else {
            for (uint k = 0u; k < 32u; ++k) w[k] = 0.0;
        }
        for (uint k = 0u; k < lim; ++k) b2f.d[o + u * 32u + k] = w[k];
    }
}
