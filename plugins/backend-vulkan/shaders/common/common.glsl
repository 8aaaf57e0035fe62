// Shared declarations of every Basalt compute shader: the eight storage-buffer bindings (each seen as uint words
// and as floats), the push-constant structs (push-constants.h), byte-addressed loads/stores on the word views, and the
// workgroup reductions (subgroup first; shared memory only when the workgroup holds several subgroups).
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

layout(local_size_x_id = 0) in;

#include "push-constants.h"

// Declares the shader's push constants as `pc`, a struct of push-constants.h (one per shader).
#define PUSH_CONSTANTS(T)                \
    layout(push_constant) uniform Push { \
        T pc;                            \
    };

// Binding N as words (bNu.d) and as floats (bNf.d): one descriptor, two views.
#define DECLARE_BINDING(N)                       \
    layout(std430, binding = N) buffer B##N##u { \
        uint d[];                                \
    }                                            \
    b##N##u;                                     \
    layout(std430, binding = N) buffer B##N##f { \
        float d[];                               \
    }                                            \
    b##N##f;

// Byte-addressed reads of a word view (little-endian, any alignment).
#define DECLARE_LOADS(N)                                                             \
    uint ld8_##N(uint b) {                                                           \
        return (b##N##u.d[b >> 2] >> ((b & 3u) * 8u)) & 0xffu;                       \
    }                                                                                \
    uint ld16_##N(uint b) {                                                          \
        if ((b & 1u) == 0u) return (b##N##u.d[b >> 2] >> ((b & 2u) * 8u)) & 0xffffu; \
        return ld8_##N(b) | (ld8_##N(b + 1u) << 8);                                  \
    }                                                                                \
    uint ld32_##N(uint b) {                                                          \
        const uint s = (b & 3u) * 8u;                                                \
        const uint lo = b##N##u.d[b >> 2];                                           \
        if (s == 0u) return lo;                                                      \
        return (lo >> s) | (b##N##u.d[(b >> 2) + 1u] << (32u - s));                  \
    }                                                                                \
    float ldh_##N(uint b) {                                                          \
        return unpackHalf2x16(ld16_##N(b)).x;                                        \
    }                                                                                \
    float ldbf_##N(uint b) {                                                         \
        return uintBitsToFloat(ld16_##N(b) << 16);                                   \
    }

// Byte-addressed writes into a word view that other invocations may share a word with (atomics keep their
// bytes intact).
#define DECLARE_STORES(N)                                \
    void st8_##N(uint b, uint v) {                       \
        const uint s = (b & 3u) * 8u;                    \
        atomicAnd(b##N##u.d[b >> 2], ~(0xffu << s));     \
        atomicOr(b##N##u.d[b >> 2], (v & 0xffu) << s);   \
    }                                                    \
    void st16_##N(uint b, uint v) {                      \
        if ((b & 1u) != 0u) {                            \
            st8_##N(b, v);                               \
            st8_##N(b + 1u, v >> 8);                     \
            return;                                      \
        }                                                \
        const uint s = (b & 2u) * 8u;                    \
        atomicAnd(b##N##u.d[b >> 2], ~(0xffffu << s));   \
        atomicOr(b##N##u.d[b >> 2], (v & 0xffffu) << s); \
    }

int sext8(uint v) {
    return bitfieldExtract(int(v), 0, 8);
}

// Row r of a tensor with ne1, ne2 and byte strides nb1..nb3 (r counts rows with i1 fastest): its byte offset.
uint row_offset(uint r, uint ne1, uint ne2, uint nb1, uint nb2, uint nb3) {
    const uint i1 = r % ne1;
    const uint i23 = r / ne1;
    return i1 * nb1 + (i23 % ne2) * nb2 + (i23 / ne2) * nb3;
}

// Byte offset of row r of a tensor of push-constants.h.
uint tensor_row(TensorRef t, uint r) {
    return t.offset + row_offset(r, t.ne1, t.ne2, t.nb1, t.nb2, t.nb3);
}

shared float red_sh[64];

// Sum over the workgroup; every invocation gets the result. Call in uniform control flow.
float wg_sum(float v) {
    v = subgroupAdd(v);
    if (gl_NumSubgroups > 1u) {
        barrier();
        if (subgroupElect()) red_sh[gl_SubgroupID] = v;
        barrier();
        v = 0.0;
        for (uint i = 0u; i < gl_NumSubgroups; ++i) v += red_sh[i];
    }
    return v;
}

// wg_sum / wg_max for the row reductions (matmul, matvec, attention, norm): built with ONE_SUBGROUP (the host picks
// that variant when a workgroup is exactly one subgroup) it is a bare subgroupAdd with no barrier, which on lavapipe
// also spares the coroutine that every barrier-carrying shader runs on.
float wg_sum1(float v) {
#ifdef ONE_SUBGROUP
    return subgroupAdd(v);
#else
    return wg_sum(v);
#endif
}

float wg_max(float v) {
    v = subgroupMax(v);
    if (gl_NumSubgroups > 1u) {
        barrier();
        if (subgroupElect()) red_sh[gl_SubgroupID] = v;
        barrier();
        v = red_sh[0];
        for (uint i = 1u; i < gl_NumSubgroups; ++i) v = max(v, red_sh[i]);
    }
    return v;
}

float wg_max1(float v) {
#ifdef ONE_SUBGROUP
    return subgroupMax(v);
#else
    return wg_max(v);
#endif
}

// Type ids (basalt_dtype / GGUF).
#define T_F32 0u
#define T_F16 1u
#define T_Q4_0 2u
#define T_Q4_1 3u
#define T_Q5_0 6u
#define T_Q5_1 7u
#define T_Q8_0 8u
#define T_Q2_K 10u
#define T_Q3_K 11u
#define T_Q4_K 12u
#define T_Q5_K 13u
#define T_Q6_K 14u
#define T_I32 26u
#define T_BF16 30u
#define T_MXFP4 39u
