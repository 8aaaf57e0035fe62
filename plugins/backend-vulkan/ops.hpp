// The ops of plugin_backend.h on Vulkan: per op a check (types, shapes, limits; unsupported cases fail with
// BASALT_ERR_UNSUPPORTED naming the node) and a record function (push constants, bindings, dispatch sizes),
// by family in ops-*.cpp; op-table.cpp maps each basalt_op to its pair. Push-constant layouts are documented at
// the top of each shader.
#pragma once

#include "backend.hpp"

namespace basalt::vk::ops {

// ops-matmul.cpp: MATMUL (matmul.comp, decode matvec.comp), MOE_MATMUL.
void check_matmul(const NodeCtx& c);
void record_matmul(NodeCtx& c);
void check_moe_matmul(const NodeCtx& c);
void record_moe_matmul(NodeCtx& c);

// ops-elementwise.cpp: ADD/MUL/SWIGLU/GEGLU (binary.comp), SCALE/SILU/GELU/GELU_ERF (unary.comp),
// RMS_NORM/LAYER_NORM/SOFTMAX (norm.comp, RMS_NORM fused with a following MUL), ROPE, STEER.
void check_binary(const NodeCtx& c);
void record_binary(NodeCtx& c);
void check_unary(const NodeCtx& c);
void record_unary(NodeCtx& c);
void check_rope(const NodeCtx& c);
void record_rope(NodeCtx& c);
void check_steer(const NodeCtx& c);
void record_steer(NodeCtx& c);

// ops-attention.cpp: ATTENTION (attention_keys.comp, attention.comp), KV_WRITE.
void check_attention(const NodeCtx& c);
void record_attention(NodeCtx& c);
void check_kv_write(const NodeCtx& c);
void record_kv_write(NodeCtx& c);

// ops-routing.cpp: TOPK, GATHER, MOE_COMBINE (routing.comp's modes), MOE_ROUTE.
void check_topk(const NodeCtx& c);
void check_gather(const NodeCtx& c);
void check_moe_combine(const NodeCtx& c);
void record_routing(NodeCtx& c);
void check_moe_route(const NodeCtx& c);
void record_moe_route(NodeCtx& c);

// ops-data.cpp: GET_ROWS, CAST, COPY.
void check_get_rows(const NodeCtx& c);
void record_get_rows(NodeCtx& c);
void check_cast(const NodeCtx& c);
void record_cast(NodeCtx& c);
void check_copy(const NodeCtx& c);
void record_copy(NodeCtx& c);

}  // namespace basalt::vk::ops
