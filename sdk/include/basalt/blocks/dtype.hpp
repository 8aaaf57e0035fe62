// Element types of GGUF tensors (ids as in GGUF / ggml): names, block sizes, bytes per block, and
// overflow-checked byte sizes of rows and tensors.
#pragma once

#include <basalt/plugin_backend.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace basalt::blocks {

struct DtypeTraits {
    basalt_dtype id;
    const char* name;    // lower case as in llama.cpp file names: "f32", "q4_k", "bf16"
    int64_t block_size;  // elements per block (1 for plain types)
    size_t type_size;    // bytes per block
    bool quantized;
};

// Traits of a GGUF type id, or nullptr when the id is unknown or retired.
const DtypeTraits* dtype_traits(int32_t id) noexcept;
// Looks a type up by name (case-insensitive); nullptr when unknown.
const DtypeTraits* dtype_from_name(std::string_view name) noexcept;
// Returns the name of a type id, or "unknown".
const char* dtype_name(int32_t id) noexcept;
// Bytes of n_elements of type id; nullopt when the id is unknown, n is not a whole number of blocks, or it
// overflows.
std::optional<uint64_t> dtype_bytes(int32_t id, uint64_t n_elements) noexcept;

}  // namespace basalt::blocks
