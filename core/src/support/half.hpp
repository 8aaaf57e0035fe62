// fp16 / bf16 conversions for the core (from the blocks library, shared with plugins).
#pragma once

#include <basalt/blocks/half.hpp>

namespace basalt {
using blocks::bf16_to_fp32;
using blocks::fp16_to_fp32;
using blocks::fp32_to_bf16;
using blocks::fp32_to_fp16;
}  // namespace basalt
