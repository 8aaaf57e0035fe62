#version 450
// STEER: out[:, t] = x[:, t] + table[:, slot[t]] for a slot in 0..S-1, else x[:, t] unchanged (a plain copy).
// Push constants: SteerPush.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

PUSH_CONSTANTS(SteerPush)
DECLARE_BINDING(0)
DECLARE_BINDING(1)
DECLARE_BINDING(2)
DECLARE_BINDING(3)

void main() {
    const uint n = pc.n;
    const uint total = n * pc.rows;
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint idx = gl_GlobalInvocationID.x; idx < total; idx += stride) {
        const uint i = idx % n;
        const uint t = idx / n;
        const uint x = tensor_row(pc.x, t) >> 2;
        const uint o = tensor_row(pc.dst, t) >> 2;
        const int s = int(b2u.d[(pc.slots_offset >> 2) + t]);
        if (s >= 0 && uint(s) < pc.n_slots) {
            const uint v = tensor_row(pc.table, uint(s)) >> 2;
            b3f.d[o + i] = b0f.d[x + i] + b1f.d[v + i];
        } else {
            b3f.d[o + i] = b0f.d[x + i];
        }
    }
}
