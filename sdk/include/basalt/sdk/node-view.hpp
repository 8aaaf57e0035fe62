// What a backend's node checks and kernels see of a graph node: its tensors as views (dims beyond n_dims are 1)
// and helpers that fail naming the backend, the node and its op. Shared by the CPU and Vulkan backends, which
// derive their views and node contexts from these. Header-only; needs basalt_blocks (type traits).
#pragma once

#include <basalt/plugin_backend.h>
#include <basalt/blocks/dtype.hpp>
#include <basalt/sdk/op-decls.hpp>
#include <basalt/sdk/plugin.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace basalt::sdk {

// The name of a type id ("q8_0"), or "type N" for an id no block table knows. Thread-safe.
inline std::string type_label(basalt_dtype type) {
    const blocks::DtypeTraits* tr = blocks::dtype_traits(type);
    return tr != nullptr ? std::string(tr->name) : "type " + std::to_string(type);
}

// A tensor as an op sees it: type and layout, dims beyond n_dims set to 1. Backends derive their views from it.
struct TensorLayout {
    const basalt_tensor* t = nullptr;
    basalt_dtype type = 0;
    int64_t ne[4] = {1, 1, 1, 1};
    int64_t nb[4] = {0, 0, 0, 0};

    int64_t nrows() const noexcept { return ne[1] * ne[2] * ne[3]; }
    int64_t nelements() const noexcept { return ne[0] * nrows(); }
    // Bytes of one row of ne[0] elements (0 for an unknown type).
    int64_t row_bytes() const noexcept {
        const blocks::DtypeTraits* tr = blocks::dtype_traits(type);
        return tr != nullptr ? ne[0] / tr->block_size * static_cast<int64_t>(tr->type_size) : 0;
    }
    // True when the rows follow each other with no gap (row r at r * row_bytes()).
    bool rows_packed() const noexcept {
        const int64_t row = row_bytes();
        return (ne[1] == 1 || nb[1] == row) && (ne[2] == 1 || nb[2] == row * ne[1]) &&
               (ne[3] == 1 || nb[3] == row * ne[1] * ne[2]);
    }
    // "[a, b, c] type" for messages.
    std::string shape() const {
        std::string s = "[";
        const int nd = t != nullptr ? t->n_dims : 4;
        for (int i = 0; i < nd; ++i) s.append(i ? ", " : "").append(std::to_string(ne[i]));
        return s.append("] ").append(type_label(type));
    }
};

// A node under check with its inputs and output as View (derived from TensorLayout). `backend` is the label
// failures start with, e.g. "backend 'cpu'" (a string literal: borrowed). Not thread-safe; one per node.
template <class View>
struct NodeView {
    const char* backend = "backend";
    const basalt_graph_node* node = nullptr;
    size_t index = 0;  // position in the graph's node array
    int n_in = 0;
    View in[BASALT_MAX_NODE_INPUTS];
    View out;

    // "node 'blk.3.attn_q' (MATMUL)"; an unnamed node is "#index".
    std::string label() const {
        const std::string name = node != nullptr && node->name != nullptr ? node->name : "#" + std::to_string(index);
        return "node '" + name + "' (" + op_name(node != nullptr ? node->op : BASALT_OP_NONE) + ")";
    }
    // Throws sdk::error(status, "<backend>: <label>: <what>").
    [[noreturn]] void fail(basalt_status status, const std::string& what) const {
        throw error(status, std::string(backend) + ": " + label() + ": " + what);
    }
    // Fails unless t has the type: an unknown type id is invalid, a known other type unsupported.
    void expect_type(const View& t, const char* role, basalt_dtype type) const {
        if (t.type == type) return;
        fail(blocks::dtype_traits(t.type) == nullptr ? BASALT_ERR_INVALID_ARGUMENT : BASALT_ERR_UNSUPPORTED,
             std::string(role) + " has type " + type_label(t.type) + ", expected " + type_label(type));
    }
    // Fails unless a and b have the same ne.
    void expect_same_shape(const View& a, const char* ra, const View& b, const char* rb) const {
        for (int i = 0; i < 4; ++i) {
            if (a.ne[i] != b.ne[i]) {
                fail(BASALT_ERR_INVALID_ARGUMENT,
                     std::string(ra) + " " + a.shape() + " and " + rb + " " + b.shape() + " must have the same shape");
            }
        }
    }
    int ip(int i) const noexcept { return node->iparams[i]; }
    float fp(int i) const noexcept { return node->fparams[i]; }
    // The node's named parameter (ops.def), e.g. ip(op::rope::n_rot); the node must be of the parameter's op.
    int ip(IParam p) const noexcept { return node->iparams[p.index]; }
    float fp(FParam p) const noexcept { return node->fparams[p.index]; }
};

}  // namespace basalt::sdk
