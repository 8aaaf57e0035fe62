// The ops of plugin_backend.h on Vulkan: per op of ops.def a check (types, shapes, limits; unsupported cases fail
// with BASALT_ERR_UNSUPPORTED naming the node) and a record function (push constants, bindings, dispatch sizes),
// named check_<id> and record_<id> after the op's id in ops.def, by family in ops-*.cpp; op-table.cpp generates
// the table from ops.def, so a declared op without them fails to compile. Push-constant structs: shaders/common/
// push-constants.h, shared with the shaders.
#pragma once

#include "backend.hpp"

namespace basalt::vk::ops {

// op-helpers.cpp: the check of ops that need only their contract (sdk::contract::check) and bindings that fit.
void check_contract(const NodeCtx& c);

// ops-matmul.cpp: MATMUL (matmul.comp, decode matvec.comp), MOE_MATMUL.
void check_matmul(const NodeCtx& c);
void record_matmul(NodeCtx& c);
void check_moe_matmul(const NodeCtx& c);
void record_moe_matmul(NodeCtx& c);

// ops-elementwise.cpp: ADD/MUL/SWIGLU/GEGLU (binary.comp), SCALE/SILU/GELU/GELU_ERF/TANH/SIGMOID (unary.comp),
// RMS_NORM/LAYER_NORM/SOFTMAX (norm.comp, RMS_NORM fused with a following MUL), ROPE, STEER.
inline constexpr auto check_add = &check_contract;
void record_add(NodeCtx& c);
inline constexpr auto check_mul = &check_contract;
void record_mul(NodeCtx& c);
inline constexpr auto check_swiglu = &check_contract;
void record_swiglu(NodeCtx& c);
inline constexpr auto check_geglu = &check_contract;
void record_geglu(NodeCtx& c);
inline constexpr auto check_scale = &check_contract;
void record_scale(NodeCtx& c);
inline constexpr auto check_silu = &check_contract;
void record_silu(NodeCtx& c);
inline constexpr auto check_gelu = &check_contract;
void record_gelu(NodeCtx& c);
inline constexpr auto check_gelu_erf = &check_contract;
void record_gelu_erf(NodeCtx& c);
inline constexpr auto check_tanh = &check_contract;
void record_tanh(NodeCtx& c);
inline constexpr auto check_sigmoid = &check_contract;
void record_sigmoid(NodeCtx& c);
inline constexpr auto check_rms_norm = &check_contract;
void record_rms_norm(NodeCtx& c);
inline constexpr auto check_layer_norm = &check_contract;
void record_layer_norm(NodeCtx& c);
inline constexpr auto check_softmax = &check_contract;
void record_softmax(NodeCtx& c);
inline constexpr auto check_rope = &check_contract;
void record_rope(NodeCtx& c);
void check_steer(const NodeCtx& c);
void record_steer(NodeCtx& c);

// ops-attention.cpp: ATTENTION (attention_keys.comp, attention.comp), KV_WRITE.
void check_attention(const NodeCtx& c);
void record_attention(NodeCtx& c);
void check_kv_write(const NodeCtx& c);
void record_kv_write(NodeCtx& c);

// ops-routing.cpp: TOPK, GATHER, MOE_COMBINE (routing.comp's modes), MOE_ROUTE.
inline constexpr auto check_topk = &check_contract;
void record_topk(NodeCtx& c);
inline constexpr auto check_gather = &check_contract;
void record_gather(NodeCtx& c);
inline constexpr auto check_moe_combine = &check_contract;
void record_moe_combine(NodeCtx& c);
void check_moe_route(const NodeCtx& c);
void record_moe_route(NodeCtx& c);

// ops-data.cpp: GET_ROWS, CAST, COPY.
void check_get_rows(const NodeCtx& c);
void record_get_rows(NodeCtx& c);
void check_cast(const NodeCtx& c);
void record_cast(NodeCtx& c);
inline constexpr auto check_copy = &check_contract;
void record_copy(NodeCtx& c);

// SOFTPLUS (unary.comp, ops-elementwise.cpp); ops-recurrent.cpp: SLICE (slice.comp), SSM_CONV (ssm_conv.comp),
// GATED_DELTA (gated_delta.comp; its state read and written in place).
inline constexpr auto check_softplus = &check_contract;
void record_softplus(NodeCtx& c);
inline constexpr auto check_slice = &check_contract;
void record_slice(NodeCtx& c);
void check_ssm_conv(const NodeCtx& c);
void record_ssm_conv(NodeCtx& c);
void check_gated_delta(const NodeCtx& c);
void record_gated_delta(NodeCtx& c);

// SWIGLU_OAI (binary.comp, ops-elementwise.cpp; since 1.6): gpt-oss's clamped SwiGLU.
inline constexpr auto check_swiglu_oai = &check_contract;
void record_swiglu_oai(NodeCtx& c);

}  // namespace basalt::vk::ops
