// Kernel table selection and the conversions shared by every ISA (activation quantization, row
// (de)quantization for GET_ROWS / CAST / KV_WRITE).
#include "kernels.hpp"

#include <basalt/sdk/plugin.hpp>

#include <cmath>
#include <cstring>

#if defined(BASALT_CPU_HAVE_BLOCKS)
#include <basalt/blocks/dequantize.hpp>
#include <basalt/blocks/kivi.hpp>
#include <basalt/blocks/quantize.hpp>
#endif

namespace basalt::cpu {

Kernels select_kernels(const std::string& isa) {
    Kernels k;
    init_kernels_scalar(k);
    if (isa == "scalar") return k;
    if (isa == "auto") {
        if (!init_kernels_avx512(k)) init_kernels_avx2(k);
        return k;
    }
    if (isa == "avx2" || isa == "avx512") {
        const bool ok = isa == "avx2" ? init_kernels_avx2(k) : init_kernels_avx512(k);
        if (!ok) {
            throw sdk::error(BASALT_ERR_UNSUPPORTED,
                             "backend 'cpu': instruction set '" + isa + "' is not available on this CPU");
        }
        return k;
    }
    throw sdk::error(BASALT_ERR_INVALID_ARGUMENT,
                     "backend 'cpu': parameter 'isa' = '" + isa + "' is not one of auto, scalar, avx2, avx512");
}

namespace {

// Round half to even for |v| <= 256 without a libm call (what _mm256_round_ps(_MM_ROUND_NEAREST) and NEON's
// vcvtnq_s32_f32 do): v - trunc(v) is exact, and a tie goes to the even neighbour.
inline int round_even_small(float v) noexcept {
    int t = static_cast<int>(v);
    const float frac = v - static_cast<float>(t);
    if (frac > 0.5f || (frac == 0.5f && (t & 1) != 0)) ++t;
    if (frac < -0.5f || (frac == -0.5f && (t & 1) != 0)) --t;
    return t;
}

}  // namespace

// Activations are quantized by the rule ggml's CPU backend uses on the machine it runs on (its quantize_row_q8_0,
// also ggml_quantize_mat_q8_0_4x8 for repacked weights), not by its file-writing reference
// (quantize_row_q8_0_ref: id = 1 / d, round half away from zero): on x86 (the AVX/AVX2 path) id = 127 / amax, on
// ARM (NEON) id = 1 / d, both rounding half to even. The two break exact ties differently (a dequantized Q4_0 value
// fed straight into a projection, as OLMo 2's raw embedding rows are, lands on k + 0.5), and from the first tie on
// the logits are not llama.cpp's.
void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
        float amax = 0;
        for (int j = 0; j < kQK; ++j) {
            const float ax = std::fabs(x[j]);
            amax = ax > amax ? ax : amax;  // std::fmax(amax, ax): a NaN ax keeps amax
        }
        const float d = amax / 127.0f;
#if defined(__aarch64__) || defined(__arm__)
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
#else
        const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
#endif
        y[b].d = fp32_to_fp16(d);
        for (int j = 0; j < kQK; ++j) {
            const float v = x[j] * id;
            // |v| <= 127 (plus rounding) unless x holds NaN / Inf: those keep the reference rounding.
            y[b].qs[j] = static_cast<int8_t>(std::fabs(v) <= 256.0f ? round_even_small(v) : round_away(v));
        }
    }
}

namespace {

void quantize_row_q8_1(const float* x, BlockQ8_1* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
        float amax = 0;
        for (int j = 0; j < kQK; ++j) amax = std::fmax(amax, std::fabs(x[j]));
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        int sum = 0;
        for (int j = 0; j < kQK; ++j) {
            y[b].qs[j] = static_cast<int8_t>(round_away(x[j] * id));
            sum += y[b].qs[j];
        }
        y[b].d = fp32_to_fp16(d);
        y[b].s = fp32_to_fp16(static_cast<float>(sum) * d);
    }
}

// Q8_K: the scale maps the element of largest magnitude to -127 (its sign kept), as ggml's reference.
void quantize_row_q8_k(const float* x, BlockQ8_K* y, int64_t n) {
    for (int64_t b = 0; b < n / kQKK; ++b, x += kQKK) {
        float amax = 0;
        float max = 0;
        for (int j = 0; j < kQKK; ++j) {
            const float ax = std::fabs(x[j]);
            if (ax > amax) {
                amax = ax;
                max = x[j];
            }
        }
        if (amax == 0.0f) {
            std::memset(&y[b], 0, sizeof(BlockQ8_K));
            continue;
        }
        const float iscale = -127.0f / max;
        for (int j = 0; j < kQKK; ++j) {
            const int v = static_cast<int>(std::nearbyint(iscale * x[j]));
            y[b].qs[j] = static_cast<int8_t>(v > 127 ? 127 : (v < -128 ? -128 : v));
        }
        for (int g = 0; g < 16; ++g) {
            int sum = 0;
            for (int l = 0; l < 16; ++l) sum += y[b].qs[16 * g + l];
            y[b].bsums[g] = static_cast<int16_t>(sum);
        }
        y[b].d = 1.0f / iscale;
    }
}

}  // namespace

void convert_activations(ActFormat f, const float* x, void* y, int64_t n) {
    switch (f) {
        case ActFormat::F32:
            std::memcpy(y, x, static_cast<size_t>(n) * sizeof(float));
            return;
        case ActFormat::F16: {
            auto* h = static_cast<uint16_t*>(y);
            for (int64_t i = 0; i < n; ++i) h[i] = fp32_to_fp16(x[i]);
            return;
        }
        case ActFormat::Q8_0:
            return quantize_row_q8_0(x, static_cast<BlockQ8_0*>(y), n);
        case ActFormat::Q8_1:
            return quantize_row_q8_1(x, static_cast<BlockQ8_1*>(y), n);
        case ActFormat::Q8_K:
            return quantize_row_q8_k(x, static_cast<BlockQ8_K*>(y), n);
    }
}

bool dequantize_row(basalt_dtype type, const void* src, float* dst, int64_t n) {
    switch (type) {
        case BASALT_DTYPE_F32:
            std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
            return true;
        case BASALT_DTYPE_F16: {
            const auto* h = static_cast<const uint16_t*>(src);
            for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(h[i]);
            return true;
        }
        case BASALT_DTYPE_BF16: {
            const auto* h = static_cast<const uint16_t*>(src);
            for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_fp32(h[i]);
            return true;
        }
        case BASALT_DTYPE_Q8_0: {
            const auto* x = static_cast<const BlockQ8_0*>(src);
            for (int64_t b = 0; b < n / kQK; ++b) {
                const float d = fp16_to_fp32(x[b].d);
                for (int j = 0; j < kQK; ++j) dst[b * kQK + j] = static_cast<float>(x[b].qs[j]) * d;
            }
            return true;
        }
        case BASALT_DTYPE_Q4_0: {
            const auto* x = static_cast<const BlockQ4_0*>(src);
            for (int64_t b = 0; b < n / kQK; ++b) {
                const float d = fp16_to_fp32(x[b].d);
                for (int j = 0; j < 16; ++j) {
                    dst[b * kQK + j] = static_cast<float>((x[b].qs[j] & 0x0f) - 8) * d;
                    dst[b * kQK + j + 16] = static_cast<float>((x[b].qs[j] >> 4) - 8) * d;
                }
            }
            return true;
        }
        default:
#if defined(BASALT_CPU_HAVE_BLOCKS)
            if (blocks::kivi_bits(type) != 0 && !blocks::kivi_per_channel(type)) {
                blocks::kivi_dequantize_row(type, src, dst, n);
                return true;
            }
            if (type_info(type) != nullptr && blocks::can_dequantize(type)) {
                blocks::dequantize_row(type, src, dst, n);
                return true;
            }
#endif
            return false;
    }
}

bool can_dequantize(basalt_dtype type) noexcept {
    switch (type) {
        case BASALT_DTYPE_F32:
        case BASALT_DTYPE_F16:
        case BASALT_DTYPE_BF16:
        case BASALT_DTYPE_Q8_0:
        case BASALT_DTYPE_Q4_0:
            return true;
        default:
#if defined(BASALT_CPU_HAVE_BLOCKS)
            if (blocks::kivi_bits(type) != 0) return !blocks::kivi_per_channel(type);
            return type_info(type) != nullptr && blocks::can_dequantize(type);
#else
            return false;
#endif
    }
}

bool can_quantize(basalt_dtype type) noexcept {
    switch (type) {
        case BASALT_DTYPE_F32:
        case BASALT_DTYPE_F16:
        case BASALT_DTYPE_BF16:
        case BASALT_DTYPE_Q8_0:
            return true;
        default:
#if defined(BASALT_CPU_HAVE_BLOCKS)
            if (blocks::kivi_bits(type) != 0) return !blocks::kivi_per_channel(type);
            return type_info(type) != nullptr && blocks::can_quantize(type);
#else
            return false;
#endif
    }
}

bool quantize_row(basalt_dtype type, const float* src, void* dst, int64_t n) {
    switch (type) {
        case BASALT_DTYPE_F32:
            std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
            return true;
        case BASALT_DTYPE_F16: {
            auto* h = static_cast<uint16_t*>(dst);
            for (int64_t i = 0; i < n; ++i) h[i] = fp32_to_fp16(src[i]);
            return true;
        }
        case BASALT_DTYPE_BF16: {
            auto* h = static_cast<uint16_t*>(dst);
            for (int64_t i = 0; i < n; ++i) h[i] = fp32_to_bf16(src[i]);
            return true;
        }
        case BASALT_DTYPE_Q8_0:
            quantize_row_q8_0(src, static_cast<BlockQ8_0*>(dst), n);
            return true;
        default:
#if defined(BASALT_CPU_HAVE_BLOCKS)
            if (blocks::kivi_bits(type) != 0 && !blocks::kivi_per_channel(type)) {
                blocks::kivi_quantize_row(type, src, dst, n);
                return true;
            }
            if (can_quantize(type)) {
                blocks::quantize_row(type, src, dst, n);
                return true;
            }
#endif
            return false;
    }
}

}  // namespace basalt::cpu
