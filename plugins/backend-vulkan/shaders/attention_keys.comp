#version 450
// ATTENTION over slot lists, lanes over keys: one workgroup per (head, query token); invocation l takes visible
// pairs l, l + WG, l + 2 WG, ... and computes the whole q.k of each (K and V read 4 values per load) with its own
// online softmax (max, sum, V accumulator). The invocations' states are merged once at the end, so a key costs no
// workgroup reduction (the per-dim attention.comp pays one per key). Head dims: multiples of 4, at most DMAX.
// K/V cache types F32, F16, Q8_0. Push constants: as attention.comp.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#ifdef CACHE_POSITIONS
PUSH_CONSTANTS(AttentionSinksPush)
#include "cache_positions.glsl"
#else
PUSH_CONSTANTS(AttentionPush)
#endif
DECLARE_BINDING(0)
DECLARE_BINDING(1)
DECLARE_BINDING(2)
DECLARE_BINDING(3)
DECLARE_BINDING(4)
DECLARE_BINDING(5)
DECLARE_BINDING(6)
DECLARE_BINDING(7)
DECLARE_LOADS(1)
DECLARE_LOADS(2)
layout(std430, binding = 1) buffer B1v {
    vec4 d[];
}
b1v;
layout(std430, binding = 2) buffer B2v {
    vec4 d[];
}
b2v;

#ifndef DMAX
#define DMAX 256u
#endif
#define D4 (DMAX / 4u)

// Values i .. i + 3 (i a multiple of 4) of the row at byte `row`.
#define DECLARE_LD4(N)                                                                                            \
    vec4 ld4_##N(uint type, uint row, uint i) {                                                                   \
        if (type == T_F32) {                                                                                      \
            const uint w = (row >> 2) + i;                                                                        \
            if ((w & 3u) == 0u) return b##N##v.d[w >> 2];                                                         \
            return uintBitsToFloat(uvec4(b##N##u.d[w], b##N##u.d[w + 1u], b##N##u.d[w + 2u], b##N##u.d[w + 3u])); \
        }                                                                                                         \
        if (type == T_F16) {                                                                                      \
            const uint b = row + 2u * i;                                                                          \
            return vec4(unpackHalf2x16(ld32_##N(b)), unpackHalf2x16(ld32_##N(b + 4u)));                           \
        }                                                                                                         \
        if (type == T_Q4_0) { /* 4 nibbles of one block: low halves for values 0..15, high for 16..31 */          \
            const uint b = row + (i >> 5) * 18u;                                                                  \
            const uint j = i & 31u;                                                                               \
            const uint v = ld32_##N(b + 2u + (j & 15u)) >> (j < 16u ? 0u : 4u);                                   \
            return ldh_##N(b) *                                                                                   \
                   (vec4(float(v & 15u), float((v >> 8) & 15u), float((v >> 16) & 15u), float((v >> 24) & 15u)) - \
                    8.0);                                                                                         \
        }                                                                                                         \
        /* Q8_0: the 4 values lie in one block */                                                                 \
        const uint b = row + (i >> 5) * 34u;                                                                      \
        const int v = int(ld32_##N(b + 2u + (i & 31u)));                                                          \
        return ldh_##N(b) * vec4(ivec4(v << 24, v << 16, v << 8, v) >> 24);                                       \
    }
DECLARE_LD4(1)
DECLARE_LD4(2)

void main() {
    const uint hd_k = pc.hd_k;
    const uint hd_v = pc.hd_v;
    const uint h = gl_WorkGroupID.x;
    const uint t = gl_WorkGroupID.y;
    const uint l = gl_LocalInvocationID.x;
    const uint wg = gl_WorkGroupSize.x;
    const uint kvh = h / pc.group;
    const uint list = b4u.d[(pc.queries_offset >> 2) + 2u * t];
    const uint n_vis = list < pc.n_lists ? pc.n_visible : 0u;  // a query naming no list sees nothing
    const int pos = int(b4u.d[(pc.queries_offset >> 2) + 2u * t + 1u]);
    const uint q = (pc.q_offset + h * pc.q_nb1 + t * pc.q_nb2) >> 2;
    const uint nk = hd_k / 4u;
    const uint nv = hd_v / 4u;
    vec4 q4[D4];
    vec4 acc[D4];
    for (uint j = 0u; j < nk; ++j) {
        q4[j] = vec4(b0f.d[q + 4u * j], b0f.d[q + 4u * j + 1u], b0f.d[q + 4u * j + 2u], b0f.d[q + 4u * j + 3u]);
    }
    for (uint j = 0u; j < nv; ++j) acc[j] = vec4(0.0);
    const int window = int(pc.window);
    const int sinks = int(pc.sinks);
    const float scale = pc.scale;
    const float cap = pc.soft_cap;
#ifdef CACHE_POSITIONS
    const int shift = pos - (sinks + window - 1);
    vec4 qs4[D4];
    for (uint j = 0u; j < nk; ++j) {
        qs4[j] = q4[j];
        if (shift > 0) {
            for (uint e = 0u; e < 4u; ++e) {
                const uint d = 4u * j + e;
                qs4[j][e] = cp_shifted(d, b0f.d[q + d], b0f.d[q + cp_partner(d)], shift);
            }
        }
    }
#endif
#ifdef CACHE_POSITIONS
    const bool causal = true;
    const bool biased = false;
    const int bias_r = 0;
    const uint bias_base = 0u;
    const bool sunk = false;
    const float sink = 0.0;
#else
    // flags: bit 0 not causal, bit 1 relative position bias (binding 6, [n_head, 2R + 1], R = bias_radius), bit 2
    // learned sink logits (binding 7, one per head). The "_cp" variants take the sinks' rotation instead
    // (AttentionSinksPush): always causal, no bias, no sink logits.
    const bool causal = (pc.flags & 1u) == 0u;
    const bool biased = (pc.flags & 2u) != 0u;
    const int bias_r = int(pc.bias_radius);
    const uint bias_base = pc.bias_offset >> 2;
    const bool sunk = (pc.flags & 4u) != 0u;
    const float sink = sunk ? b7f.d[(pc.sink_offset >> 2) + h] : 0.0;
#endif
    const float neg_inf = uintBitsToFloat(0xff800000u);
    float m = neg_inf;
    float sum = 0.0;
    const uint lbase = (pc.lists_offset >> 2) + list * 2u * pc.n_visible;
    for (uint i = l; i < n_vis; i += wg) {
        const int slot = int(b3u.d[lbase + 2u * i]);
        const int p = int(b3u.d[lbase + 2u * i + 1u]);
        if (slot < 0 || slot >= int(pc.k_rows) || (causal && p > pos)) continue;
        if (window != 0 && !(p > pos - window || p < sinks)) continue;
        if (window != 0 && !causal && p >= pos + window) continue;  // not causal: the window is symmetric
        const uint kr = pc.k_offset + uint(slot) * pc.k_nb1 + kvh * pc.k_head_bytes;
        float s = 0.0;
#ifdef CACHE_POSITIONS
        if (shift > 0 && p < sinks) {
            for (uint j = 0u; j < nk; ++j) s += dot(qs4[j], ld4_1(pc.k_type, kr, 4u * j));
        } else
#endif
        {
            for (uint j = 0u; j < nk; ++j) s += dot(q4[j], ld4_1(pc.k_type, kr, 4u * j));
        }
        float score = s * scale;
        if (biased) score += b6f.d[bias_base + uint(clamp(p - pos, -bias_r, bias_r) + bias_r) * pc.n_head + h];
        if (cap > 0.0) score = cap * tanh(clamp(score / cap, -15.0, 15.0));
        if (score > m) {
            const float r = exp(m - score);
            sum *= r;
            for (uint j = 0u; j < nv; ++j) acc[j] *= r;
            m = score;
        }
        const float e = exp(score - m);
        sum += e;
        const uint vr = pc.v_offset + uint(slot) * pc.v_nb1 + kvh * pc.v_head_bytes;
        for (uint j = 0u; j < nv; ++j) acc[j] += e * ld4_2(pc.v_type, vr, 4u * j);
    }
    // Merge: every invocation's state rescaled to the workgroup's max.
    const float mx = wg_max1(m);
    const float f = (m == neg_inf || mx == neg_inf) ? 0.0 : exp(m - mx);
    const float total = wg_sum1(sum * f);
    float inv = total > 0.0 ? 1.0 / total : 0.0;
    if (sunk && total > 0.0) {  // the sink logit joins the softmax without a value row
        const float top = max(mx, sink);
        const float g = exp(mx - top);
        inv = g / (total * g + exp(sink - top));
    }
    const uint o = (pc.dst_offset + h * pc.dst_head_stride + t * pc.dst_token_stride) >> 2;
    for (uint j = 0u; j < nv; ++j) {
        const vec4 a = acc[j] * f;
#ifdef ONE_SUBGROUP
        const vec4 r = subgroupAdd(a);
#else
        const vec4 r = vec4(wg_sum(a.x), wg_sum(a.y), wg_sum(a.z), wg_sum(a.w));
#endif
        if (j % wg == l) {
            for (uint k = 0u; k < 4u; ++k) b5f.d[o + 4u * j + k] = r[k] * inv;
        }
    }
}
