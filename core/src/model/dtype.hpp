// GGUF element types for the core: the table lives in the blocks library (sdk/blocks), shared with plugins.
#pragma once

#include <basalt/blocks/dtype.hpp>

namespace basalt {
using blocks::dtype_bytes;
using blocks::dtype_from_name;
using blocks::dtype_name;
using blocks::dtype_traits;
using blocks::DtypeTraits;
}  // namespace basalt
