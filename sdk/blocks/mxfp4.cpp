#include <basalt/blocks/mxfp4.hpp>

#include <cmath>

// ggml's reference is compiled without fused multiply-add; forbid contracting here too (see dequantize.cpp).
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace basalt::blocks {
namespace {

// The code whose value times d is nearest to x: a strict < scan from code 0, so the first code wins a tie
// (code 0 before code 8 for both zeros, as ggml's best_index_mxfp4).
uint8_t nearest_code(float x, float d) {
    uint8_t best = 0;
    float best_err = std::fabs(static_cast<float>(kMxfp4Values[0]) * d - x);
    for (uint8_t i = 1; i < 16; ++i) {
        const float err = std::fabs(static_cast<float>(kMxfp4Values[i]) * d - x);
        if (err < best_err) {
            best = i;
            best_err = err;
        }
    }
    return best;
}

}  // namespace

void mxfp4_dequantize(const uint8_t* x, float* y, int64_t nb) noexcept {
    for (int64_t i = 0; i < nb; ++i, x += kMxfp4BlockBytes, y += kMxfp4Block) {
        const float d = e8m0_half(x[0]);
        const uint8_t* qs = x + 1;
        for (int j = 0; j < 16; ++j) {
            y[j] = static_cast<float>(kMxfp4Values[qs[j] & 0x0f]) * d;
            y[j + 16] = static_cast<float>(kMxfp4Values[qs[j] >> 4]) * d;
        }
    }
}

void mxfp4_quantize(const float* x, uint8_t* y, int64_t nb) noexcept {
    for (int64_t i = 0; i < nb; ++i, x += kMxfp4Block, y += kMxfp4BlockBytes) {
        float amax = 0.0f;
        for (int j = 0; j < kMxfp4Block; ++j) {
            if (amax < std::fabs(x[j])) amax = std::fabs(x[j]);
        }
        // ggml converts floor(log2f(amax)) - 2 + 127 to uint8_t; through int the conversion is defined for every
        // finite amax (a block below 2^-125 wraps modulo 256, as the x86 conversion ggml compiles to does).
        const uint8_t e =
            amax > 0.0f ? static_cast<uint8_t>(static_cast<int>(std::floor(std::log2(amax))) - 2 + 127) : uint8_t{0};
        const float d = e8m0_half(e);
        y[0] = e;
        for (int j = 0; j < 16; ++j) {
            y[1 + j] = static_cast<uint8_t>(nearest_code(x[j], d) | (nearest_code(x[j + 16], d) << 4));
        }
    }
}

}  // namespace basalt::blocks
