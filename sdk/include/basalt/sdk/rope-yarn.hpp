// The scaled-rope math of ROPE (since 1.4), written once for every backend and the host: YaRN's correction dims
// and ramp and the magnitude of cos/sin, in single precision exactly as ggml computes them (llama.cpp's goldens
// are the reference). Header-only, pure functions; thread-safe.
#pragma once

#include <algorithm>
#include <cmath>

namespace basalt::sdk::rope_yarn {

inline constexpr float kPi = 3.14159265358979323846f;

// The dimension pair whose wavelength makes n_rotations turns over n_ctx_orig positions (fractional).
inline float corr_dim(int n_rot, int n_ctx_orig, float n_rotations, float base) noexcept {
    return static_cast<float>(n_rot) * std::log(static_cast<float>(n_ctx_orig) / (n_rotations * 2.0f * kPi)) /
           (2.0f * std::log(base));
}

// YaRN's ramp limits [low, high]: pairs below low keep the unscaled angle, above high take the scaled one.
struct CorrDims {
    float low = 0.0f;
    float high = 0.0f;
};
inline CorrDims corr_dims(int n_rot, int n_ctx_orig, float base, float beta_fast, float beta_slow) noexcept {
    const float start = std::floor(corr_dim(n_rot, n_ctx_orig, beta_fast, base));
    const float end = std::ceil(corr_dim(n_rot, n_ctx_orig, beta_slow, base));
    return {std::max(0.0f, start), std::min(static_cast<float>(n_rot - 1), end)};
}

// The share of the unscaled (extrapolated) angle in pair i: 1 below low, 0 above high, linear between.
inline float ramp(CorrDims d, int i) noexcept {
    const float y = (static_cast<float>(i) - d.low) / std::max(0.001f, d.high - d.low);
    return 1.0f - std::min(1.0f, std::max(0.0f, y));
}

// The factor of cos and sin: attn_factor (0 reads as 1), times YaRN's 1 + 0.1 ln(1 / freq_scale) when it is on.
inline float magnitude(float attn_factor, float ext_factor, float freq_scale) noexcept {
    float m = attn_factor == 0.0f ? 1.0f : attn_factor;
    if (ext_factor != 0.0f) m *= 1.0f + 0.1f * std::log(1.0f / freq_scale);
    return m;
}

}  // namespace basalt::sdk::rope_yarn
