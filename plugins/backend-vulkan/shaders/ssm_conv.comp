#version 450
// SSM_CONV: short causal depthwise convolution with a rolling per-slot state (SsmConvPush; packed tensors). One
// invocation per channel walks the tokens in row order: out = taps . (the slot's K-1 previous inputs, x), then the
// slot's state shifts by one and keeps x. A token with fresh != 0 starts its slot from zeros.
// Bindings: 0 x [C, T], 1 weights [K, C], 2 state [(K-1) C, slots] (read and written), 3 (slot, fresh) I32 [2, T],
// 4 out [C, T].
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

PUSH_CONSTANTS(SsmConvPush)
DECLARE_BINDING(0)
DECLARE_BINDING(1)
DECLARE_BINDING(2)
DECLARE_BINDING(3)
DECLARE_BINDING(4)

void main() {
    const uint ch = gl_GlobalInvocationID.x;
    const uint C = pc.channels;
    if (ch >= C) return;
    const uint K = pc.kernel;
    const uint w = (pc.w_offset >> 2) + ch * K;
    for (uint t = 0u; t < pc.tokens; ++t) {
        const uint slot = b3u.d[(pc.rows_offset >> 2) + 2u * t];
        const uint fresh = b3u.d[(pc.rows_offset >> 2) + 2u * t + 1u];
        const uint s = (pc.state_offset >> 2) + slot * (pc.state_nb1 >> 2) + ch;
        if (fresh != 0u) {
            for (uint j = 0u; j + 1u < K; ++j) b2f.d[s + j * C] = 0.0;
        }
        const float x = b0f.d[(pc.x_offset >> 2) + t * C + ch];
        float acc = 0.0;
        for (uint j = 0u; j + 1u < K; ++j) acc += b1f.d[w + j] * b2f.d[s + j * C];
        acc += b1f.d[w + K - 1u] * x;
        b4f.d[(pc.dst_offset >> 2) + t * C + ch] = acc;
        for (uint j = 0u; j + 2u < K; ++j) b2f.d[s + j * C] = b2f.d[s + (j + 1u) * C];
        b2f.d[s + (K - 2u) * C] = x;
    }
}
