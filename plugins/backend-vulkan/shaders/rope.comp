#version 450
// ROPE: invocation j of (head, token) rotates pair j (j < n_rot/2) or copies pass-through dim n_rot + j - n_rot/2.
// theta = pos * fscale * base^(-2j/n_rot); the angle is reduced modulo 2 pi in two parts before sin/cos
// (RopePush). The rope_scaled variant (SCALED) divides the frequency by the pair's factor (binding 3), mixes in
// YaRN's unscaled angle by the ramp, and multiplies cos/sin by mscale, as ROPE's contract says (ops.def).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

PUSH_CONSTANTS(RopePush)
DECLARE_BINDING(0)
DECLARE_BINDING(1)
DECLARE_BINDING(2)
#ifdef SCALED
DECLARE_BINDING(3)
#endif

void main() {
    const uint hd = pc.head_dim;
    const uint n_head = pc.n_head;
    const uint half_rot = pc.n_rot / 2u;
    const uint per = half_rot + (hd - pc.n_rot);
    const uint total = per * n_head * pc.tokens;
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint idx = gl_GlobalInvocationID.x; idx < total; idx += stride) {
        const uint j = idx % per;
        const uint h = (idx / per) % n_head;
        const uint t = idx / (per * n_head);
        const uint x = (pc.x_offset + h * pc.x_nb1 + (t % pc.x_ne2) * pc.x_nb2 + (t / pc.x_ne2) * pc.x_nb3) >> 2;
        const uint y =
            (pc.dst_offset + h * pc.dst_nb1 + (t % pc.x_ne2) * pc.dst_nb2 + (t / pc.x_ne2) * pc.dst_nb3) >> 2;
        if (j >= half_rot) {
            const uint d = pc.n_rot + j - half_rot;
            b2f.d[y + d] = b0f.d[x + d];
            continue;
        }
        const float pos = float(int(b1u.d[(pc.positions_offset >> 2) + t]));
#ifdef SCALED
        float f = exp2(float(j) * pc.theta_step);
        if (pc.has_factors != 0u) f /= b3f.d[(pc.factors_offset >> 2) + j];
        float mix = 0.0;
        if (pc.ext_factor != 0.0) {
            const float y = (float(j) - pc.corr_low) / max(0.001, pc.corr_high - pc.corr_low);
            mix = (1.0 - min(1.0, max(0.0, y))) * pc.ext_factor;
        }
        f *= pc.freq_scale * (1.0 - mix) + mix;
#else
        const float f = pc.freq_scale * exp2(float(j) * pc.theta_step);
#endif
        // theta = hi + lo exactly (fma), then theta - k * 2 pi with 2 pi split in two floats.
        const float hi = pos * f;
        const float lo = fma(pos, f, -hi);
        const float k = floor(hi * 0.15915494309189535 + 0.5);
        const float red = (fma(-k, 6.28318548202514648, hi) - k * -1.7484556000744883e-7) + lo;
#ifdef SCALED
        const float c = cos(red) * pc.mscale;
        const float s = sin(red) * pc.mscale;
#else
        const float c = cos(red);
        const float s = sin(red);
#endif
        const uint a = pc.mode == 1u ? j : 2u * j;
        const uint b = pc.mode == 1u ? j + half_rot : 2u * j + 1u;
        const float x0 = b0f.d[x + a];
        const float x1 = b0f.d[x + b];
        b2f.d[y + a] = x0 * c - x1 * s;
        b2f.d[y + b] = x0 * s + x1 * c;
    }
}
