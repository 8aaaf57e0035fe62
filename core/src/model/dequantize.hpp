// Reference dequantize for the core: the blocks library's functions, with its errors turned into basalt::Error.
#pragma once

#include <basalt/blocks/dequantize.hpp>
#include <basalt/blocks/error.hpp>

#include "support/error.hpp"

namespace basalt {

// True when dequantize_row handles the type. Thread-safe.
inline bool can_dequantize(basalt_dtype type) noexcept {
    return ::basalt::blocks::can_dequantize(type);
}

// Same as blocks::dequantize_row, throwing basalt::Error with the same status and message.
inline void dequantize_row(basalt_dtype type, const void* src, float* dst, int64_t n) {
    try {
        ::basalt::blocks::dequantize_row(type, src, dst, n);
    } catch (const ::basalt::blocks::error& e) {
        throw Error(e.status(), e.what());
    }
}

}  // namespace basalt
