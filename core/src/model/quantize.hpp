// Reference quantize for the core: the blocks library's functions, with its errors turned into basalt::Error.
#pragma once

#include <basalt/blocks/error.hpp>
#include <basalt/blocks/quantize.hpp>

#include "support/error.hpp"

namespace basalt {

// True when quantize_row handles the type. Thread-safe.
inline bool can_quantize(basalt_dtype type) noexcept {
    return ::basalt::blocks::can_quantize(type);
}

// Same as blocks::quantize_row, throwing basalt::Error with the same status and message.
inline void quantize_row(basalt_dtype type, const float* src, void* dst, int64_t n) {
    try {
        ::basalt::blocks::quantize_row(type, src, dst, n);
    } catch (const ::basalt::blocks::error& e) {
        throw Error(e.status(), e.what());
    }
}

}  // namespace basalt
