#version 450
// KV_WRITE: cache row slots[r] = convert(x row r). One workgroup per row r; its invocations first check together
// whether a later row names the same slot (the later row wins, as written in order), then convert units: an F32
// element, a pair of F16/BF16 values (one whole-word store when the row starts on a word), or a Q8_0 block.
// Push constants: ConvertPush (src: x, dst: the cache).
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

uint to_half(uint type, float v) {
    return type == T_F16 ? f32_to_f16(v) : f32_to_bf16(v);
}

void main() {
    const uint n = pc.n;
    const uint rows = pc.rows;
    const uint out_type = pc.dst_type;
    const uint r = gl_WorkGroupID.x + gl_WorkGroupID.z * gl_NumWorkGroups.x;
    if (r >= rows) return;  // uniform per workgroup
    const uint l = gl_LocalInvocationID.x;
    const uint wg = gl_WorkGroupSize.x;
    const uint slot = b2u.d[(pc.slots_offset >> 2) + r];
    if (slot >= pc.cache_rows) return;  // uniform
    float later = 0.0;
    for (uint j = r + 1u + l; j < rows; j += wg) later += b2u.d[(pc.slots_offset >> 2) + j] == slot ? 1.0 : 0.0;
    if (wg_sum1(later) > 0.0) return;  // a later row writes this slot
    const uint src = tensor_row(pc.src, r);
    const uint dst = tensor_row(pc.dst, slot);
    if (out_type == T_Q8_0) {
        for (uint u = l; u < n / 32u; u += wg) {
            float v[32];
            float amax = 0.0;
            [[dont_unroll]] for (uint k = 0u; k < 32u; ++k) {
                v[k] = ldel_0(pc.src_type, src, u * 32u + k);
                amax = max(amax, abs(v[k]));
            }
            const float d = amax / 127.0;
            const float id = d != 0.0 ? 1.0 / d : 0.0;
            const uint b = dst + u * 34u;
            st16_1(b, f32_to_f16(d));  // blocks share words with their neighbours: byte stores
            for (uint k = 0u; k < 32u; k += 2u) {
                const uint q0 = uint(int(round_half_away(v[k] * id))) & 0xffu;
                const uint q1 = uint(int(round_half_away(v[k + 1u] * id))) & 0xffu;
                st16_1(b + 2u + k, q0 | (q1 << 8));
            }
        }
    } else if (out_type == T_Q4_0) {
        // ggml's reference: d = (the value of largest magnitude) / -8, codes min(15, int(x / d + 8.5)).
        for (uint u = l; u < n / 32u; u += wg) {
            float v[32];
            float amax = 0.0;
            float vmax = 0.0;
            [[dont_unroll]] for (uint k = 0u; k < 32u; ++k) {
                v[k] = ldel_0(pc.src_type, src, u * 32u + k);
                if (abs(v[k]) > amax) {
                    amax = abs(v[k]);
                    vmax = v[k];
                }
            }
            const float d = vmax / -8.0;
            const float id = d != 0.0 ? 1.0 / d : 0.0;
            const uint b = dst + u * 18u;
            st16_1(b, f32_to_f16(d));
            for (uint k = 0u; k < 16u; k += 2u) {
                const uint q0 =
                    min(15u, uint(int(v[k] * id + 8.5))) | (min(15u, uint(int(v[k + 16u] * id + 8.5))) << 4);
                const uint q1 =
                    min(15u, uint(int(v[k + 1u] * id + 8.5))) | (min(15u, uint(int(v[k + 17u] * id + 8.5))) << 4);
                st16_1(b + 2u + k, q0 | (q1 << 8));
            }
        }
    } else if (out_type == T_F32) {
        for (uint i = l; i < n; i += wg) b1u.d[(dst >> 2) + i] = floatBitsToUint(ldel_0(pc.src_type, src, i));
    } else {
        const bool words = (dst & 3u) == 0u;
        for (uint u = l; 2u * u < n; u += wg) {
            const uint i = 2u * u;
            const uint h0 = to_half(out_type, ldel_0(pc.src_type, src, i));
            if (i + 1u < n) {
                const uint h1 = to_half(out_type, ldel_0(pc.src_type, src, i + 1u));
                if (words) {
                    b1u.d[(dst >> 2) + u] = h0 | (h1 << 16);  // the row owns the whole word
                } else {
                    st16_1(dst + 2u * i, h0);
                    st16_1(dst + 2u * i + 2u, h1);
                }
            } else {
                st16_1(dst + 2u * i, h0);  // the word's other half may be the next row's
            }
        }
    }
}
