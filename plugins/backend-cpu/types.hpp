// Element types the CPU backend handles: block sizes, the GGUF block layouts (little-endian, as in the file)
// and the activation formats that quantized dot products pair with (ggml's vec_dot_type convention).
#pragma once

#include <basalt/common.h>
#include <basalt/blocks/mxfp4.hpp>

#include <bit>
#include <cstdint>
#include <string>

namespace basalt::cpu {

constexpr int kQK = 32;    // elements per block of the 32-element formats
constexpr int kQKK = 256;  // elements per K-quant super-block

struct BlockQ4_0 {
    uint16_t d;
    uint8_t qs[16];
};
struct BlockQ4_1 {
    uint16_t d;
    uint16_t m;
    uint8_t qs[16];
};
struct BlockQ5_0 {
    uint16_t d;
    uint8_t qh[4];
    uint8_t qs[16];
};
struct BlockQ5_1 {
    uint16_t d;
    uint16_t m;
    uint8_t qh[4];
    uint8_t qs[16];
};
struct BlockQ8_0 {
    uint16_t d;
    int8_t qs[32];
};
// Activation side of Q4_1/Q5_1 products: s = d * sum(qs) carries the weights' offset term.
struct BlockQ8_1 {
    uint16_t d;
    uint16_t s;
    int8_t qs[32];
};
struct BlockQ2_K {
    uint8_t scales[16];
    uint8_t qs[64];
    uint16_t d;
    uint16_t dmin;
};
struct BlockQ3_K {
    uint8_t hmask[32];
    uint8_t qs[64];
    uint8_t scales[12];
    uint16_t d;
};
struct BlockQ4_K {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[12];
    uint8_t qs[128];
};
struct BlockQ5_K {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[12];
    uint8_t qh[32];
    uint8_t qs[128];
};
struct BlockQ6_K {
    uint8_t ql[128];
    uint8_t qh[64];
    int8_t scales[16];
    uint16_t d;
};
// Activation side of K-quant products: f32 scale and per-16 sums (for the weights' min / offset terms).
struct BlockQ8_K {
    float d;
    int8_t qs[256];
    int16_t bsums[16];
};

// MXFP4 (GGUF type 39): E8M0 exponent e, 32 E2M1 codes as nibbles like Q4_0; element value
// kMxfp4Values[code] * e8m0_half(e) (basalt/blocks/mxfp4.hpp).
using blocks::e8m0_half;
using blocks::kMxfp4Values;
struct BlockMXFP4 {
    uint8_t e;
    uint8_t qs[16];
};

static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 && sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24 && sizeof(BlockQ8_0) == 34 && sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110 && sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210 && sizeof(BlockQ8_K) == 292);
static_assert(sizeof(BlockMXFP4) == 17 && alignof(BlockMXFP4) == 1);

// Size facts of a type: `block` elements take `bytes` bytes; `align` is the alignment its loads need.
struct TypeInfo {
    const char* name;
    int block;
    int bytes;
    int align;
};

// Returns nullptr for a type this backend does not know.
const TypeInfo* type_info(basalt_dtype type) noexcept;
std::string type_name(basalt_dtype type);

// Activation formats (what the F32 activations are converted to before a dot product with a weight row).
enum class ActFormat { F32, F16, Q8_0, Q8_1, Q8_K };

// The activation format of a weight type, and whether MATMUL supports the weight type at all.
bool matmul_weight_supported(basalt_dtype type) noexcept;
ActFormat act_format(basalt_dtype weight) noexcept;
// Bytes of a converted activation row of n elements (n a multiple of the format's block).
int64_t act_row_bytes(ActFormat f, int64_t n) noexcept;

// IEEE half and bfloat16 conversions (round to nearest even), scalar. SIMD kernels use F16C instead.
inline float fp16_to_fp32(uint16_t h) noexcept {
    // Shift the half into a float's position and rescale by 2^112: exact for normals, subnormals and zero.
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t em = h & 0x7fffu;
    if (em >= 0x7c00u) return std::bit_cast<float>(sign | 0x7f800000u | (static_cast<uint32_t>(em & 0x3ffu) << 13));
    const float f = std::bit_cast<float>(em << 13) * 0x1p112f;
    return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(f));
}

inline uint16_t fp32_to_fp16(float f) noexcept {
    const uint32_t x = std::bit_cast<uint32_t>(f);
    const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
    const uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
    if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);
    if (ax >= 0x38800000u) {
        const uint32_t r = ax + 0xfffu + ((ax >> 13) & 1u);
        return static_cast<uint16_t>(sign | ((r - (112u << 23)) >> 13));
    }
    // Half subnormal range: adding 0.5 makes the FPU round the value to a multiple of 2^-24 (nearest even).
    const float v = std::bit_cast<float>(ax) + 0.5f;
    return static_cast<uint16_t>(sign | (std::bit_cast<uint32_t>(v) - 0x3f000000u));
}

inline float bf16_to_fp32(uint16_t h) noexcept {
    return std::bit_cast<float>(static_cast<uint32_t>(h) << 16);
}

inline uint16_t fp32_to_bf16(float f) noexcept {
    const uint32_t x = std::bit_cast<uint32_t>(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
    return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

}  // namespace basalt::cpu
