#version 450
// ATTENTION over slot lists with an online softmax: one workgroup per (head, query token); invocations own
// dims of q and of the output accumulator, each visible pair costs one workgroup sum. No score matrix.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "dequant.glsl"

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
DECLARE_DEQUANT(1)
DECLARE_DEQUANT(2)

#define DMAX 32u

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
    float qr[DMAX];
    float acc[DMAX];
    for (uint i = 0u; i < DMAX; ++i) {
        const uint d = l + i * wg;
        qr[i] = d < hd_k ? b0f.d[q + d] : 0.0;
        acc[i] = 0.0;
    }
    // Only the dims this invocation owns: the loops stop there instead of at DMAX.
    const uint nj_k = min(DMAX, (hd_k + wg - 1u) / wg);
    const uint nj_v = min(DMAX, (hd_v + wg - 1u) / wg);
    const int window = int(pc.window);
    const int sinks = int(pc.sinks);
    const float scale = pc.scale;
    const float cap = pc.soft_cap;
#ifdef CACHE_POSITIONS
    const int shift = pos - (sinks + window - 1);
    float qs[DMAX];
    for (uint i = 0u; i < DMAX; ++i) {
        const uint d = l + i * wg;
        qs[i] = d < hd_k && shift > 0 ? cp_shifted(d, b0f.d[q + d], b0f.d[q + cp_partner(d)], shift) : qr[i];
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
    float m = uintBitsToFloat(0xff800000u);
    float sum = 0.0;
    const uint lbase = (pc.lists_offset >> 2) + list * 2u * pc.n_visible;
    for (uint i = 0u; i < n_vis; ++i) {
        const int slot = int(b3u.d[lbase + 2u * i]);
        const int p = int(b3u.d[lbase + 2u * i + 1u]);
        if (slot < 0 || slot >= int(pc.k_rows) || (causal && p > pos)) continue;
        if (window != 0 && !(p > pos - window || p < sinks)) continue;
        if (window != 0 && !causal && p >= pos + window) continue;  // not causal: the window is symmetric
        const uint kr = pc.k_offset + uint(slot) * pc.k_nb1 + kvh * pc.k_head_bytes;
        float part = 0.0;
#ifdef CACHE_POSITIONS
        if (shift > 0 && p < sinks) {
            [[dont_unroll]] for (uint j = 0u; j < nj_k; ++j) {
                const uint d = l + j * wg;
                if (d < hd_k) part += qs[j] * ldel_1(pc.k_type, kr, d);
            }
        } else
#endif
        {
            [[dont_unroll]] for (uint j = 0u; j < nj_k; ++j) {
                const uint d = l + j * wg;
                if (d < hd_k) part += qr[j] * ldel_1(pc.k_type, kr, d);
            }
        }
        float score = wg_sum1(part) * scale;
        if (biased) score += b6f.d[bias_base + uint(clamp(p - pos, -bias_r, bias_r) + bias_r) * pc.n_head + h];
        if (cap > 0.0) score = cap * tanh(clamp(score / cap, -15.0, 15.0));
        if (score > m) {
            const float r = exp(m - score);
            sum *= r;
            for (uint j = 0u; j < DMAX; ++j) acc[j] *= r;
            m = score;
        }
        const float e = exp(score - m);
        sum += e;
        const uint vr = pc.v_offset + uint(slot) * pc.v_nb1 + kvh * pc.v_head_bytes;
        [[dont_unroll]] for (uint j = 0u; j < nj_v; ++j) {
            const uint d = l + j * wg;
            if (d < hd_v) acc[j] += e * ldel_2(pc.v_type, vr, d);
        }
    }
    float inv = sum > 0.0 ? 1.0 / sum : 0.0;
    if (sunk && sum > 0.0) {  // the sink logit joins the softmax without a value row
        const float mx = max(m, sink);
        const float f = exp(m - mx);
        inv = f / (sum * f + exp(sink - mx));
    }
    const uint o = (pc.dst_offset + h * pc.dst_head_stride + t * pc.dst_token_stride) >> 2;
    for (uint j = 0u; j < DMAX; ++j) {
        const uint d = l + j * wg;
        if (d < hd_v) b5f.d[o + d] = acc[j] * inv;
    }
}
