// The packed Q8_0 / Q4_0 weight and activation layouts (constants only: included by the ISA kernels too).
// Q8_0 group layout (kPackRows rows, nb = K / 32 blocks): nb x 16 F16 scales (block-major, padded to 64 bytes), then
// nb blocks of 512 bytes: 8 chunks of 4 elements, each chunk 16 rows x 4 bytes, every quant stored as q ^ 0x80
// (= q + 128, unsigned). Rows past the matrix's end are zero (scale 0, quants 0x80).
// Q4_0 group layout: the same scale area, then nb blocks of 256 bytes: 4 chunk pairs, pair c holding each row's
// bytes qs[4c .. 4c + 3] (16 rows x 4 bytes) as the file has them, so its low nibbles are elements 4c .. 4c + 3
// (chunk c) and its high nibbles elements 16 + 4c .. 16 + 4c + 3 (chunk c + 4), unsigned 0..15 (the file's value
// + 8). Rows past the matrix's end are zero (scale 0, nibbles 8).
#pragma once

#include <cstdint>

#include "types.hpp"

namespace basalt::cpu {

constexpr int64_t kPackRows = 16;

// Quant bytes of one block of one group: 16 rows x 32 quants (Q8_0) or 16 rows x 16 nibble pairs (Q4_0).
constexpr int64_t kPackedQ8BlockBytes = kPackRows * kQK;
constexpr int64_t kPackedQ4BlockBytes = kPackRows * kQK / 2;

// Bytes of one group's scale area and of one whole group (both multiples of 64); block_bytes is one of the above.
inline int64_t packed_scale_bytes(int64_t nb) noexcept {
    return (nb * kPackRows * 2 + 63) / 64 * 64;
}
inline int64_t packed_group_bytes(int64_t nb, int64_t block_bytes = kPackedQ8BlockBytes) noexcept {
    return packed_scale_bytes(nb) + nb * block_bytes;
}

// Activation row for the packed kernel: the K quants (s8), then per block its scale (F32), then per block and
// 4-quant chunk -128 x the chunk's sum (8 int32 per block), which cancels the +128 bias of the packed weights
// inside the integer dot product.
inline int64_t packed_act_bytes(int64_t k) noexcept {
    return k + (k / kQK) * 4 + (k / kQK) * 32;
}

}  // namespace basalt::cpu
