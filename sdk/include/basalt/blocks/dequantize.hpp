// Reference dequantization of GGUF weight types to float, bit-exact with ggml's dequantize_row_* (the
// definitions every GGUF consumer agrees on). Plain scalar loops: the CPU backend brings its own fast paths
// and checks them against these. Pure functions, thread-safe.
#pragma once

#include <basalt/plugin_backend.h>

#include <cstdint>

namespace basalt::blocks {

// True for F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K and MXFP4.
bool can_dequantize(basalt_dtype type) noexcept;

// Converts n elements of `type` at src (borrowed; any alignment, little-endian GGUF layout) into dst[0..n).
// n must be a non-negative multiple of the type's block size. Throws basalt::Error: BASALT_ERR_UNSUPPORTED
// naming the type when can_dequantize(type) is false, BASALT_ERR_INVALID_ARGUMENT for a bad n.
void dequantize_row(basalt_dtype type, const void* src, float* dst, int64_t n);

}  // namespace basalt::blocks
