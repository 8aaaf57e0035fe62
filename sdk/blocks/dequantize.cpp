#include <basalt/blocks/dequantize.hpp>

#include <bit>
#include <cstring>
#include <string>

#include <basalt/blocks/dtype.hpp>
#include <basalt/blocks/error.hpp>
#include <basalt/blocks/half.hpp>
#include <basalt/blocks/mxfp4.hpp>

// ggml's reference is compiled without fused multiply-add; forbid contracting a*b+c here too, whatever -march
// the build uses (GCC contracts by default even in ISO C++ mode when the target has FMA).
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

// Block layouts (GGUF specification / ggml's block_* structs), read byte by byte so that any source alignment
// works. Every formula keeps ggml's order of float operations, which makes the results bit-identical.
namespace basalt::blocks {
namespace {

float f16_at(const uint8_t* p) {
    return fp16_to_fp32(static_cast<uint16_t>(p[0] | (p[1] << 8)));
}

uint32_t u32_at(const uint8_t* p) {
    return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
           (static_cast<uint32_t>(p[3]) << 24);
}

int8_t i8_at(const uint8_t* p) {
    return static_cast<int8_t>(*p);
}

void deq_f32(const uint8_t* x, float* y, int64_t n) {
    if (n > 0) std::memcpy(y, x, static_cast<size_t>(n) * sizeof(float));
}

void deq_f16(const uint8_t* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = f16_at(x + 2 * i);
}

void deq_bf16(const uint8_t* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = bf16_to_fp32(static_cast<uint16_t>(x[2 * i] | (x[2 * i + 1] << 8)));
}

// q4_0 (18 bytes / 32): f16 d, 16 bytes of nibbles; element j in the low nibble of qs[j], j+16 in the high one.
void deq_q4_0(const uint8_t* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, x += 18, y += 32) {
        const float d = f16_at(x);
        const uint8_t* qs = x + 2;
        for (int j = 0; j < 16; ++j) {
            y[j] = static_cast<float>((qs[j] & 0x0f) - 8) * d;
            y[j + 16] = static_cast<float>((qs[j] >> 4) - 8) * d;
        }
    }
}

// q4_1 (20 bytes / 32): f16 d, f16 m, nibbles as q4_0; value = q*d + m.
void deq_q4_1(const uint8_t* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, x += 20, y += 32) {
        const float d = f16_at(x);
        const float m = f16_at(x + 2);
        const uint8_t* qs = x + 4;
        for (int j = 0; j < 16; ++j) {
            y[j] = static_cast<float>(qs[j] & 0x0f) * d + m;
            y[j + 16] = static_cast<float>(qs[j] >> 4) * d + m;
        }
    }
}

// The fifth bits of q5_0/q5_1: bit j of the 32-bit little-endian qh belongs to element j.
int fifth_bit(uint32_t qh, int j) {
    return static_cast<int>((qh >> j) & 1u) << 4;
}

// q5_0 (22 bytes / 32): f16 d, u32 qh, 16 bytes of nibbles; value = (q - 16) * d.
void deq_q5_0(const uint8_t* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, x += 22, y += 32) {
        const float d = f16_at(x);
        const uint32_t qh = u32_at(x + 2);
        const uint8_t* qs = x + 6;
        for (int j = 0; j < 16; ++j) {
            y[j] = static_cast<float>(((qs[j] & 0x0f) | fifth_bit(qh, j)) - 16) * d;
            y[j + 16] = static_cast<float>(((qs[j] >> 4) | fifth_bit(qh, j + 16)) - 16) * d;
        }
    }
}

// q5_1 (24 bytes / 32): f16 d, f16 m, u32 qh, nibbles; value = q*d + m.
void deq_q5_1(const uint8_t* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, x += 24, y += 32) {
        const float d = f16_at(x);
        const float m = f16_at(x + 2);
        const uint32_t qh = u32_at(x + 4);
        const uint8_t* qs = x + 8;
        for (int j = 0; j < 16; ++j) {
            y[j] = static_cast<float>((qs[j] & 0x0f) | fifth_bit(qh, j)) * d + m;
            y[j + 16] = static_cast<float>((qs[j] >> 4) | fifth_bit(qh, j + 16)) * d + m;
        }
    }
}

// q8_0 (34 bytes / 32): f16 d, 32 x int8. q8_1 (36 bytes): f16 d, f16 s (= d * sum q, unused here), 32 x int8.
void deq_q8(const uint8_t* x, float* y, int64_t nb, int block_bytes, int qs_offset) {
    for (int64_t i = 0; i < nb; ++i, x += block_bytes, y += 32) {
        const float d = f16_at(x);
        for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(i8_at(x + qs_offset + j)) * d;
    }
}

// q2_K (84 bytes / 256): scales[16] (low nibble scale, high nibble min, per 16 elements), qs[64] (2-bit
// quants), f16 d, f16 dmin. Each half of 128 elements uses 32 bytes of qs; bit pair `shift` of qs[l] / qs[l+16]
// holds consecutive groups of 16.
void deq_q2_k(const uint8_t* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, x += 84) {
        const uint8_t* scales = x;
        const uint8_t* q = x + 16;
        const float d = f16_at(x + 80);
        const float dmin = f16_at(x + 82);
        int is = 0;
        for (int half = 0; half < 2; ++half, q += 32) {
            for (int shift = 0; shift < 8; shift += 2) {
                for (int part = 0; part < 2; ++part) {
                    const uint8_t sc = scales[is++];
                    const float dl = d * static_cast<float>(sc & 0x0f);
                    const float ml = dmin * static_cast<float>(sc >> 4);
                    const uint8_t* qp = q + 16 * part;
                    for (int l = 0; l < 16; ++l) *y++ = dl * static_cast<float>((qp[l] >> shift) & 3) - ml;
                }
            }
        }
    }
}

// q3_K (110 bytes / 256): hmask[32] (high bits), qs[64] (low 2 bits, laid out as q2_K), scales[12] (16 6-bit
// signed scales, offset 32), f16 d. Scale s: low 4 bits in nibble s/8 of byte s%8, high 2 bits in bits
// 2*(s/4) of byte 8 + s%4. A clear high bit subtracts 4.
void deq_q3_k(const uint8_t* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, x += 110) {
        const uint8_t* hm = x;
        const uint8_t* q = x + 32;
        const uint8_t* sb = x + 96;
        const float d_all = f16_at(x + 108);
        int scales[16];
        for (int s = 0; s < 16; ++s) {
            const int lo = s < 8 ? (sb[s] & 0x0f) : (sb[s - 8] >> 4);
            const int hi = (sb[8 + s % 4] >> (2 * (s / 4))) & 3;
            scales[s] = (lo | (hi << 4)) - 32;
        }
        int is = 0;
        unsigned m = 1;
        for (int half = 0; half < 2; ++half, q += 32) {
            for (int shift = 0; shift < 8; shift += 2, m <<= 1) {
                for (int part = 0; part < 2; ++part) {
                    const float dl = d_all * static_cast<float>(scales[is++]);
                    const uint8_t* qp = q + 16 * part;
                    const uint8_t* hp = hm + 16 * part;
                    for (int l = 0; l < 16; ++l) {
                        const int v = ((qp[l] >> shift) & 3) - ((hp[l] & m) != 0 ? 0 : 4);
                        *y++ = dl * static_cast<float>(v);
                    }
                }
            }
        }
    }
}

// The 6-bit scale and min j (0..7) of q4_K / q5_K, packed into 12 bytes (ggml's get_scale_min_k4).
void scale_min_k4(int j, const uint8_t* q, int* sc, int* m) {
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4);
        *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

// q4_K (144 bytes / 256): f16 d, f16 dmin, scales[12], qs[128]. Each 64 elements use 32 bytes: low nibbles
// the first 32 (scale 2k), high nibbles the next 32 (scale 2k+1); value = d*sc*q - dmin*m.
void deq_q4_k(const uint8_t* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, x += 144) {
        const float d = f16_at(x);
        const float dmin = f16_at(x + 2);
        const uint8_t* scales = x + 4;
        const uint8_t* q = x + 16;
        for (int is = 0; is < 8; is += 2, q += 32) {
            int sc = 0;
            int m = 0;
            scale_min_k4(is, scales, &sc, &m);
            const float d1 = d * static_cast<float>(sc);
            const float m1 = dmin * static_cast<float>(m);
            scale_min_k4(is + 1, scales, &sc, &m);
            const float d2 = d * static_cast<float>(sc);
            const float m2 = dmin * static_cast<float>(m);
            for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0x0f) - m1;
            for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
        }
    }
}

// q5_K (176 bytes / 256): f16 d, f16 dmin, scales[12], qh[32], qs[128]; as q4_K plus a fifth bit: group g
// (of 32 elements) takes bit g of qh[l].
void deq_q5_k(const uint8_t* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, x += 176) {
        const float d = f16_at(x);
        const float dmin = f16_at(x + 2);
        const uint8_t* scales = x + 4;
        const uint8_t* qh = x + 16;
        const uint8_t* ql = x + 48;
        unsigned u1 = 1;
        unsigned u2 = 2;
        for (int is = 0; is < 8; is += 2, ql += 32, u1 <<= 2, u2 <<= 2) {
            int sc = 0;
            int m = 0;
            scale_min_k4(is, scales, &sc, &m);
            const float d1 = d * static_cast<float>(sc);
            const float m1 = dmin * static_cast<float>(m);
            scale_min_k4(is + 1, scales, &sc, &m);
            const float d2 = d * static_cast<float>(sc);
            const float m2 = dmin * static_cast<float>(m);
            for (int l = 0; l < 32; ++l) {
                *y++ = d1 * static_cast<float>((ql[l] & 0x0f) + ((qh[l] & u1) != 0 ? 16 : 0)) - m1;
            }
            for (int l = 0; l < 32; ++l) {
                *y++ = d2 * static_cast<float>((ql[l] >> 4) + ((qh[l] & u2) != 0 ? 16 : 0)) - m2;
            }
        }
    }
}

// q6_K (210 bytes / 256): ql[128] (low 4 bits), qh[64] (high 2 bits), int8 scales[16], f16 d. Per half of 128:
// element l + 32*k (k = 0..3) has its low bits in nibble k/2 of ql[l + 32*(k%2)] and its high bits in bits 2k
// of qh[l]; value = d * scale * (q - 32).
void deq_q6_k(const uint8_t* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, x += 210) {
        const float d = f16_at(x + 208);
        const uint8_t* ql = x;
        const uint8_t* qh = x + 128;
        const uint8_t* sc = x + 192;
        for (int half = 0; half < 2; ++half, y += 128, ql += 64, qh += 32, sc += 8) {
            for (int l = 0; l < 32; ++l) {
                const int is = l / 16;
                const int q1 = ((ql[l] & 0x0f) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int q2 = ((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                y[l] = d * static_cast<float>(i8_at(sc + is)) * static_cast<float>(q1);
                y[l + 32] = d * static_cast<float>(i8_at(sc + is + 2)) * static_cast<float>(q2);
                y[l + 64] = d * static_cast<float>(i8_at(sc + is + 4)) * static_cast<float>(q3);
                y[l + 96] = d * static_cast<float>(i8_at(sc + is + 6)) * static_cast<float>(q4);
            }
        }
    }
}

// q8_K (292 bytes / 256): f32 d, 256 x int8, 16 x int16 block sums (unused here).
void deq_q8_k(const uint8_t* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, x += 292, y += 256) {
        const float d = std::bit_cast<float>(u32_at(x));
        for (int j = 0; j < 256; ++j) y[j] = d * static_cast<float>(i8_at(x + 4 + j));
    }
}

}  // namespace

bool can_dequantize(basalt_dtype type) noexcept {
    switch (type) {
        case BASALT_DTYPE_F32:
        case BASALT_DTYPE_F16:
        case BASALT_DTYPE_BF16:
        case BASALT_DTYPE_Q4_0:
        case BASALT_DTYPE_Q4_1:
        case BASALT_DTYPE_Q5_0:
        case BASALT_DTYPE_Q5_1:
        case BASALT_DTYPE_Q8_0:
        case BASALT_DTYPE_Q8_1:
        case BASALT_DTYPE_Q2_K:
        case BASALT_DTYPE_Q3_K:
        case BASALT_DTYPE_Q4_K:
        case BASALT_DTYPE_Q5_K:
        case BASALT_DTYPE_Q6_K:
        case BASALT_DTYPE_Q8_K:
        case BASALT_DTYPE_MXFP4:
            return true;
        default:
            return false;
    }
}

void dequantize_row(basalt_dtype type, const void* src, float* dst, int64_t n) {
    const int64_t bs = check_row("dequantize", can_dequantize(type), type, n);
    const auto* x = static_cast<const uint8_t*>(src);
    const int64_t nb = n / bs;
    switch (type) {
        case BASALT_DTYPE_F32:
            return deq_f32(x, dst, n);
        case BASALT_DTYPE_F16:
            return deq_f16(x, dst, n);
        case BASALT_DTYPE_BF16:
            return deq_bf16(x, dst, n);
        case BASALT_DTYPE_Q4_0:
            return deq_q4_0(x, dst, nb);
        case BASALT_DTYPE_Q4_1:
            return deq_q4_1(x, dst, nb);
        case BASALT_DTYPE_Q5_0:
            return deq_q5_0(x, dst, nb);
        case BASALT_DTYPE_Q5_1:
            return deq_q5_1(x, dst, nb);
        case BASALT_DTYPE_Q8_0:
            return deq_q8(x, dst, nb, 34, 2);
        case BASALT_DTYPE_Q8_1:
            return deq_q8(x, dst, nb, 36, 4);
        case BASALT_DTYPE_Q2_K:
            return deq_q2_k(x, dst, nb);
        case BASALT_DTYPE_Q3_K:
            return deq_q3_k(x, dst, nb);
        case BASALT_DTYPE_Q4_K:
            return deq_q4_k(x, dst, nb);
        case BASALT_DTYPE_Q5_K:
            return deq_q5_k(x, dst, nb);
        case BASALT_DTYPE_Q6_K:
            return deq_q6_k(x, dst, nb);
        case BASALT_DTYPE_Q8_K:
            return deq_q8_k(x, dst, nb);
        case BASALT_DTYPE_MXFP4:
            return mxfp4_dequantize(x, dst, nb);
        default:
            break;
    }
}

}  // namespace basalt::blocks
