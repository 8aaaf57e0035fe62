// Inner loops of the CPU backend, one table per instruction set (scalar, AVX2, AVX-512), chosen once per
// backend instance. Every table computes the same thing; only the order of float additions differs.
// Activation quantization is shared by all tables (scalar), so every ISA sees bit-identical quantized inputs.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "packed-layout.hpp"
#include "types.hpp"

namespace basalt::cpu {

// Dot product of a weight row (n elements of the weight type) with an activation row in the weight type's
// ActFormat; n is a multiple of the weight's block. Accumulates in F32 (integers within blocks).
using VecDotFn = float (*)(int64_t n, const void* w, const void* a);
// The same dot product of one weight row with `ncols` (1..multi_cols) activation rows at once: res[j] equals
// vec_dot(n, w, a[j]) bit for bit (the same float operations per output), but each weight block is loaded and
// prepared once for all the columns. Used by MATMUL / MOE_MATMUL when there is more than one activation row.
using VecDotMultiFn = void (*)(int64_t n, const void* w, const void* const* a, int ncols, float* res);
// A register block: block_rows weight rows (row r at w + r * w_stride) against `ncols` (1..block_cols) activation
// rows in the multi_act layout, written to out[j][row + r]; each equals vec_dot(n, row r, a[j]) bit for bit.
// Weights and activations are each loaded once per block. Used by the several-columns path for whole row groups.
using VecDotBlockFn = void (*)(int64_t n, const void* w, int64_t w_stride, const void* const* a, int ncols,
                               float* const* out, int64_t row);

// Packed Q8_0 / Q4_0 / MXFP4 weights (packed-layout.hpp): one group of 16 weight rows against one activation row in the
// packed activation layout, written to out[r] for the group's first `valid` rows; each output bit-identical to vec_dot
// of the row in its source form (same integer lanes, same float operations in the same order).
using PackedDotFn = void (*)(int64_t k, const uint8_t* group, const uint8_t* a, float* out, int valid);
// The same group against `ncols` (1..kPackedCols) packed activation rows (row j at a + j * a_stride), written to
// out[j] + out_off, each bit-identical to PackedDotFn's; the group's weights are read from memory once for all the
// columns, K in slices of `slice_blocks` blocks (even, 2..kPackedMaxSlice) that every column passes over while the
// slice is in L1, and the lines of `next` (next_bytes, or nullptr) are requested meanwhile (the following group).
using PackedColsFn = void (*)(int64_t k, const uint8_t* group, const uint8_t* a, int64_t a_stride, int ncols,
                              float* const* out, int64_t out_off, int valid, const uint8_t* next, int64_t next_bytes,
                              int64_t slice_blocks);
constexpr int kPackedCols = 16;          // most columns one PackedColsFn call takes
constexpr int64_t kPackedMaxSlice = 64;  // most blocks of one K slice

constexpr int kMaxDtype = 40;  // one past the highest weight type id (MXFP4 = 39)

// Activation rows as vec_dot_multi reads them. Every layout holds exactly the values of the ActFormat row.
enum class MultiAct : uint8_t {
    Native,      // the ActFormat row as vec_dot takes it
    F32Rounded,  // F16 ActFormat: F32 values already rounded to F16 (no conversion in the inner loop)
    Q8Split,     // Q8_0 ActFormat: the n quants, then each block's scale as F32 repeated 8 times (n * 2 bytes)
};

// One chunk of the chunked delta rule (ops-gated-delta-chunked.cpp) for one block of kDeltaRows state rows of one
// value head: S k_j and S q_j of every token, the forward substitution for u, the outputs, then the state update.
// Pointers are borrowed for the call; lanes r >= nr of st and the scratch are zeros in and out.
constexpr int64_t kDeltaRows = 16;
struct DeltaChunkRows {
    int64_t n = 0;                    // tokens of the chunk (1..lda)
    int64_t dk = 0;                   // key size (state columns)
    int64_t nr = 0;                   // valid state rows of the block (1..kDeltaRows)
    int64_t lda = 0;                  // row stride of a and m
    const float* a = nullptr;         // [n][lda]: A_ij for j < i
    const float* m = nullptr;         // [n][lda]: M_ij for j <= i
    const float* const* k = nullptr;  // k[j]: token j's key row (dk floats)
    const float* const* q = nullptr;  // q[j]: token j's query row (dk floats)
    const float* const* v = nullptr;  // v[j]: token j's value rows from the block's first (nr floats)
    float* const* out = nullptr;      // out[j]: token j's output rows from the block's first (nr floats written)
    const float* beta = nullptr;      // [n]
    const float* eg = nullptr;        // [n]: e^G_j (G cumulative over the chunk), as float
    const float* w = nullptr;         // [n]: e^(G_n - G_j), as float
    float egn = 0;                    // e^G_n, as float
    float* st = nullptr;              // [dk][kDeltaRows]: the block's state, transposed; updated in place
    float* sk = nullptr;              // scratch [n][kDeltaRows] each
    float* sq = nullptr;
    float* u = nullptr;
    float* kw = nullptr;  // scratch [n][dk] (the SIMD tables keep w_j k_j there; the baseline does not use it)
};

struct Kernels {
    const char* isa = "scalar";
    VecDotFn vec_dot[kMaxDtype] = {};
    VecDotMultiFn vec_dot_multi[kMaxDtype] = {};  // optional (nullptr: vec_dot per column)
    int multi_cols[kMaxDtype] = {};               // most columns one vec_dot_multi call takes
    MultiAct multi_act[kMaxDtype] = {};           // the activation layout vec_dot_multi reads
    VecDotBlockFn vec_dot_block[kMaxDtype] = {};  // optional (needs vec_dot_multi; reads the same layout)
    int block_rows[kMaxDtype] = {};               // weight rows one vec_dot_block call takes
    int block_cols[kMaxDtype] = {};               // most columns one vec_dot_block call takes
    PackedDotFn packed_q8_0 = nullptr;            // optional (nullptr: Q8_0 weights are not repacked)
    PackedDotFn packed_q8_0_stream = nullptr;     // the same floats, tuned for one activation row (weights in DRAM)
    PackedColsFn packed_q8_0_cols = nullptr;      // optional: several activation rows per group pass
    PackedColsFn packed_q4_0_cols = nullptr;      // optional: packed Q4_0 (any rows; nullptr: Q4_0 is not repacked)
    PackedDotFn packed_q4_0_stream = nullptr;     // optional: packed Q4_0 against one activation row (decode)
    PackedColsFn packed_mxfp4_cols = nullptr;     // optional: packed MXFP4 (any rows; nullptr: not repacked)
    PackedDotFn packed_mxfp4_stream = nullptr;    // packed MXFP4 against one activation row (set with the above)
    // Optional: the packed activation row of n floats, bit-identical to quantize_row_packed_act; false when
    // the row needs the scalar code (non-finite values).
    bool (*quantize_packed_act)(const float* x, uint8_t* y, int64_t n) = nullptr;
    // Attention helpers: dot(q, k) over F32/F16 keys, v-accumulation y += a * x, y *= a.
    float (*dot_f32)(int64_t n, const float* a, const float* b) = nullptr;
    float (*dot_f16)(int64_t n, const float* a, const uint16_t* b) = nullptr;
    void (*axpy_f32)(int64_t n, float a, const float* x, float* y) = nullptr;
    void (*axpy_f16)(int64_t n, float a, const uint16_t* x, float* y) = nullptr;
    // Optional attention blocks (nullptr: the per-row helpers above). attn_scores_*: out[i * nh + j] = scale x
    // dot_*(hd, q[j], rows[i]) for i < n and heads j < nh, bit for bit (hd % 32 == 0); they request rows ahead of
    // the ones they read. attn_accum_*: for each row i and head j < nh, acc_j *= r where r = r[i * stride + j] is
    // not 1, then acc_j += e[i * stride + j] x rows[i], as the scalar rescale and axpy_* would (acc_j at acc +
    // j * hd; hd % 16 == 0); they request rows ahead too.
    void (*attn_scores_f32)(int64_t hd, const float* const* q, int nh, float scale, const uint8_t* const* rows,
                            int64_t n, float* out) = nullptr;
    void (*attn_scores_f16)(int64_t hd, const float* const* q, int nh, float scale, const uint8_t* const* rows,
                            int64_t n, float* out) = nullptr;
    void (*attn_accum_f32)(int64_t hd, int nh, const uint8_t* const* rows, int64_t n, const float* e, const float* r,
                           int64_t stride, float* acc) = nullptr;
    void (*attn_accum_f16)(int64_t hd, int nh, const uint8_t* const* rows, int64_t n, const float* e, const float* r,
                           int64_t stride, float* acc) = nullptr;
    // Elementwise y = a + b and y = a * b (exact, so every table gives the same floats); y may alias a or b.
    void (*add_f32)(int64_t n, const float* a, const float* b, float* y) = nullptr;
    void (*mul_f32)(int64_t n, const float* a, const float* b, float* y) = nullptr;
    // y[i] = fp32_to_fp16(x[i]), bit for bit (round to nearest even; NaNs quieted keeping the payload's top).
    void (*to_f16)(int64_t n, const float* x, uint16_t* y) = nullptr;
    // SiLU: y[i] = x[i] / (1 + exp(-x[i])); SwiGLU: y[i] = silu(g[i]) * u[i]. y may alias x or g.
    void (*silu)(int64_t n, const float* x, float* y) = nullptr;
    void (*swiglu)(int64_t n, const float* g, const float* u, float* y) = nullptr;
    // Optional (nullptr: the scalar std::tanh form): GELU (tanh form) as x / (1 + exp(-2 sqrt(2/pi) (x + 0.044715
    // x^3))), the same function as 0.5 x (1 + tanh(...)) to a few ulps, and GEGLU y[i] = gelu(g[i]) * u[i].
    void (*gelu)(int64_t n, const float* x, float* y) = nullptr;
    void (*geglu)(int64_t n, const float* g, const float* u, float* y) = nullptr;
    // y[i] = x[i] rounded to F16 and back (fp16_to_fp32(fp32_to_fp16(x[i])), bit for bit): MultiAct::F32Rounded.
    void (*round_f16)(int64_t n, const float* x, float* y) = nullptr;
    // Optional (nullptr: ops-gated-delta-chunked.cpp's baseline loops), the chunked delta rule's inner loops, each
    // output the baseline's float operations in its order (a separate multiply and add, never fused), vectorized
    // across independent lanes only, so every table gives the same bits. delta_dots: kk[j] = sum_d ki[d] kt[d ld + j]
    // and qk[j] = sum_d qi[d] kt[d ld + j] for j < n, each summed from 0 in d order. delta_rows: DeltaChunkRows.
    void (*delta_dots)(int64_t n, int64_t dk, const float* ki, const float* qi, const float* kt, int64_t ld, float* kk,
                       float* qk) = nullptr;
    void (*delta_rows)(const DeltaChunkRows& a) = nullptr;
    // Optional (nullptr: ops-recurrent.cpp's recurrent_rows), one token of the delta rule's recurrent form for 8
    // consecutive state rows (row g at s + g dk, dk % 8 == 0; vt and out 8 floats): each row's operations in its order.
    void (*delta_recurrent8)(float* s, int64_t dk, const float* kt, const float* qt, float decay, float b,
                             const float* vt, float* out) = nullptr;
    // Optional (nullptr: ops-recurrent.cpp's conv_rows_baseline), SSM_CONV's outputs of one token for n channels:
    // out[i] = 0 + sum over taps j < K - 1 of wt[j n + i] s[j C + i], + wt[(K - 1) n + i] xt[i], in double in that
    // order (every product of two floats is exact in double, so only the sums' order matters).
    void (*conv_rows)(int64_t n, int64_t K, const float* wt, const float* s, int64_t C, const float* xt,
                      float* out) = nullptr;
};

// Fills the scalar table (the reference, always available).
void init_kernels_scalar(Kernels& k);
// Overwrite the entries they accelerate; return false when the CPU lacks the instructions.
bool init_kernels_avx2(Kernels& k);
bool init_kernels_avx512(Kernels& k);
// Set the recurrent ops' entries (delta_*, conv_rows) of a table init_kernels_avx2 / _avx512 filled
// (kernels-recurrent.cpp).
void fill_recurrent_kernels_avx2(Kernels& k);
void fill_recurrent_kernels_avx512(Kernels& k);

// Picks the table for `isa` ("auto", "scalar", "avx2", "avx512"); throws sdk::error naming an unknown or
// unavailable choice.
Kernels select_kernels(const std::string& isa);

// Activation conversion (shared by all ISAs): F32 row -> the ActFormat row (act_row_bytes(f, n) bytes).
void convert_activations(ActFormat f, const float* x, void* y, int64_t n);

// Reference conversions for single blocks / rows, used by GET_ROWS, CAST, KV_WRITE.
void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t n);
// Dequantizes n elements (a multiple of the type's block) of `type` at src into dst. False: unsupported type.
bool dequantize_row(basalt_dtype type, const void* src, float* dst, int64_t n);
bool can_dequantize(basalt_dtype type) noexcept;
// Quantizes/converts n floats into `type` (F32, F16, BF16, Q8_0 here; more through basalt_blocks when linked).
bool quantize_row(basalt_dtype type, const float* src, void* dst, int64_t n);
bool can_quantize(basalt_dtype type) noexcept;

// Round half away from zero (what roundf does), as an int.
inline int round_away(float v) noexcept {
    return static_cast<int>(std::round(v));
}

}  // namespace basalt::cpu
