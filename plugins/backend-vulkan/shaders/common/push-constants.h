// The push constants of every shader, one struct per shader (or family), read by both languages: the shaders
// include it through common.glsl and pick their struct with PUSH_CONSTANTS(<struct>); the plugin's C++ (op-helpers.hpp)
// fills the same struct and pushes its bytes. Every field is 4 bytes (uint or float, or a struct of them), so
// std430 (the push-constant block's layout) and C++ lay them out alike; the C++ part at the end checks the sizes
// against the 128-byte block and pins key offsets. Fields carrying a node parameter take its name in ops.def.
// A "TensorRef" is a tensor as a shader indexes it: its byte offset in its binding, ne1, ne2 and byte strides
// nb1..nb3 (row r counts rows with i1 fastest; common.glsl's tensor_row gives its byte offset).
#ifndef BASALT_VK_PUSH_CONSTANTS_H
#define BASALT_VK_PUSH_CONSTANTS_H

#ifdef __cplusplus
#include <cstddef>
#include <cstdint>
namespace basalt::vk::push {
using uint = std::uint32_t;
#endif

struct TensorRef {
    uint offset;
    uint ne1;
    uint ne2;
    uint nb1;
    uint nb2;
    uint nb3;
};

// unary.comp: SCALE (0), SILU (1), GELU (2), GELU_ERF (3), TANH (4), SIGMOID (5), SOFTPLUS (6) over n x rows
// elements.
struct UnaryPush {
    uint op;
    uint n;
    uint rows;
    float factor;  // SCALE's factor
    TensorRef src;
    TensorRef dst;
};

// binary.comp: ADD (0), MUL (1), SWIGLU (2), GEGLU (3), SWIGLU_OAI (4: alpha, limit); broadcast != 0: b is one
// row used for every row of a.
struct BinaryPush {
    uint op;
    uint n;
    uint rows;
    uint broadcast;
    TensorRef a;
    TensorRef b;
    TensorRef dst;
    float alpha;
    float limit;
};

// norm.comp: RMS_NORM (0), LAYER_NORM (1), SOFTMAX (2), one workgroup per row. fused_mul != 0: an RMS_NORM whose
// following MUL by a weight row (binding 2 at byte weight_offset) is done in the same dispatch; dst is the MUL's.
struct NormPush {
    uint op;
    uint n;
    uint rows;
    float eps;    // RMS_NORM's and LAYER_NORM's eps
    float scale;  // SOFTMAX's scale
    TensorRef src;
    TensorRef dst;
    uint fused_mul;
    uint weight_offset;
};

// rope.comp: x [head_dim, n_head, tokens] (tokens split as x_ne2 x ne3), positions one I32 per token.
struct RopePush {
    uint head_dim;
    uint n_head;
    uint tokens;
    uint mode;
    uint n_rot;
    float theta_step;  // -2 log2(freq_base) / n_rot
    float freq_scale;
    uint x_offset;
    uint x_nb1;
    uint x_nb2;
    uint x_nb3;
    uint x_ne2;
    uint dst_offset;
    uint dst_nb1;
    uint dst_nb2;
    uint dst_nb3;
    uint positions_offset;
    // rope_scaled (since 1.4): frequency factors (binding 3; has_factors 0: none), YaRN's ramp and the cos/sin
    // magnitude, computed on the host with sdk/rope-yarn.hpp.
    uint has_factors;
    uint factors_offset;
    float ext_factor;
    float corr_low;
    float corr_high;
    float mscale;
};

// steer.comp: dst row t = x row t + table row slots[t] (a slot in 0..n_slots-1), else x row t.
struct SteerPush {
    uint n;
    uint rows;
    uint n_slots;
    TensorRef x;
    TensorRef table;
    uint slots_offset;
    TensorRef dst;
};

// matmul.comp and matvec.comp: dst[n, m] = dot(W row n, x column m) for rows first_row.. of a row window of W
// (w_offset: the window's first row). moe != 0 (MOE_MATMUL, matmul.comp): column c uses expert ids[c] (clamped to
// n_expert - 1) at expert_stride bytes per expert; shared_x != 0: every expert of token c / k reads x column c / k.
struct MatmulPush {
    uint k;  // K: dot length
    uint n;  // N: output rows in this dispatch
    uint m;  // M: columns
    uint w_offset;
    uint w_nb1;
    TensorRef x;
    TensorRef dst;
    uint first_row;
    uint moe;
    uint ids_offset;
    uint experts_per_token;
    uint expert_stride;
    uint shared_x;
    uint n_expert;
    uint tile;    // columns per workgroup (matmul.comp)
    uint x_vec4;  // != 0: x rows start on 16 bytes (vec4 loads)
};

// get_rows.comp: dst column i = dequant(src row ids[i]) for ids in [first_row, end_row) (row windows of tables
// larger than one binding); last_window != 0: ids outside 0..table_rows-1 give zeros.
struct GetRowsPush {
    uint n;
    uint n_ids;
    uint src_type;
    TensorRef src;
    uint ids_offset;
    TensorRef dst;
    uint first_row;
    uint end_row;
    uint last_window;
    uint table_rows;
};

// convert.comp (CAST) and kv_write.comp (KV_WRITE: row r goes to cache row slots[r] when below cache_rows).
struct ConvertPush {
    uint n;
    uint rows;
    uint src_type;
    uint dst_type;
    TensorRef src;
    TensorRef dst;
    uint slots_offset;
    uint cache_rows;
};

// copy.comp (COPY): total units of unit_bytes bytes, in rows of src_row_units and dst_row_units.
struct CopyPush {
    uint total;
    uint unit_bytes;
    uint src_row_units;
    uint dst_row_units;
    TensorRef src;
    TensorRef dst;
};

// routing.comp: n values per row of a, rows rows (tokens), k picks per row (TOPK's k, GATHER's ids per row,
// MOE_COMBINE's and MOE_ROUTE's experts per token); b: GATHER's ids, MOE_COMBINE's weights.
struct RoutingPush {
    uint n;
    uint rows;
    uint k;
    TensorRef a;
    TensorRef dst;
    TensorRef b;
    uint renormalise;  // GATHER
    uint capacity;     // MOE_ROUTE
    uint overflow;     // MOE_ROUTE: 0 drop, 1 reroute
    uint output_kind;  // MOE_ROUTE: 0 expert ids, 1 weights, 2 status
};

// attention.comp and attention_keys.comp: the fields both variants take. Per (head h, query token t): q at
// q_offset + h q_nb1 + t q_nb2; K/V cache rows (slots, below k_rows) of k_nb1 / v_nb1 bytes, kv head h / group at
// k_head_bytes / v_head_bytes; query table (list, position) pairs; slot lists of n_visible (slot, position) pairs.
#define BASALT_ATTENTION_FIELDS \
    uint hd_k;                  \
    uint hd_v;                  \
    uint n_head;                \
    uint group;                 \
    uint n_visible;             \
    uint k_type;                \
    uint v_type;                \
    uint q_offset;              \
    uint q_nb1;                 \
    uint q_nb2;                 \
    uint k_offset;              \
    uint k_nb1;                 \
    uint v_offset;              \
    uint v_nb1;                 \
    uint lists_offset;          \
    uint queries_offset;        \
    uint dst_offset;            \
    uint dst_head_stride;       \
    uint dst_token_stride;      \
    uint window;                \
    uint sinks;                 \
    float scale;                \
    float soft_cap;             \
    uint k_rows;                \
    uint n_lists;               \
    uint k_head_bytes;          \
    uint v_head_bytes;

// The plain variants: flags bit 0 not causal, bit 1 relative position bias (binding 6, [n_head, 2 bias_radius + 1]
// at byte bias_offset), bit 2 learned sink logits (binding 7, [n_head] at byte sink_offset; gpt-oss).
struct AttentionPush {
    BASALT_ATTENTION_FIELDS
    uint flags;
    uint bias_radius;
    uint bias_offset;
    uint sink_offset;
};

// The "_cp" variants (sink keys at cache positions, always causal, no bias): ROPE's parameters for the sinks'
// rotation (cache_positions.glsl).
struct AttentionSinksPush {
    BASALT_ATTENTION_FIELDS
    uint rope_mode;
    uint n_rot;
    float theta_step;  // -2 log2(freq_base) / n_rot
    float freq_scale;
};

// slice.comp: dst row r = src row r from element `offset` on, n elements.
struct SlicePush {
    uint n;
    uint rows;
    uint offset;
    TensorRef src;
    TensorRef dst;
};

// ssm_conv.comp (SSM_CONV, packed tensors; byte offsets in their bindings): one invocation per channel.
struct SsmConvPush {
    uint channels;
    uint tokens;
    uint kernel;
    uint x_offset;
    uint w_offset;
    uint state_offset;
    uint state_nb1;  // bytes per state slot
    uint rows_offset;
    uint dst_offset;
};

// gated_delta.comp (GATED_DELTA's recurrent form: one invocation per row of a value head's state matrix) and
// gated_delta_chunked.comp (its chunked form: one workgroup per value head and block of state rows); packed tensors,
// byte offsets in their bindings.
struct GatedDeltaPush {
    uint dk;
    uint nk;
    uint dv;
    uint nv;
    uint tokens;
    uint q_offset;
    uint k_offset;
    uint v_offset;
    uint g_offset;
    uint beta_offset;
    uint state_offset;
    uint state_nb1;  // bytes per state slot
    uint rows_offset;
    uint dst_offset;
    uint chunk;       // the chunked form's tokens per chunk (1 < chunk <= its maximum); unused by the recurrent form
    uint chunk_from;  // 0: every token; F > 0: the chunked form runs the tokens of slots with F tokens or more in
                      // the node, the recurrent form the others (both are recorded, each skips the other's slots)
    uint kq_vec4;     // the chunked form: q's and k's rows start on 16 bytes in their bindings (vec4 loads)
};

#ifdef __cplusplus
inline constexpr std::size_t kPushBytes = 128;  // the pipeline layout's push-constant range

// Each struct is a whole number of 4-byte fields (no padding) that fits the push-constant block.
#define BASALT_PUSH_FITS(T, words)                                                      \
    static_assert(sizeof(T) == (words)*4 && sizeof(T) <= kPushBytes && alignof(T) == 4, \
                  #T " must be " #words " 4-byte fields, at most 128 bytes")
BASALT_PUSH_FITS(TensorRef, 6);
BASALT_PUSH_FITS(UnaryPush, 16);
BASALT_PUSH_FITS(BinaryPush, 24);
BASALT_PUSH_FITS(NormPush, 19);
BASALT_PUSH_FITS(RopePush, 23);
BASALT_PUSH_FITS(SteerPush, 22);
BASALT_PUSH_FITS(MatmulPush, 26);
BASALT_PUSH_FITS(GetRowsPush, 20);
BASALT_PUSH_FITS(ConvertPush, 18);
BASALT_PUSH_FITS(CopyPush, 16);
BASALT_PUSH_FITS(RoutingPush, 25);
BASALT_PUSH_FITS(AttentionPush, 31);
BASALT_PUSH_FITS(AttentionSinksPush, 31);
BASALT_PUSH_FITS(SlicePush, 15);
BASALT_PUSH_FITS(SsmConvPush, 9);
BASALT_PUSH_FITS(GatedDeltaPush, 17);
#undef BASALT_PUSH_FITS
static_assert(offsetof(UnaryPush, src) == 16 && offsetof(BinaryPush, dst) == 64 && offsetof(NormPush, fused_mul) == 68);
static_assert(offsetof(MatmulPush, first_row) == 68 && offsetof(MatmulPush, x_vec4) == 100);
static_assert(offsetof(RoutingPush, renormalise) == 84 && offsetof(GetRowsPush, first_row) == 64);
static_assert(offsetof(AttentionPush, scale) == 84 && offsetof(AttentionPush, flags) == 108);
static_assert(offsetof(AttentionSinksPush, rope_mode) == 108 && offsetof(AttentionSinksPush, freq_scale) == 120);
}  // namespace basalt::vk::push
#endif

#endif
