// 16-bit float formats of GGUF tensors: IEEE binary16 ("f16") and bfloat16 ("bf16"), converted to and from
// float bit-exactly like ggml's reference (fp16: round to nearest even, as the F16C instruction
// _cvtss_sh(x, 0); bf16: round to nearest even, NaN kept quiet, subnormals kept). Pure functions, thread-safe.
#pragma once

#include <bit>
#include <cstdint>

namespace basalt::blocks {

// float -> IEEE half bits. Rounds to nearest, ties to even; overflow gives +-inf; a NaN stays a NaN with its
// quiet bit set and the top 9 payload bits kept (what F16C does).
inline uint16_t fp32_to_fp16(float f) noexcept {
    const uint32_t x = std::bit_cast<uint32_t>(f);
    const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
    const uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) {  // NaN
        return static_cast<uint16_t>(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
    }
    if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 (incl. inf) rounds to inf
    if (ax >= 0x38800000u) {                                              // >= 2^-14: a normal half
        // Round the 23-bit mantissa to 10 bits (a carry moves into the exponent, which is what we want),
        // then rebias the exponent from 127 to 15.
        const uint32_t rounded = ax + 0xfffu + ((ax >> 13) & 1u);
        return static_cast<uint16_t>(sign | ((rounded - (112u << 23)) >> 13));
    }
    // A half subnormal (units of 2^-24) or zero. value = mant * 2^(e - 150), so units = mant >> (126 - e).
    const uint32_t e = ax >> 23;
    if (e < 102) return sign;  // below 2^-25: rounds to zero (also float zeros and subnormals)
    const uint32_t mant = (ax & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e;  // 14..24
    uint32_t units = mant >> shift;
    const uint32_t rest = mant & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (units & 1u) != 0)) ++units;  // may carry into the smallest normal
    return static_cast<uint16_t>(sign | units);
}

// IEEE half bits -> float (exact). A NaN comes back quiet with its payload kept.
inline float fp16_to_fp32(uint16_t h) noexcept {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    const uint32_t mant = h & 0x3ffu;
    if (exp == 0x1f) {
        const uint32_t quiet = mant != 0 ? 0x400000u : 0u;
        return std::bit_cast<float>(sign | 0x7f800000u | quiet | (mant << 13));
    }
    if (exp == 0) {  // zero or subnormal: mant * 2^-24, exact in float
        const float v = static_cast<float>(mant) * 0x1p-24f;
        return sign != 0 ? -v : v;
    }
    return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
}

// float -> bfloat16 bits: the top 16 bits rounded to nearest even (overflow gives inf); a NaN is truncated
// and made quiet. Subnormals are rounded, not flushed (ggml_compute_fp32_to_bf16).
inline uint16_t fp32_to_bf16(float f) noexcept {
    const uint32_t x = std::bit_cast<uint32_t>(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
    return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

// bfloat16 bits -> float (exact).
inline float bf16_to_fp32(uint16_t h) noexcept {
    return std::bit_cast<float>(static_cast<uint32_t>(h) << 16);
}

}  // namespace basalt::blocks
