// The op table, generated from ops.def: for every declared op its input arity and its check/record pair
// (ops.hpp's check_<id> and record_<id>), in value order. The one place that maps an op to its Vulkan
// implementation; an op declared without them fails to compile here.
#include "ops.hpp"

namespace basalt::vk {
namespace {

using namespace ops;

// One row per op of ops.def, in value order (op_impl indexes it by value - 1).
constexpr OpImpl kOps[] = {
#define BASALT_OP(NAME, id, min_inputs, max_inputs, contract) \
    {BASALT_OP_##NAME, min_inputs, max_inputs, check_##id, record_##id},
#include <basalt/sdk/ops.def>
};
static_assert(sizeof(kOps) / sizeof(kOps[0]) == BASALT_OP_COUNT - 1, "the Vulkan op table covers every declared op");

}  // namespace

const OpImpl* op_impl(basalt_op op) noexcept {
    if (op <= BASALT_OP_NONE || op >= BASALT_OP_COUNT) return nullptr;
    return &kOps[op - 1];
}

}  // namespace basalt::vk
