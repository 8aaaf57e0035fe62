// MXFP4 (GGUF type 39, OCP microscaling FP4) blocks, bit-exact with ggml: 32 weights per 17-byte block, one
// E8M0 exponent byte e and 16 bytes of 4-bit E2M1 codes (element j in the low nibble of byte j, element j + 16
// in the high one). ggml stores the E2M1 values doubled as small integers (kMxfp4Values) and halves the scale
// instead, so value = kMxfp4Values[code] * e8m0_half(e) with e8m0_half(e) = 2^(e - 128). Pure, thread-safe.
#pragma once

#include <bit>
#include <cstdint>

namespace basalt::blocks {

constexpr int kMxfp4Block = 32;       // weights per block
constexpr int kMxfp4BlockBytes = 17;  // 1 exponent byte + 16 bytes of codes

// Twice the E2M1 value of each 4-bit code (codes 8..15 are the negatives of 0..7; code 8 is -0, stored as 0).
inline constexpr int8_t kMxfp4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// Half the E8M0 scale: 2^(e - 128) as a float, e = 0 and 1 as the subnormals 2^-128 and 2^-127 (ggml's
// ggml_e8m0_to_fp32_half; e = 255 gives 2^127, not NaN, as ggml).
constexpr float e8m0_half(uint8_t e) noexcept {
    return std::bit_cast<float>(e < 2 ? 0x00200000u << e : static_cast<uint32_t>(e - 1) << 23);
}

// Dequantizes nb blocks at src (any alignment) into dst[0 .. 32 nb), as ggml's dequantize_row_mxfp4.
void mxfp4_dequantize(const uint8_t* src, float* dst, int64_t nb) noexcept;

// Quantizes 32 nb floats into nb blocks at dst (any alignment), byte for byte ggml's quantize_row_mxfp4_ref:
// e = floor(log2(amax)) - 2 + 127 (0 for an all-zero block), each value the code of the nearest
// kMxfp4Values[i] * e8m0_half(e) (the first code on ties). Finite inputs expected (NaN/inf: unspecified bytes).
void mxfp4_quantize(const float* src, uint8_t* dst, int64_t nb) noexcept;

}  // namespace basalt::blocks
