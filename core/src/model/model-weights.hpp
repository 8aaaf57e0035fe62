// Where each weight tensor of a model lives on the backend: buffer + byte offset, plus slicing of fused
// tensors (GPT-2's attn_qkv) into row ranges without copying.
#pragma once

#include <basalt/plugin_backend.h>

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/gguf.hpp"

namespace basalt {

struct WeightRef {
    std::string name;
    basalt_dtype type = BASALT_DTYPE_F32;
    std::vector<int64_t> ne;
    basalt_buffer* buffer = nullptr;
    uint64_t offset = 0;
};

class ModelWeights {
  public:
    // Every tensor of `file` found at data_offset + tensor offset inside `buffer` (which holds the whole file
    // image, or its data section when data_base is the data offset).
    ModelWeights(const gguf::File& file, basalt_buffer* buffer, uint64_t base_offset);
    std::optional<WeightRef> find(const std::string& name) const;
    // Throws Error(FORMAT) naming the file, the tensor and the architecture when it is missing.
    WeightRef require(const std::string& name, const std::string& arch) const;
    // Rows [first, first + count) of a 2-D weight (ne[1] is the row index), as a new reference.
    static WeightRef rows(const WeightRef& w, int64_t first, int64_t count);
    // Checks the shape of a weight; throws Error(FORMAT) naming the tensor, expected and found shapes.
    static void expect_shape(const WeightRef& w, std::initializer_list<int64_t> ne, const std::string& source);
    const std::string& source() const { return source_; }

  private:
    std::string source_;
    std::unordered_map<std::string, WeightRef> by_name_;
};

}  // namespace basalt
