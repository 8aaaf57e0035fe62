// The op table: for every basalt_op its name, input arity and check/record pair (ops.hpp), indexed by the op's
// value. The one place that maps an op to its Vulkan implementation.
#include "ops.hpp"

namespace basalt::vk {
namespace {

using namespace ops;

const OpImpl kOps[BASALT_OP_COUNT] = {
    {"NONE", 0, 0, nullptr, nullptr},
    {"GET_ROWS", 2, 2, check_get_rows, record_get_rows},
    {"MATMUL", 2, 2, check_matmul, record_matmul},
    {"ADD", 2, 2, check_binary, record_binary},
    {"MUL", 2, 2, check_binary, record_binary},
    {"SCALE", 1, 1, check_unary, record_unary},
    {"RMS_NORM", 1, 1, check_unary, record_unary},
    {"LAYER_NORM", 1, 1, check_unary, record_unary},
    {"ROPE", 2, 2, check_rope, record_rope},
    {"SOFTMAX", 1, 1, check_unary, record_unary},
    {"SILU", 1, 1, check_unary, record_unary},
    {"GELU", 1, 1, check_unary, record_unary},
    {"GELU_ERF", 1, 1, check_unary, record_unary},
    {"SWIGLU", 2, 2, check_binary, record_binary},
    {"GEGLU", 2, 2, check_binary, record_binary},
    {"ATTENTION", 5, 8, check_attention, record_attention},
    {"KV_WRITE", 3, 5, check_kv_write, record_kv_write},
    {"TOPK", 1, 1, check_topk, record_routing},
    {"MOE_MATMUL", 3, 3, check_moe_matmul, record_moe_matmul},
    {"MOE_COMBINE", 2, 2, check_moe_combine, record_routing},
    {"GATHER", 2, 2, check_gather, record_routing},
    {"CAST", 1, 1, check_cast, record_cast},
    {"COPY", 1, 1, check_copy, record_copy},
    {"STEER", 3, 3, check_steer, record_steer},
    {"MOE_ROUTE", 1, 1, check_moe_route, record_moe_route},
};

}  // namespace

const OpImpl* op_impl(basalt_op op) noexcept {
    if (op <= BASALT_OP_NONE || op >= BASALT_OP_COUNT) return nullptr;
    return &kOps[op];
}

}  // namespace basalt::vk
