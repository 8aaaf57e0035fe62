// The packed Q8_0 / Q4_0 / MXFP4 weight and activation layouts (constants only: included by the ISA kernels too).
// Group layout (kPackRows rows, nb = K / 32 blocks): nb x 16 F16 scales (block-major, padded to 64 bytes), then
// nb blocks of 512 bytes: 8 chunks of 4 elements, each chunk 16 rows x 4 bytes, every quant stored as q ^ 0x80
// (= q + 128, unsigned). Rows past the matrix's end are zero (scale 0, quants 0x80).
#pragma once

#include <cstdint>

#include "types.hpp"

namespace basalt::cpu {

constexpr int64_t kPackRows = 16;

// Bytes of one group's scale area and of one whole group (both multiples of 64).
inline int64_t packed_scale_bytes(int64_t nb) noexcept {
    return (nb * kPackRows * 2 + 63) / 64 * 64;
}
inline int64_t packed_group_bytes(int64_t nb) noexcept {
    return packed_scale_bytes(nb) + nb * kPackRows * kQK;
}

// Packed Q4_0 groups: the same scale area, then nb blocks of 256 bytes (as a Q4_0 row, 4 bits a weight): 4 chunk
// pairs of 64 bytes, byte i of pair p holding row i / 4's element 8p + i % 4 (chunk 2p) in its low nibble and
// element 8p + 4 + i % 4 (chunk 2p + 1) in its high nibble, each as the Q4_0 code x (0..15, meaning x - 8). The
// kernel turns a pair into two Q8_0 chunks (x + 120 = (x - 8) + 128, the same bias). Rows past the end: scale 0,
// codes 8.
inline int64_t packed_q4_0_group_bytes(int64_t nb) noexcept {
    return packed_scale_bytes(nb) + nb * kPackRows * kQK / 2;
}

// Packed MXFP4 groups: nb x 16 scale bytes (block-major, padded to 64), row r's byte of block b being its E8M0
// exponent minus 128 as s8 (e ^ 0x80: the power of two of e8m0_half(e), which the kernel applies with one scalef),
// then the codes as in a Q4_0 group (E2M1 codes 0..15; the kernel looks up the doubled values + 128, Q8_0's bias).
// Rows past the end: byte 0 (scale 1), codes 0 (value 0).
inline int64_t packed_mxfp4_scale_bytes(int64_t nb) noexcept {
    return (nb * kPackRows + 63) / 64 * 64;
}
inline int64_t packed_mxfp4_group_bytes(int64_t nb) noexcept {
    return packed_mxfp4_scale_bytes(nb) + nb * kPackRows * kQK / 2;
}

// Activation row for the packed kernel: the K quants (s8), then per block its scale (F32), then per block and
// 4-quant chunk -128 x the chunk's sum (8 int32 per block), which cancels the +128 bias of the packed weights
// inside the integer dot product.
inline int64_t packed_act_bytes(int64_t k) noexcept {
    return k + (k / kQK) * 4 + (k / kQK) * 32;
}

}  // namespace basalt::cpu
