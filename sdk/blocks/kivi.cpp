#include <basalt/blocks/kivi.hpp>

#include <cmath>
#include <cstring>

#include <basalt/blocks/half.hpp>

namespace basalt::blocks {
namespace {

uint16_t to_f16(float f) noexcept {
    return fp32_to_fp16(f);
}

float from_f16(uint16_t h) noexcept {
    return fp16_to_fp32(h);
}

uint16_t u16_at(const uint8_t* p) noexcept {
    return static_cast<uint16_t>(p[0] | (p[1] << 8));
}

}  // namespace

int kivi_bits(basalt_dtype type) noexcept {
    switch (type) {
        case BASALT_DTYPE_KIVI_T8:
        case BASALT_DTYPE_KIVI_C8:
            return 8;
        case BASALT_DTYPE_KIVI_T4:
        case BASALT_DTYPE_KIVI_C4:
            return 4;
        case BASALT_DTYPE_KIVI_T2:
        case BASALT_DTYPE_KIVI_C2:
            return 2;
        default:
            return 0;
    }
}

bool kivi_per_channel(basalt_dtype type) noexcept {
    return type == BASALT_DTYPE_KIVI_C8 || type == BASALT_DTYPE_KIVI_C4 || type == BASALT_DTYPE_KIVI_C2;
}

void kivi_encode(const float* x, ptrdiff_t stride, int bits, uint8_t* out) noexcept {
    float lo = x[0], hi = x[0];
    for (int i = 1; i < 32; ++i) {
        const float v = x[i * stride];
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    const int levels = (1 << bits) - 1;
    const uint16_t m16 = to_f16(lo);
    const float m = from_f16(m16);
    // The scale covers [m, hi] after m's rounding; rounded up in f16 so the top code still reaches hi.
    uint16_t d16 = to_f16((hi - m) / static_cast<float>(levels));
    float d = from_f16(d16);
    if (d * static_cast<float>(levels) + m < hi && std::isfinite(d)) {
        d16 = static_cast<uint16_t>(d16 + 1);
        d = from_f16(d16);
    }
    out[0] = static_cast<uint8_t>(d16 & 0xff);
    out[1] = static_cast<uint8_t>(d16 >> 8);
    out[2] = static_cast<uint8_t>(m16 & 0xff);
    out[3] = static_cast<uint8_t>(m16 >> 8);
    uint8_t* qs = out + 4;
    std::memset(qs, 0, static_cast<size_t>(4 * bits));
    const float id = d > 0.0f ? 1.0f / d : 0.0f;
    const int per_byte = 8 / bits;
    for (int i = 0; i < 32; ++i) {
        int q = static_cast<int>(std::nearbyint((x[i * stride] - m) * id));
        q = q < 0 ? 0 : q > levels ? levels : q;
        qs[i / per_byte] = static_cast<uint8_t>(qs[i / per_byte] | (q << (bits * (i % per_byte))));
    }
}

float kivi_decode(const uint8_t* chunk, int bits, int i) noexcept {
    const int per_byte = 8 / bits;
    const int q = (chunk[4 + i / per_byte] >> (bits * (i % per_byte))) & ((1 << bits) - 1);
    return from_f16(u16_at(chunk + 2)) + from_f16(u16_at(chunk)) * static_cast<float>(q);
}

void kivi_decode_all(const uint8_t* chunk, int bits, float* y, ptrdiff_t stride) noexcept {
    const float d = from_f16(u16_at(chunk));
    const float m = from_f16(u16_at(chunk + 2));
    const int per_byte = 8 / bits;
    const int mask = (1 << bits) - 1;
    for (int i = 0; i < 32; ++i) {
        const int q = (chunk[4 + i / per_byte] >> (bits * (i % per_byte))) & mask;
        y[i * stride] = m + d * static_cast<float>(q);
    }
}

void kivi_quantize_row(basalt_dtype type, const float* x, void* row, int64_t n) noexcept {
    const int bits = kivi_bits(type);
    auto* out = static_cast<uint8_t*>(row);
    for (int64_t b = 0; b < n / 32; ++b) kivi_encode(x + 32 * b, 1, bits, out + b * kivi_chunk_bytes(bits));
}

void kivi_dequantize_row(basalt_dtype type, const void* row, float* y, int64_t n) noexcept {
    const int bits = kivi_bits(type);
    const auto* in = static_cast<const uint8_t*>(row);
    for (int64_t b = 0; b < n / 32; ++b) kivi_decode_all(in + b * kivi_chunk_bytes(bits), bits, y + 32 * b, 1);
}

void kivi_quantize_group(basalt_dtype type, const float* x, ptrdiff_t x_stride, void* group, int64_t n) noexcept {
    const int bits = kivi_bits(type);
    auto* out = static_cast<uint8_t*>(group);
    for (int64_t c = 0; c < n; ++c) kivi_encode(x + c, x_stride, bits, out + c * kivi_chunk_bytes(bits));
}

void kivi_dequantize_group_row(basalt_dtype type, const void* group, int r, int64_t c0, float* y, int64_t n) noexcept {
    const int bits = kivi_bits(type);
    const auto* in = static_cast<const uint8_t*>(group);
    const size_t cb = kivi_chunk_bytes(bits);
    for (int64_t c = 0; c < n; ++c) y[c] = kivi_decode(in + static_cast<size_t>(c0 + c) * cb, bits, r);
}

}  // namespace basalt::blocks
