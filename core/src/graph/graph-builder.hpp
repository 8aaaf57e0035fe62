// Builds a basalt_graph (the plain C op graph of plugin_backend.h) from C++: owns the tensors, nodes and
// names, and hands the backend pointer arrays that stay valid until the builder is cleared or destroyed.
#pragma once

#include <basalt/plugin_backend.h>
#include <basalt/sdk/op-decls.hpp>

#include <deque>
#include <initializer_list>
#include <string>
#include <vector>

namespace basalt {

namespace op = sdk::op;  // the named parameters ops.def declares: op::rope::n_rot, op::attention::scale, ...

// One parameter of a node by its declared name ({op::rope::n_rot, 64}); parameters not given are 0. The builder
// refuses (INTERNAL) a parameter of another op than the node's.
struct NodeParam {
    template <typename T>
    NodeParam(sdk::IParam p, T v) : op(p.op), index(p.index), is_float(false), i(static_cast<int32_t>(v)) {}
    template <typename T>
    NodeParam(sdk::FParam p, T v) : op(p.op), index(p.index), is_float(true), f(static_cast<float>(v)) {}
    basalt_op op;
    int index;
    bool is_float;
    int32_t i = 0;
    float f = 0.f;
};

class GraphBuilder {
  public:
    // A contiguous tensor. buffer == nullptr: an intermediate the backend places.
    int32_t tensor(basalt_dtype type, std::initializer_list<int64_t> ne, const std::string& name,
                   basalt_buffer* buffer = nullptr, uint64_t offset = 0);
    int32_t tensor(basalt_dtype type, const std::vector<int64_t>& ne, const std::string& name,
                   basalt_buffer* buffer = nullptr, uint64_t offset = 0);
    // Adds a node writing `output` from `inputs`, with its parameters by name.
    void node(basalt_op op, const std::string& name, int32_t output, std::initializer_list<int32_t> inputs,
              std::initializer_list<NodeParam> params = {});
    // Adds a node with a new intermediate output of the given type and shape; returns the output.
    int32_t op(basalt_op op, const std::string& name, basalt_dtype type, std::initializer_list<int64_t> ne,
               std::initializer_list<int32_t> inputs, std::initializer_list<NodeParam> params = {});

    const basalt_tensor& at(int32_t index) const { return tensors_.at(static_cast<size_t>(index)); }
    int64_t ne(int32_t index, int dim) const { return at(index).ne[dim]; }
    // The graph; valid until the builder changes.
    const basalt_graph& graph();
    size_t n_nodes() const { return nodes_.size(); }
    void clear();

  private:
    std::deque<basalt_tensor> tensors_;
    std::deque<basalt_graph_node> nodes_;
    std::deque<std::string> names_;  // tensor and node names (stable addresses)
    std::vector<const basalt_tensor*> tensor_ptrs_;
    std::vector<const basalt_graph_node*> node_ptrs_;
    basalt_graph graph_{};
};

}  // namespace basalt
