#version 450
// MATMUL with few columns (decode): out[n, m] = dot(W row n, x column m). One workgroup per ROWS output rows and
// one column; the invocations split each row into units (a Q8_0 block, 8 floats; unit u: invocation u % WG), load
// the unit's activations once as vec4 and apply them to every row, then reduce per row. Q8_0 blocks are read with
// three aligned 16-byte loads and realigned in registers. On lavapipe the invocations are SIMD lanes and every
// load is a loop over them, so each invocation keeps a straight-line body of few, wide loads.
// Push constants: MatmulPush, as matmul.comp.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

PUSH_CONSTANTS(MatmulPush)
DECLARE_BINDING(0)
DECLARE_BINDING(1)
DECLARE_BINDING(2)
DECLARE_LOADS(0)
layout(std430, binding = 1) buffer B1v {
    vec4 d[];
}
b1v;

#ifndef ROWS
#define ROWS 4u
#endif

#if defined(W_Q8_0)
#include "q8_0.glsl"
#define UNIT 32u  // one block per invocation and step

float unit_dot(uint row, uint u, vec4 x[8]) {
    float d;
    uint q[8];
    q8_0_load(row + u * 34u, d, q);
    float s = 0.0;
    for (uint j = 0u; j < 8u; ++j) s += dot(i8x4(q[j]), x[j]);
    return d * s;
}
#elif defined(W_F16)
#define UNIT 8u

float unit_dot(uint row, uint u, vec4 x[2]) {
    const uint w = (row >> 2) + u * 4u;  // F16 rows are 4-byte aligned (checked on the host)
    const vec2 a = unpackHalf2x16(b0u.d[w]);
    const vec2 b = unpackHalf2x16(b0u.d[w + 1u]);
    const vec2 c = unpackHalf2x16(b0u.d[w + 2u]);
    const vec2 e = unpackHalf2x16(b0u.d[w + 3u]);
    return dot(vec4(a, b), x[0]) + dot(vec4(c, e), x[1]);
}
#elif defined(W_F32)
layout(std430, binding = 0) buffer B0v {
    vec4 d[];
}
b0v;
#define UNIT 8u

float unit_dot(uint row, uint u, vec4 x[2]) {
    const uint w = (row >> 4) + u * 2u;  // F32 rows are 16-byte aligned (checked on the host)
    return dot(b0v.d[w], x[0]) + dot(b0v.d[w + 1u], x[1]);
}
#endif

void main() {
    const uint K = pc.k;
    const uint N = pc.n;
    const uint row0 = (gl_WorkGroupID.x + gl_WorkGroupID.z * gl_NumWorkGroups.x) * ROWS;
    if (row0 >= N) return;  // uniform per workgroup
    const uint col = gl_WorkGroupID.y;
    const uint xb = tensor_row(pc.x, col) >> 2;
    const uint stride = pc.w_nb1;
    const uint wbase = pc.w_offset;
    uint rows[ROWS];
    float acc[ROWS];
    for (uint r = 0u; r < ROWS; ++r) {
        rows[r] = wbase + min(row0 + r, N - 1u) * stride;
        acc[r] = 0.0;
    }
    const uint units = K / UNIT;  // K is a multiple of 32 (checked on the host)
    for (uint u = gl_LocalInvocationID.x; u < units; u += gl_WorkGroupSize.x) {
        const uint xi = (xb >> 2) + u * (UNIT / 4u);  // x is 16-byte aligned (checked on the host)
        vec4 x[UNIT / 4u];
        for (uint i = 0u; i < UNIT / 4u; ++i) x[i] = b1v.d[xi + i];
        for (uint r = 0u; r < ROWS; ++r) acc[r] += unit_dot(rows[r], u, x);
    }
    for (uint r = 0u; r < ROWS; ++r) {
        const float v = wg_sum1(acc[r]);
        if (gl_LocalInvocationID.x == 0u && row0 + r < N) {
            const uint o = tensor_row(pc.dst, col) >> 2;
            b2f.d[o + pc.first_row + row0 + r] = v;
        }
    }
}
