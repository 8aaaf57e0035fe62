#include "graph/graph-builder.hpp"

#include "model/dtype.hpp"
#include "support/error.hpp"

namespace basalt {

int32_t GraphBuilder::tensor(basalt_dtype type, std::initializer_list<int64_t> ne, const std::string& name,
                             basalt_buffer* buffer, uint64_t offset) {
    return tensor(type, std::vector<int64_t>(ne), name, buffer, offset);
}

int32_t GraphBuilder::tensor(basalt_dtype type, const std::vector<int64_t>& ne, const std::string& name,
                             basalt_buffer* buffer, uint64_t offset) {
    const DtypeTraits* traits = dtype_traits(type);
    if (traits == nullptr || ne.empty() || ne.size() > 4) {
        fail(BASALT_ERR_INTERNAL, "graph tensor '{}': bad type {} or rank {}", name, type, ne.size());
    }
    basalt_tensor t{};
    t.struct_size = sizeof(t);
    t.dtype = type;
    t.n_dims = static_cast<int32_t>(ne.size());
    for (int d = 0; d < 4; ++d) t.ne[d] = d < t.n_dims ? ne[static_cast<size_t>(d)] : 1;
    // Strides: row bytes for dim 1 (block-aware), then products.
    t.nb[0] = static_cast<int64_t>(traits->type_size);
    const auto row = dtype_bytes(type, static_cast<uint64_t>(t.ne[0]));
    if (!row)
        fail(BASALT_ERR_INTERNAL, "graph tensor '{}': row of {} is not whole blocks of {}", name, t.ne[0],
             traits->name);
    t.nb[1] = static_cast<int64_t>(*row);
    t.nb[2] = t.nb[1] * t.ne[1];
    t.nb[3] = t.nb[2] * t.ne[2];
    t.buffer = buffer;
    t.offset = offset;
    names_.push_back(name);
    t.name = names_.back().c_str();
    tensors_.push_back(t);
    return static_cast<int32_t>(tensors_.size() - 1);
}

void GraphBuilder::node(basalt_op op, const std::string& name, int32_t output, std::initializer_list<int32_t> inputs,
                        std::initializer_list<NodeParam> params) {
    if (inputs.size() > BASALT_MAX_NODE_INPUTS) fail(BASALT_ERR_INTERNAL, "graph node '{}': too many inputs", name);
    basalt_graph_node n{};
    n.struct_size = sizeof(n);
    n.op = op;
    names_.push_back(name);
    n.name = names_.back().c_str();
    n.output = output;
    n.n_inputs = static_cast<int32_t>(inputs.size());
    int i = 0;
    for (int32_t in : inputs) n.inputs[i++] = in;
    for (const NodeParam& p : params) {
        if (p.op != op || p.index < 0 || p.index >= BASALT_MAX_NODE_PARAMS) {
            fail(BASALT_ERR_INTERNAL, "graph node '{}' ({}): a parameter of {}", name, sdk::op_name(op),
                 sdk::op_name(p.op));
        }
        if (p.is_float) {
            n.fparams[p.index] = p.f;
        } else {
            n.iparams[p.index] = p.i;
        }
    }
    nodes_.push_back(n);
}

int32_t GraphBuilder::op(basalt_op op, const std::string& name, basalt_dtype type, std::initializer_list<int64_t> ne,
                         std::initializer_list<int32_t> inputs, std::initializer_list<NodeParam> params) {
    const int32_t out = tensor(type, ne, name);
    node(op, name, out, inputs, params);
    return out;
}

const basalt_graph& GraphBuilder::graph() {
    tensor_ptrs_.clear();
    for (const auto& t : tensors_) tensor_ptrs_.push_back(&t);
    node_ptrs_.clear();
    for (const auto& n : nodes_) node_ptrs_.push_back(&n);
    graph_.struct_size = sizeof(graph_);
    graph_.n_tensors = tensor_ptrs_.size();
    graph_.tensors = tensor_ptrs_.data();
    graph_.n_nodes = node_ptrs_.size();
    graph_.nodes = node_ptrs_.data();
    return graph_;
}

void GraphBuilder::clear() {
    tensors_.clear();
    nodes_.clear();
    names_.clear();
    tensor_ptrs_.clear();
    node_ptrs_.clear();
    graph_ = {};
}

}  // namespace basalt
