// Portable kernels: the reference every SIMD table is tested against. Integer products within a block,
// F32 across blocks.
#include <cstring>

#include "kernels.hpp"

namespace basalt::cpu {
namespace {

float h2f(uint16_t h) {
    return fp16_to_fp32(h);
}

float dot_f32_f32(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const float*>(w);
    const auto* y = static_cast<const float*>(a);
    // Four partial sums let the compiler vectorise without -ffast-math.
    float s[4] = {0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        for (int j = 0; j < 4; ++j) s[j] += x[i + j] * y[i + j];
    }
    for (; i < n; ++i) s[0] += x[i] * y[i];
    return (s[0] + s[1]) + (s[2] + s[3]);
}

float dot_f16_f16(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const uint16_t*>(w);
    const auto* y = static_cast<const uint16_t*>(a);
    float s = 0;
    for (int64_t i = 0; i < n; ++i) s += h2f(x[i]) * h2f(y[i]);
    return s;
}

float dot_bf16_f32(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const uint16_t*>(w);
    const auto* y = static_cast<const float*>(a);
    float s = 0;
    for (int64_t i = 0; i < n; ++i) s += bf16_to_fp32(x[i]) * y[i];
    return s;
}

float dot_q4_0(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ4_0*>(w);
    const auto* y = static_cast<const BlockQ8_0*>(a);
    float s = 0;
    for (int64_t b = 0; b < n / kQK; ++b) {
        int sum = 0;
        for (int j = 0; j < 16; ++j) {
            sum += ((x[b].qs[j] & 0x0f) - 8) * y[b].qs[j] + ((x[b].qs[j] >> 4) - 8) * y[b].qs[j + 16];
        }
        s += static_cast<float>(sum) * (h2f(x[b].d) * h2f(y[b].d));
    }
    return s;
}

float dot_q4_1(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ4_1*>(w);
    const auto* y = static_cast<const BlockQ8_1*>(a);
    float s = 0;
    for (int64_t b = 0; b < n / kQK; ++b) {
        int sum = 0;
        for (int j = 0; j < 16; ++j) sum += (x[b].qs[j] & 0x0f) * y[b].qs[j] + (x[b].qs[j] >> 4) * y[b].qs[j + 16];
        s += static_cast<float>(sum) * (h2f(x[b].d) * h2f(y[b].d)) + h2f(x[b].m) * h2f(y[b].s);
    }
    return s;
}

// ggml's vec_dot_mxfp4_q8_0: per block the integer dot of the doubled E2M1 values with the Q8_0 quants, scaled
// by the activation's scale times half the E8M0 scale (the halving undoes the doubling).
float dot_mxfp4(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockMXFP4*>(w);
    const auto* y = static_cast<const BlockQ8_0*>(a);
    float s = 0;
    for (int64_t b = 0; b < n / kQK; ++b) {
        int sum = 0;
        for (int j = 0; j < 16; ++j) {
            sum += kMxfp4Values[x[b].qs[j] & 0x0f] * y[b].qs[j] + kMxfp4Values[x[b].qs[j] >> 4] * y[b].qs[j + 16];
        }
        s += static_cast<float>(sum) * (e8m0_half(x[b].e) * h2f(y[b].d));
    }
    return s;
}

uint32_t load_u32(const uint8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

float dot_q5_0(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ5_0*>(w);
    const auto* y = static_cast<const BlockQ8_0*>(a);
    float s = 0;
    for (int64_t b = 0; b < n / kQK; ++b) {
        const uint32_t qh = load_u32(x[b].qh);
        int sum = 0;
        for (int j = 0; j < 16; ++j) {
            const int x0 = static_cast<int>((x[b].qs[j] & 0x0fu) | (((qh >> j) & 1u) << 4)) - 16;
            const int x1 = static_cast<int>((x[b].qs[j] >> 4) | (((qh >> (j + 16)) & 1u) << 4)) - 16;
            sum += x0 * y[b].qs[j] + x1 * y[b].qs[j + 16];
        }
        s += static_cast<float>(sum) * (h2f(x[b].d) * h2f(y[b].d));
    }
    return s;
}

float dot_q5_1(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ5_1*>(w);
    const auto* y = static_cast<const BlockQ8_1*>(a);
    float s = 0;
    for (int64_t b = 0; b < n / kQK; ++b) {
        const uint32_t qh = load_u32(x[b].qh);
        int sum = 0;
        for (int j = 0; j < 16; ++j) {
            const int x0 = static_cast<int>((x[b].qs[j] & 0x0fu) | (((qh >> j) & 1u) << 4));
            const int x1 = static_cast<int>((x[b].qs[j] >> 4) | (((qh >> (j + 16)) & 1u) << 4));
            sum += x0 * y[b].qs[j] + x1 * y[b].qs[j + 16];
        }
        s += static_cast<float>(sum) * (h2f(x[b].d) * h2f(y[b].d)) + h2f(x[b].m) * h2f(y[b].s);
    }
    return s;
}

float dot_q8_0(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ8_0*>(w);
    const auto* y = static_cast<const BlockQ8_0*>(a);
    float s = 0;
    for (int64_t b = 0; b < n / kQK; ++b) {
        int sum = 0;
        for (int j = 0; j < 32; ++j) sum += x[b].qs[j] * y[b].qs[j];
        s += static_cast<float>(sum) * (h2f(x[b].d) * h2f(y[b].d));
    }
    return s;
}

// q2_K: scale index is = 8*half + 2*(shift/2) + part covers elements 16*is.. of 2-bit values.
float dot_q2_k(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ2_K*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(a);
    float s = 0;
    for (int64_t b = 0; b < n / kQKK; ++b) {
        const int8_t* q8 = y[b].qs;
        int sum_q = 0;
        int sum_m = 0;
        int is = 0;
        for (int half = 0; half < 2; ++half) {
            const uint8_t* q2 = x[b].qs + 32 * half;
            for (int shift = 0; shift < 8; shift += 2) {
                for (int part = 0; part < 2; ++part, ++is, q8 += 16) {
                    int si = 0;
                    for (int l = 0; l < 16; ++l) si += ((q2[16 * part + l] >> shift) & 3) * q8[l];
                    sum_q += (x[b].scales[is] & 0x0f) * si;
                    sum_m += (x[b].scales[is] >> 4) * y[b].bsums[is];
                }
            }
        }
        s += y[b].d * (h2f(x[b].d) * static_cast<float>(sum_q) - h2f(x[b].dmin) * static_cast<float>(sum_m));
    }
    return s;
}

float dot_q3_k(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ3_K*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(a);
    float s = 0;
    for (int64_t b = 0; b < n / kQKK; ++b) {
        const uint8_t* sb = x[b].scales;
        int scales[16];
        for (int i = 0; i < 16; ++i) {
            const int lo = i < 8 ? (sb[i] & 0x0f) : (sb[i - 8] >> 4);
            const int hi = (sb[8 + i % 4] >> (2 * (i / 4))) & 3;
            scales[i] = (lo | (hi << 4)) - 32;
        }
        const int8_t* q8 = y[b].qs;
        int sum = 0;
        int is = 0;
        unsigned m = 1;
        for (int half = 0; half < 2; ++half) {
            const uint8_t* q3 = x[b].qs + 32 * half;
            for (int shift = 0; shift < 8; shift += 2, m <<= 1) {
                for (int part = 0; part < 2; ++part, ++is, q8 += 16) {
                    int si = 0;
                    for (int l = 0; l < 16; ++l) {
                        const int v = ((q3[16 * part + l] >> shift) & 3) - ((x[b].hmask[16 * part + l] & m) ? 0 : 4);
                        si += v * q8[l];
                    }
                    sum += scales[is] * si;
                }
            }
        }
        s += y[b].d * h2f(x[b].d) * static_cast<float>(sum);
    }
    return s;
}

// The 6-bit scale and min of sub-block j (0..7) of q4_K / q5_K.
void scale_min_k4(int j, const uint8_t* q, int& sc, int& m) {
    if (j < 4) {
        sc = q[j] & 63;
        m = q[j + 4] & 63;
    } else {
        sc = (q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4);
        m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

float dot_q4_k(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ4_K*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(a);
    float s = 0;
    for (int64_t b = 0; b < n / kQKK; ++b) {
        int sum_q = 0;
        int sum_m = 0;
        for (int j = 0; j < 8; ++j) {
            int sc = 0;
            int m = 0;
            scale_min_k4(j, x[b].scales, sc, m);
            const uint8_t* q4 = x[b].qs + 32 * (j / 2);
            const int8_t* q8 = y[b].qs + 32 * j;
            const int shift = 4 * (j % 2);
            int si = 0;
            for (int l = 0; l < 32; ++l) si += ((q4[l] >> shift) & 0x0f) * q8[l];
            sum_q += sc * si;
            sum_m += m * (y[b].bsums[2 * j] + y[b].bsums[2 * j + 1]);
        }
        s += y[b].d * (h2f(x[b].d) * static_cast<float>(sum_q) - h2f(x[b].dmin) * static_cast<float>(sum_m));
    }
    return s;
}

float dot_q5_k(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ5_K*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(a);
    float s = 0;
    for (int64_t b = 0; b < n / kQKK; ++b) {
        int sum_q = 0;
        int sum_m = 0;
        for (int j = 0; j < 8; ++j) {
            int sc = 0;
            int m = 0;
            scale_min_k4(j, x[b].scales, sc, m);
            const uint8_t* q5 = x[b].qs + 32 * (j / 2);
            const int8_t* q8 = y[b].qs + 32 * j;
            const int shift = 4 * (j % 2);
            int si = 0;
            for (int l = 0; l < 32; ++l) {
                const int v = ((q5[l] >> shift) & 0x0f) | (((x[b].qh[l] >> j) & 1) << 4);
                si += v * q8[l];
            }
            sum_q += sc * si;
            sum_m += m * (y[b].bsums[2 * j] + y[b].bsums[2 * j + 1]);
        }
        s += y[b].d * (h2f(x[b].d) * static_cast<float>(sum_q) - h2f(x[b].dmin) * static_cast<float>(sum_m));
    }
    return s;
}

// q6_K: element 128*h + 32*k + l (k = 0..3) has scale index 8*h + 2*k + l/16, which is also its bsums index.
float dot_q6_k(int64_t n, const void* w, const void* a) {
    const auto* x = static_cast<const BlockQ6_K*>(w);
    const auto* y = static_cast<const BlockQ8_K*>(a);
    float s = 0;
    for (int64_t b = 0; b < n / kQKK; ++b) {
        int sum = 0;
        for (int h = 0; h < 2; ++h) {
            const uint8_t* ql = x[b].ql + 64 * h;
            const uint8_t* qh = x[b].qh + 32 * h;
            const int8_t* q8 = y[b].qs + 128 * h;
            for (int k = 0; k < 4; ++k) {
                const uint8_t* lo = ql + 32 * (k % 2);
                const int lshift = 4 * (k / 2);
                for (int half16 = 0; half16 < 2; ++half16) {
                    int si = 0;
                    for (int l = 16 * half16; l < 16 * half16 + 16; ++l) {
                        const int v = (((lo[l] >> lshift) & 0x0f) | (((qh[l] >> (2 * k)) & 3) << 4)) - 32;
                        si += v * q8[32 * k + l];
                    }
                    sum += x[b].scales[8 * h + 2 * k + half16] * si;
                }
            }
        }
        s += y[b].d * h2f(x[b].d) * static_cast<float>(sum);
    }
    return s;
}

float att_dot_f32(int64_t n, const float* a, const float* b) {
    return dot_f32_f32(n, a, b);
}

float att_dot_f16(int64_t n, const float* a, const uint16_t* b) {
    float s = 0;
    for (int64_t i = 0; i < n; ++i) s += a[i] * h2f(b[i]);
    return s;
}

void axpy_f32(int64_t n, float a, const float* x, float* y) {
    for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

void round_f16(int64_t n, const float* x, float* y) {
    for (int64_t i = 0; i < n; ++i) y[i] = fp16_to_fp32(fp32_to_fp16(x[i]));
}

void axpy_f16(int64_t n, float a, const uint16_t* x, float* y) {
    for (int64_t i = 0; i < n; ++i) y[i] += a * h2f(x[i]);
}

float silu_f32(float x) {
    return x / (1.0f + std::exp(-x));
}

void silu_row(int64_t n, const float* x, float* y) {
    for (int64_t i = 0; i < n; ++i) y[i] = silu_f32(x[i]);
}

void swiglu_row(int64_t n, const float* g, const float* u, float* y) {
    for (int64_t i = 0; i < n; ++i) y[i] = silu_f32(g[i]) * u[i];
}

void add_row(int64_t n, const float* a, const float* b, float* y) {
    for (int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

void mul_row(int64_t n, const float* a, const float* b, float* y) {
    for (int64_t i = 0; i < n; ++i) y[i] = a[i] * b[i];
}

void to_f16_row(int64_t n, const float* x, uint16_t* y) {
    for (int64_t i = 0; i < n; ++i) y[i] = fp32_to_fp16(x[i]);
}

}  // namespace

void init_kernels_scalar(Kernels& k) {
    k = Kernels{};
    k.isa = "scalar";
    k.vec_dot[BASALT_DTYPE_F32] = dot_f32_f32;
    k.vec_dot[BASALT_DTYPE_F16] = dot_f16_f16;
    k.vec_dot[BASALT_DTYPE_BF16] = dot_bf16_f32;
    k.vec_dot[BASALT_DTYPE_Q4_0] = dot_q4_0;
    k.vec_dot[BASALT_DTYPE_Q4_1] = dot_q4_1;
    k.vec_dot[BASALT_DTYPE_Q5_0] = dot_q5_0;
    k.vec_dot[BASALT_DTYPE_Q5_1] = dot_q5_1;
    k.vec_dot[BASALT_DTYPE_Q8_0] = dot_q8_0;
    k.vec_dot[BASALT_DTYPE_Q2_K] = dot_q2_k;
    k.vec_dot[BASALT_DTYPE_Q3_K] = dot_q3_k;
    k.vec_dot[BASALT_DTYPE_Q4_K] = dot_q4_k;
    k.vec_dot[BASALT_DTYPE_Q5_K] = dot_q5_k;
    k.vec_dot[BASALT_DTYPE_Q6_K] = dot_q6_k;
    k.vec_dot[BASALT_DTYPE_MXFP4] = dot_mxfp4;
    k.dot_f32 = att_dot_f32;
    k.dot_f16 = att_dot_f16;
    k.axpy_f32 = axpy_f32;
    k.axpy_f16 = axpy_f16;
    k.round_f16 = round_f16;
    k.silu = silu_row;
    k.swiglu = swiglu_row;
    k.add_f32 = add_row;
    k.mul_f32 = mul_row;
    k.to_f16 = to_f16_row;
}

}  // namespace basalt::cpu
