#version 450
// GATED_DELTA: the gated delta rule, recurrent form (GatedDeltaPush; packed tensors). One invocation per row i of
// value head h's dv x dk state matrix (rows evolve independently), tokens in row order, the row held in registers:
// S_i = exp(g) S_i; S_i += beta (v_i - S_i . k) k; out_i = S_i . q (key head h % nk). A token with fresh != 0 starts
// its slot from zeros. Bindings: 0 q, 1 k [dk, nk, T], 2 v [dv, nv, T], 3 log-decay, 4 beta [nv, T], 5 state
// [dv dk nv, slots] (read and written), 6 (slot, fresh) I32 [2, T], 7 out [dv, nv, T]. With chunk_from F > 0 it
// skips the tokens of slots with F tokens or more in the node (gated_delta_chunked.comp, recorded beside it, runs
// those and skips these), deciding once per run of a slot.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#define DK_MAX 256u

PUSH_CONSTANTS(GatedDeltaPush)
DECLARE_BINDING(0)
DECLARE_BINDING(1)
DECLARE_BINDING(2)
DECLARE_BINDING(3)
DECLARE_BINDING(4)
DECLARE_BINDING(5)
DECLARE_BINDING(6)
DECLARE_BINDING(7)

#include "state_rows.glsl"

void main() {
    const uint r = gl_GlobalInvocationID.x;
    const uint dk = pc.dk, dv = pc.dv, nv = pc.nv;
    if (r >= nv * dv) return;
    const uint h = r / dv, i = r % dv, hk = h % pc.nk;
    float s[DK_MAX];
    uint slot_held = 0xffffffffu;
    uint base = 0u;
    uint run_slot = 0xffffffffu;  // the slot of the run token t belongs to, and whether it is the chunked form's
    bool chunked = false;
    for (uint t = 0u; t < pc.tokens; ++t) {
        const uint slot = b6u.d[(pc.rows_offset >> 2) + 2u * t];
        const uint fresh = b6u.d[(pc.rows_offset >> 2) + 2u * t + 1u];
        if (pc.chunk_from != 0u) {
            if (slot != run_slot) {
                run_slot = slot;
                chunked = slot_reaches(pc.rows_offset >> 2, pc.tokens, t, pc.chunk_from);
            }
            if (chunked) continue;
        }
        if (slot != slot_held) {
            if (slot_held != 0xffffffffu) {
                for (uint j = 0u; j < dk; ++j) b5f.d[base + j] = s[j];
            }
            slot_held = slot;
            base = (pc.state_offset >> 2) + slot * (pc.state_nb1 >> 2) + (h * dv + i) * dk;
            for (uint j = 0u; j < dk; ++j) s[j] = b5f.d[base + j];
        }
        if (fresh != 0u) {
            for (uint j = 0u; j < dk; ++j) s[j] = 0.0;
        }
        const uint kq = (t * pc.nk + hk) * dk;
        const float decay = exp(b3f.d[(pc.g_offset >> 2) + t * nv + h]);
        const float beta = b4f.d[(pc.beta_offset >> 2) + t * nv + h];
        float sk = 0.0;
        for (uint j = 0u; j < dk; ++j) {
            s[j] *= decay;
            sk += s[j] * b1f.d[(pc.k_offset >> 2) + kq + j];
        }
        const float delta = beta * (b2f.d[(pc.v_offset >> 2) + (t * nv + h) * dv + i] - sk);
        float o = 0.0;
        for (uint j = 0u; j < dk; ++j) {
            s[j] += delta * b1f.d[(pc.k_offset >> 2) + kq + j];
            o += s[j] * b0f.d[(pc.q_offset >> 2) + kq + j];
        }
        b7f.d[(pc.dst_offset >> 2) + (t * nv + h) * dv + i] = o;
    }
    if (slot_held != 0xffffffffu) {
        for (uint j = 0u; j < dk; ++j) b5f.d[base + j] = s[j];
    }
}
