// What ops.def declares, as C++: each op's name and input arity (op_decl, op_name), and its parameters by name
// instead of by position: sdk::op::<id>::<param> is a typed slot (IParam or FParam) read with get(node, slot) or a
// node view's ip(slot) / fp(slot) and written with set(node, slot, value). The order of the declaration against
// plugin_backend.h's values and BASALT_OP_COUNT is checked here at compile time. Header-only, constexpr tables;
// every function is thread-safe.
#pragma once

#include <basalt/plugin_backend.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace basalt::sdk {

// One op as ops.def declares it.
struct OpDecl {
    basalt_op op;
    const char* name;  // "MATMUL" (static storage)
    int min_inputs;
    int max_inputs;
};

// The declared ops, in value order: kOpDecls[i].op == i + 1 (BASALT_OP_NONE is not an op).
inline constexpr OpDecl kOpDecls[] = {
#define BASALT_OP(NAME, id, min_inputs, max_inputs, contract) {BASALT_OP_##NAME, #NAME, min_inputs, max_inputs},
#include <basalt/sdk/ops.def>
};

// Op values the declaration covers: BASALT_OP_NONE and one per declared op.
inline constexpr int kOpValues = 1 + static_cast<int>(sizeof(kOpDecls) / sizeof(kOpDecls[0]));

namespace detail {
constexpr bool decls_in_value_order() {
    for (size_t i = 0; i < sizeof(kOpDecls) / sizeof(kOpDecls[0]); ++i) {
        if (kOpDecls[i].op != static_cast<basalt_op>(i + 1)) return false;
        if (kOpDecls[i].min_inputs < 0 || kOpDecls[i].min_inputs > kOpDecls[i].max_inputs ||
            kOpDecls[i].max_inputs > BASALT_MAX_NODE_INPUTS) {
            return false;
        }
    }
    return true;
}
}  // namespace detail

static_assert(BASALT_OP_COUNT == kOpValues,
              "ops.def must declare every op of plugin_backend.h: BASALT_OP_COUNT differs from the declared count");
static_assert(detail::decls_in_value_order(),
              "ops.def must list the ops in the order of their values, with 0 <= min_inputs <= max_inputs <= 8");

// The declaration of an op, or nullptr for BASALT_OP_NONE and values no op has. Thread-safe.
constexpr const OpDecl* op_decl(basalt_op op) noexcept {
    return op > BASALT_OP_NONE && op < BASALT_OP_COUNT ? &kOpDecls[op - 1] : nullptr;
}

// Returns the name of an op of plugin_backend.h ("MATMUL"), or "op N" for a value it does not know. Thread-safe.
inline std::string op_name(basalt_op op) {
    const OpDecl* d = op_decl(op);
    return d != nullptr ? std::string(d->name) : "op " + std::to_string(op);
}

// A named integer parameter of an op: iparams[index] of its nodes.
struct IParam {
    basalt_op op;
    int index;
    const char* name;
};

// A named float parameter of an op: fparams[index] of its nodes.
struct FParam {
    basalt_op op;
    int index;
    const char* name;
};

// Reads or writes a node's named parameter (the node must be of the parameter's op). Thread-safe for distinct nodes.
constexpr int32_t get(const basalt_graph_node& n, IParam p) noexcept {
    return n.iparams[p.index];
}
constexpr float get(const basalt_graph_node& n, FParam p) noexcept {
    return n.fparams[p.index];
}
constexpr void set(basalt_graph_node& n, IParam p, int32_t v) noexcept {
    n.iparams[p.index] = v;
}
constexpr void set(basalt_graph_node& n, FParam p, float v) noexcept {
    n.fparams[p.index] = v;
}

// sdk::op::<id>::kOp is the op's value; sdk::op::<id>::<name> its parameters (e.g. op::rope::n_rot).
namespace op {
#define BASALT_OP(NAME, id, min_inputs, max_inputs, contract) \
    namespace id {                                            \
    inline constexpr basalt_op kOp = BASALT_OP_##NAME;        \
    }
#define BASALT_OP_IPARAM(id, index, name, meaning)   \
    namespace id {                                   \
    inline constexpr IParam name{kOp, index, #name}; \
    }
#define BASALT_OP_FPARAM(id, index, name, meaning)   \
    namespace id {                                   \
    inline constexpr FParam name{kOp, index, #name}; \
    }
#include <basalt/sdk/ops.def>
}  // namespace op

// Every declared parameter, for tools and docs: kind 'i' (iparams) or 'f' (fparams).
struct ParamDecl {
    basalt_op op;
    char kind;
    int index;
    const char* name;
    const char* meaning;
};

inline constexpr ParamDecl kParamDecls[] = {
#define BASALT_OP_IPARAM(id, index, name, meaning) {op::id::kOp, 'i', index, #name, meaning},
#define BASALT_OP_FPARAM(id, index, name, meaning) {op::id::kOp, 'f', index, #name, meaning},
#include <basalt/sdk/ops.def>
};

namespace detail {
constexpr bool same_name(const char* a, const char* b) {
    while (*a != '\0' && *a == *b) ++a, ++b;
    return *a == *b;
}
constexpr bool params_distinct() {
    const size_t n = sizeof(kParamDecls) / sizeof(kParamDecls[0]);
    for (size_t i = 0; i < n; ++i) {
        const ParamDecl& a = kParamDecls[i];
        if (a.index < 0 || a.index >= BASALT_MAX_NODE_PARAMS) return false;
        for (size_t j = i + 1; j < n; ++j) {
            const ParamDecl& b = kParamDecls[j];
            if (a.op == b.op && ((a.kind == b.kind && a.index == b.index) || same_name(a.name, b.name))) return false;
        }
    }
    return true;
}
}  // namespace detail

static_assert(detail::params_distinct(),
              "ops.def: a parameter index is outside 0..7, or two parameters of one op share a slot or a name");

}  // namespace basalt::sdk
