// KIVI-style asymmetric quantization of the KV cache (Liu et al. 2024): 32 values per chunk, stored as f16 scale d,
// f16 minimum m and 32 codes of b bits (x = m + d * q, q in 0 .. 2^b - 1). A KIVI_T* row is chunks of 32 channels
// of one token; a KIVI_C* group is, per channel, one chunk over 32 consecutive slots (docs/kv-cache.md).
#pragma once

#include <basalt/common.h>

#include <cstddef>
#include <cstdint>

namespace basalt::blocks {

// Bits per code of a KIVI type (8, 4 or 2), or 0 when the type is not one.
int kivi_bits(basalt_dtype type) noexcept;
// True for the per-channel types KIVI_C8/C4/C2.
bool kivi_per_channel(basalt_dtype type) noexcept;
// Bytes of one chunk of 32 values at b bits: 4 + 4 * b.
constexpr size_t kivi_chunk_bytes(int bits) noexcept {
    return 4 + 4 * static_cast<size_t>(bits);
}
// Encodes 32 values x[i * stride] into one chunk at out (kivi_chunk_bytes(bits) bytes). Thread-safe.
void kivi_encode(const float* x, ptrdiff_t stride, int bits, uint8_t* out) noexcept;
// Value i (0..31) of a chunk. Thread-safe.
float kivi_decode(const uint8_t* chunk, int bits, int i) noexcept;
// Decodes all 32 values of a chunk into y[i * stride]. Thread-safe.
void kivi_decode_all(const uint8_t* chunk, int bits, float* y, ptrdiff_t stride) noexcept;

// Per token (KIVI_T*): n values (a multiple of 32) of one row, to / from the row's chunks. Thread-safe.
void kivi_quantize_row(basalt_dtype type, const float* x, void* row, int64_t n) noexcept;
void kivi_dequantize_row(basalt_dtype type, const void* row, float* y, int64_t n) noexcept;

// Per channel (KIVI_C*): 32 rows of n values (row r at x + r * x_stride floats) into one group of 32 slots
// (32 * n / 32 chunks, channel c's at group + c * chunk bytes). Thread-safe.
void kivi_quantize_group(basalt_dtype type, const float* x, ptrdiff_t x_stride, void* group, int64_t n) noexcept;
// Slot r (0..31) of a KIVI_C* group: n channels from channel c0 on into y. Thread-safe.
void kivi_dequantize_group_row(basalt_dtype type, const void* group, int r, int64_t c0, float* y, int64_t n) noexcept;

}  // namespace basalt::blocks
