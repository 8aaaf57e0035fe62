#version 450
// SLICE: dst row r = src row r from element pc.offset on, pc.n elements (SlicePush).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

PUSH_CONSTANTS(SlicePush)
DECLARE_BINDING(0)
DECLARE_BINDING(1)

void main() {
    const uint n = pc.n;
    const uint total = n * pc.rows;
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint idx = gl_GlobalInvocationID.x; idx < total; idx += stride) {
        const uint r = idx / n;
        const uint i = idx % n;
        b1f.d[(tensor_row(pc.dst, r) >> 2) + i] = b0f.d[(tensor_row(pc.src, r) >> 2) + pc.offset + i];
    }
}
