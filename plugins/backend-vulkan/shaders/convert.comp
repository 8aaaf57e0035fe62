#version 450
// CAST: out = convert(in). One invocation per output unit: an element (F32/F16/BF16) or a Q8_0 block of 32
// (ConvertPush).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "dequant.glsl"
#include "quant.glsl"

PUSH_CONSTANTS(ConvertPush)
DECLARE_BINDING(0)
DECLARE_BINDING(1)
DECLARE_BINDING(2)
DECLARE_LOADS(0)
DECLARE_DEQUANT(0)
DECLARE_STORES(1)

void main() {
    const uint n = pc.n;
    const uint rows = pc.rows;
    const uint out_type = pc.dst_type;
    const uint units = out_type == T_Q8_0 ? n / 32u : n;
    const uint total = units * rows;
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint idx = gl_GlobalInvocationID.x; idx < total; idx += stride) {
        const uint r = idx / units;
        const uint u = idx % units;
        const uint src = tensor_row(pc.src, r);
        const uint dst = tensor_row(pc.dst, r);
        if (out_type == T_Q8_0) {
            float v[32];
            float amax = 0.0;
            [[dont_unroll]] for (uint k = 0u; k < 32u; ++k) {
                v[k] = ldel_0(pc.src_type, src, u * 32u + k);
                amax = max(amax, abs(v[k]));
            }
            const float d = amax / 127.0;
            const float id = d != 0.0 ? 1.0 / d : 0.0;
            const uint b = dst + u * 34u;
            st16_1(b, f32_to_f16(d));
            for (uint k = 0u; k < 32u; k += 2u) {
                const uint q0 = uint(int(round_half_away(v[k] * id))) & 0xffu;
                const uint q1 = uint(int(round_half_away(v[k + 1u] * id))) & 0xffu;
                st16_1(b + 2u + k, q0 | (q1 << 8));
            }
        } else {
            const float v = ldel_0(pc.src_type, src, u);
            if (out_type == T_F32) {
                b1u.d[(dst >> 2) + u] = floatBitsToUint(v);
            } else if (out_type == T_F16) {
                st16_1(dst + 2u * u, f32_to_f16(v));
            } else {
                st16_1(dst + 2u * u, f32_to_bf16(v));
            }
        }
    }
}
