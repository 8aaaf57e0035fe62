#version 450
// ROPE: invocation j of (head, token) rotates pair j (j < n_rot/2) or copies pass-through dim n_rot + j - n_rot/2.
// theta = pos * fscale * base^(-2j/n_rot); the angle is reduced modulo 2 pi in two parts before sin/cos.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

DECLARE_BINDING(0)
DECLARE_BINDING(1)
DECLARE_BINDING(2)

void main() {
    const uint hd = P(0);
    const uint n_head = P(1);
    const uint half_rot = P(4) / 2u;
    const uint per = half_rot + (hd - P(4));
    const uint total = per * n_head * P(2);
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint idx = gl_GlobalInvocationID.x; idx < total; idx += stride) {
        const uint j = idx % per;
        const uint h = (idx / per) % n_head;
        const uint t = idx / (per * n_head);
        const uint x = (P(7) + h * P(8) + (t % P(11)) * P(9) + (t / P(11)) * P(10)) >> 2;
        const uint y = (P(12) + h * P(13) + (t % P(11)) * P(14) + (t / P(11)) * P(15)) >> 2;
        if (j >= half_rot) {
            const uint d = P(4) + j - half_rot;
            b2f.d[y + d] = b0f.d[x + d];
            continue;
        }
        const float pos = float(int(b1u.d[(P(16) >> 2) + t]));
        const float f = PF(6) * exp2(float(j) * PF(5));
        // theta = hi + lo exactly (fma), then theta - k * 2 pi with 2 pi split in two floats.
        const float hi = pos * f;
        const float lo = fma(pos, f, -hi);
        const float k = floor(hi * 0.15915494309189535 + 0.5);
        const float red = (fma(-k, 6.28318548202514648, hi) - k * -1.7484556000744883e-7) + lo;
        const float c = cos(red);
        const float s = sin(red);
        const uint a = P(3) == 1u ? j : 2u * j;
        const uint b = P(3) == 1u ? j + half_rot : 2u * j + 1u;
        const float x0 = b0f.d[x + a];
        const float x1 = b0f.d[x + b];
        b2f.d[y + a] = x0 * c - x1 * s;
        b2f.d[y + b] = x0 * s + x1 * c;
    }
}
