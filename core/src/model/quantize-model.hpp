// Model quantization: rewrites a GGUF file with its weight matrices in another type, following the tensor
// rule of llama-quantize --pure (so F16/Q8_0/Q4_0 outputs of an F32 file are byte-identical to llama.cpp's).
#pragma once

#include <basalt/common.h>

#include <filesystem>
#include <string>

namespace basalt {

struct QuantizeReport {
    size_t quantized = 0;  // tensors converted to the target type
    size_t fallback = 0;   // tensors whose rows the target's blocks do not divide (stored as q8_0 or f16)
    size_t kept = 0;       // tensors copied unchanged (norms, biases, router, ...)
    uint64_t bytes_in = 0;
    uint64_t bytes_out = 0;
};

// Returns true when the tensor is a weight matrix that --pure quantization converts.
bool is_quantizable_weight(const std::string& name, uint32_t n_dims);
// Quantizes in -> out as type. Throws Error naming the file, tensor and reason.
QuantizeReport quantize_model(const std::filesystem::path& in, const std::filesystem::path& out, basalt_dtype type);

}  // namespace basalt
