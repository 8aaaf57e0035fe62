#include <basalt/blocks/quantize.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <string>

#include <basalt/blocks/dtype.hpp>
#include <basalt/blocks/error.hpp>
#include <basalt/blocks/half.hpp>
#include <basalt/blocks/mxfp4.hpp>

// ggml's reference is compiled without fused multiply-add; forbid contracting a*b+c here too, whatever -march
// the build uses (GCC contracts by default even in ISO C++ mode when the target has FMA).
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

// Byte-exactness with llama.cpp depends on doing the same float operations in the same order: every
// expression below mirrors ggml's reference (int operands converted to float where C would convert them,
// left-to-right evaluation, 1.0f/d where ggml multiplies by an inverse, division where it divides).
namespace basalt::blocks {
namespace {

constexpr float kGroupMaxEps = 1e-15f;  // ggml's GROUP_MAX_EPS: a group below this is all zero

void put_f16(uint8_t* p, float v) {
    const uint16_t h = fp32_to_fp16(v);
    p[0] = static_cast<uint8_t>(h & 0xff);
    p[1] = static_cast<uint8_t>(h >> 8);
}

// The value an f16 scale has once stored (ggml re-reads its own fp16 scales before computing quants).
float round_f16(float v) {
    return fp16_to_fp32(fp32_to_fp16(v));
}

// Round to nearest, ties to even, through the float mantissa (ggml's nearest_int; exact for |v| < 2^22 and
// free of undefined behaviour for any input).
int nearest_int(float v) {
    const float biased = v + 12582912.f;  // 1.5 * 2^23
    const auto bits = std::bit_cast<int32_t>(biased);
    return (bits & 0x007fffff) - 0x00400000;
}

// float -> int8 for values that are already integral and in range; clamps instead of UB otherwise.
int8_t to_i8(float r) {
    if (!(r > -128.f)) return r == r ? int8_t{-128} : int8_t{0};  // NaN -> 0
    if (r >= 127.f) return 127;
    return static_cast<int8_t>(r);
}

void quant_f16(const float* x, uint8_t* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) put_f16(y + 2 * i, x[i]);
}

void quant_bf16(const float* x, uint8_t* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = fp32_to_bf16(x[i]);
        y[2 * i] = static_cast<uint8_t>(h & 0xff);
        y[2 * i + 1] = static_cast<uint8_t>(h >> 8);
    }
}

// quantize_row_q8_0_ref: d = amax/127, q = round-half-away(x * (1/d)).
void quant_q8_0(const float* x, uint8_t* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, x += 32, y += 34) {
        float amax = 0.0f;
        for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        put_f16(y, d);
        for (int j = 0; j < 32; ++j) y[2 + j] = static_cast<uint8_t>(to_i8(std::round(x[j] * id)));
    }
}

// quantize_row_q4_0_ref: d = (signed value of largest magnitude) / -8, q = min(15, trunc(x/d + 8.5)).
void quant_q4_0(const float* x, uint8_t* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, x += 32, y += 18) {
        float amax = 0.0f;
        float max = 0.0f;
        for (int j = 0; j < 32; ++j) {
            if (amax < std::fabs(x[j])) {
                amax = std::fabs(x[j]);
                max = x[j];
            }
        }
        const float d = max / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        put_f16(y, d);
        const auto level = [](float v) {
            const float t = v + 8.5f;  // in [0.5, 16.5] for finite input; ggml truncates through int8_t
            if (t >= 15.0f) return 15;
            return t > 0.0f ? static_cast<int>(t) : 0;
        };
        for (int j = 0; j < 16; ++j) {
            const int xi0 = level(x[j] * id);
            const int xi1 = level(x[j + 16] * id);
            y[2 + j] = static_cast<uint8_t>(xi0 | (xi1 << 4));
        }
    }
}

// ggml's make_qkx2_quants: an asymmetric nmax-level grid (scale, min <= 0) for n values, chosen by a weighted
// least-squares search over nstep+1 candidate scales. Writes the levels to L, returns the scale and -min.
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* the_min, uint8_t* Laux,
                       float rmin, float rdelta, int nstep) {
    float min = x[0];
    float max = x[0];
    float sum_w = weights[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        const float w = weights[i];
        sum_w += w;
        sum_x += w * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        std::fill(L, L + n, uint8_t{0});
        *the_min = -min;
        return 0.f;
    }
    const auto fmax = static_cast<float>(nmax);
    float iscale = fmax / (max - min);
    float scale = 1.0f / iscale;
    float best_error = 0;
    for (int i = 0; i < n; ++i) {
        const int l = nearest_int(iscale * (x[i] - min));
        L[i] = static_cast<uint8_t>(std::max(0, std::min(nmax, l)));
        float diff = scale * static_cast<float>(L[i]) + min - x[i];
        diff = diff * diff;
        best_error += weights[i] * diff;
    }
    for (int is = 0; is <= nstep; ++is) {
        iscale = (rmin + rdelta * static_cast<float>(is) + fmax) / (max - min);
        float sum_l = 0;
        float sum_l2 = 0;
        float sum_xl = 0;
        for (int i = 0; i < n; ++i) {
            int l = nearest_int(iscale * (x[i] - min));
            l = std::max(0, std::min(nmax, l));
            Laux[i] = static_cast<uint8_t>(l);
            const float w = weights[i];
            const auto fl = static_cast<float>(l);
            sum_l += w * fl;
            sum_l2 += w * fl * fl;
            sum_xl += w * fl * x[i];
        }
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float cur_error = 0;
            for (int i = 0; i < n; ++i) {
                float diff = this_scale * static_cast<float>(Laux[i]) + this_min - x[i];
                diff = diff * diff;
                cur_error += weights[i] * diff;
            }
            if (cur_error < best_error) {
                std::copy(Laux, Laux + n, L);
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *the_min = -min;
    return scale;
}

// ggml's get_scale_min_k4: the 6-bit scale and min j (0..7) packed into 12 bytes.
void scale_min_k4(int j, const uint8_t* q, int* sc, int* m) {
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4);
        *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

// quantize_row_q4_K_ref. Block: f16 d, f16 dmin, scales[12], qs[128].
void quant_q4_k(const float* x, uint8_t* y, int64_t nb) {
    uint8_t L[256];
    uint8_t Laux[32];
    float weights[32];
    float mins[8];
    float scales[8];
    for (int64_t i = 0; i < nb; ++i, x += 256, y += 144) {
        float max_scale = 0;  // the min is subtracted, so scales are positive
        float max_min = 0;
        for (int j = 0; j < 8; ++j) {
            const float* xb = x + 32 * j;
            float sum_x2 = 0;
            for (int l = 0; l < 32; ++l) sum_x2 += xb[l] * xb[l];
            const float av_x = std::sqrt(sum_x2 / 32.0f);
            for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(xb[l]);
            scales[j] = make_qkx2_quants(32, 15, xb, weights, L + 32 * j, &mins[j], Laux, -1.f, 0.1f, 20);
            if (scales[j] > max_scale) max_scale = scales[j];
            if (mins[j] > max_min) max_min = mins[j];
        }
        const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
        const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
        uint8_t packed[12] = {};
        for (int j = 0; j < 8; ++j) {
            // ggml stores nearest_int into a uint8_t first (wrapping), then clamps to 63
            const auto ls = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_scale * scales[j])));
            const auto lm = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_min * mins[j])));
            if (j < 4) {
                packed[j] = ls;
                packed[j + 4] = lm;
            } else {
                packed[j + 4] = static_cast<uint8_t>((ls & 0x0f) | ((lm & 0x0f) << 4));
                packed[j - 4] = static_cast<uint8_t>(packed[j - 4] | ((ls >> 4) << 6));
                packed[j] = static_cast<uint8_t>(packed[j] | ((lm >> 4) << 6));
            }
        }
        put_f16(y, max_scale / 63.f);
        put_f16(y + 2, max_min / 63.f);
        std::memcpy(y + 4, packed, sizeof(packed));
        const float d_all = round_f16(max_scale / 63.f);
        const float dmin_all = round_f16(max_min / 63.f);
        for (int j = 0; j < 8; ++j) {
            int sc = 0;
            int m = 0;
            scale_min_k4(j, packed, &sc, &m);
            const float d = d_all * static_cast<float>(sc);
            if (d == 0.0f) continue;  // keep make_qkx2_quants' levels
            const float dm = dmin_all * static_cast<float>(m);
            for (int ii = 0; ii < 32; ++ii) {
                const int l = nearest_int((x[32 * j + ii] + dm) / d);
                L[32 * j + ii] = static_cast<uint8_t>(std::max(0, std::min(15, l)));
            }
        }
        uint8_t* q = y + 16;
        for (int j = 0; j < 256; j += 64, q += 32) {
            for (int l = 0; l < 32; ++l) q[l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 4));
        }
    }
}

// ggml's make_qx_quants with rmse_type 1 and no importance weights (w = x^2): a symmetric grid of levels
// -nmax..nmax-1, the scale refined by weighted least squares over 19 candidate grids. Writes levels + nmax.
float make_qx_quants_rmse1(int n, int nmax, const float* x, int8_t* L) {
    float max = 0;
    float amax = 0;
    for (int i = 0; i < n; ++i) {
        const float ax = std::fabs(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < kGroupMaxEps) {
        std::fill(L, L + n, int8_t{0});
        return 0.f;
    }
    const auto fmax = static_cast<float>(nmax);
    float iscale = -fmax / max;
    float sumlx = 0;
    float suml2 = 0;
    for (int i = 0; i < n; ++i) {
        int l = nearest_int(iscale * x[i]);
        l = std::max(-nmax, std::min(nmax - 1, l));
        L[i] = static_cast<int8_t>(l + nmax);
        const float w = x[i] * x[i];
        const auto fl = static_cast<float>(l);
        sumlx += w * x[i] * fl;
        suml2 += w * fl * fl;
    }
    float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) continue;
        iscale = -(fmax + 0.1f * static_cast<float>(is)) / max;
        sumlx = 0;
        suml2 = 0;
        for (int i = 0; i < n; ++i) {
            int l = nearest_int(iscale * x[i]);
            l = std::max(-nmax, std::min(nmax - 1, l));
            const float w = x[i] * x[i];
            const auto fl = static_cast<float>(l);
            sumlx += w * x[i] * fl;
            suml2 += w * fl * fl;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; ++i) {
                const int l = nearest_int(iscale * x[i]);
                L[i] = static_cast<int8_t>(nmax + std::max(-nmax, std::min(nmax - 1, l)));
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

// quantize_row_q6_K_ref. Block: ql[128], qh[64], int8 scales[16], f16 d.
void quant_q6_k(const float* x, uint8_t* y, int64_t nb) {
    int8_t L[256];
    float scales[16];
    for (int64_t i = 0; i < nb; ++i, x += 256, y += 210) {
        float max_scale = 0;
        float max_abs_scale = 0;
        for (int ib = 0; ib < 16; ++ib) {
            const float scale = make_qx_quants_rmse1(16, 32, x + 16 * ib, L + 16 * ib);
            scales[ib] = scale;
            const float abs_scale = std::fabs(scale);
            if (abs_scale > max_abs_scale) {
                max_abs_scale = abs_scale;
                max_scale = scale;
            }
        }
        if (max_abs_scale < kGroupMaxEps) {
            std::memset(y, 0, 210);
            continue;
        }
        const float iscale = -128.f / max_scale;
        put_f16(y + 208, 1.0f / iscale);
        const float d_all = round_f16(1.0f / iscale);
        int8_t sc[16];
        for (int ib = 0; ib < 16; ++ib) {
            // int -> int8 as ggml's implicit conversion (modular; the value is in range for finite input)
            sc[ib] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[ib])));
        }
        for (int j = 0; j < 16; ++j) {
            const float d = d_all * static_cast<float>(sc[j]);
            if (d == 0.0f) continue;  // keep make_qx_quants' levels
            for (int ii = 0; ii < 16; ++ii) {
                int l = nearest_int(x[16 * j + ii] / d);
                l = std::max(-32, std::min(31, l));
                L[16 * j + ii] = static_cast<int8_t>(l + 32);
            }
        }
        std::memcpy(y + 192, sc, sizeof(sc));
        uint8_t* ql = y;
        uint8_t* qh = y + 128;
        for (int j = 0; j < 256; j += 128, ql += 64, qh += 32) {
            for (int l = 0; l < 32; ++l) {
                const int q1 = L[j + l];
                const int q2 = L[j + l + 32];
                const int q3 = L[j + l + 64];
                const int q4 = L[j + l + 96];
                ql[l] = static_cast<uint8_t>((q1 & 0x0f) | ((q3 & 0x0f) << 4));
                ql[l + 32] = static_cast<uint8_t>((q2 & 0x0f) | ((q4 & 0x0f) << 4));
                qh[l] = static_cast<uint8_t>((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
            }
        }
    }
}

}  // namespace

bool can_quantize(basalt_dtype type) noexcept {
    switch (type) {
        case BASALT_DTYPE_F32:
        case BASALT_DTYPE_F16:
        case BASALT_DTYPE_BF16:
        case BASALT_DTYPE_Q8_0:
        case BASALT_DTYPE_Q4_0:
        case BASALT_DTYPE_Q4_K:
        case BASALT_DTYPE_Q6_K:
        case BASALT_DTYPE_MXFP4:
            return true;
        default:
            return false;
    }
}

void quantize_row(basalt_dtype type, const float* src, void* dst, int64_t n) {
    const int64_t bs = check_row("quantize", can_quantize(type), type, n);
    auto* y = static_cast<uint8_t*>(dst);
    const int64_t nb = n / bs;
    switch (type) {
        case BASALT_DTYPE_F32:
            if (n > 0) std::memcpy(y, src, static_cast<size_t>(n) * sizeof(float));
            return;
        case BASALT_DTYPE_F16:
            return quant_f16(src, y, n);
        case BASALT_DTYPE_BF16:
            return quant_bf16(src, y, n);
        case BASALT_DTYPE_Q8_0:
            return quant_q8_0(src, y, nb);
        case BASALT_DTYPE_Q4_0:
            return quant_q4_0(src, y, nb);
        case BASALT_DTYPE_Q4_K:
            return quant_q4_k(src, y, nb);
        case BASALT_DTYPE_Q6_K:
            return quant_q6_k(src, y, nb);
        case BASALT_DTYPE_MXFP4:
            return mxfp4_quantize(src, y, nb);
        default:
            break;
    }
}

}  // namespace basalt::blocks
