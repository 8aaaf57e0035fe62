// Reference quantizers float -> GGUF weight types, byte-identical to llama.cpp's reference (non-imatrix)
// quantizers: ggml_fp32_to_fp16_row / _bf16_row_ref, quantize_row_q8_0_ref, quantize_row_q4_0_ref,
// quantize_row_q4_K_ref (make_qkx2_quants), quantize_row_q6_K_ref (make_qx_quants) and quantize_row_mxfp4_ref,
// i.e. what `llama-quantize --pure` writes without an importance matrix. Pure functions, thread-safe.
#pragma once

#include <basalt/plugin_backend.h>

#include <cstdint>

namespace basalt::blocks {

// True for F32 (a copy), F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K and MXFP4.
bool can_quantize(basalt_dtype type) noexcept;

// Quantizes src[0..n) into dst (borrowed; dtype_bytes(type, n) bytes, any alignment, little-endian GGUF layout).
// n must be a non-negative multiple of the type's block size; blocks are independent, so a tensor can be
// quantized row by row or all at once. Inputs are expected finite (NaN/inf give unspecified bytes, never UB).
// Throws basalt::Error: BASALT_ERR_UNSUPPORTED naming the type when can_quantize(type) is false,
// BASALT_ERR_INVALID_ARGUMENT for a bad n.
void quantize_row(basalt_dtype type, const float* src, void* dst, int64_t n);

}  // namespace basalt::blocks
