// Builds a basalt_graph (the plain C op graph of plugin_backend.h) from C++: owns the tensors, nodes and
// names, and hands the backend pointer arrays that stay valid until the builder is cleared or destroyed.
#pragma once

#include <basalt/plugin_backend.h>

#include <deque>
#include <initializer_list>
#include <string>
#include <vector>

namespace basalt {

class GraphBuilder {
  public:
    // A contiguous tensor. buffer == nullptr: an intermediate the backend places.
    int32_t tensor(basalt_dtype type, std::initializer_list<int64_t> ne, const std::string& name,
                   basalt_buffer* buffer = nullptr, uint64_t offset = 0);
    int32_t tensor(basalt_dtype type, const std::vector<int64_t>& ne, const std::string& name,
                   basalt_buffer* buffer = nullptr, uint64_t offset = 0);
    // Adds a node writing `output` from `inputs`.
    void node(basalt_op op, const std::string& name, int32_t output, std::initializer_list<int32_t> inputs,
              std::initializer_list<int32_t> iparams = {}, std::initializer_list<float> fparams = {});
    // Adds a node with a new intermediate output of the given type and shape; returns the output.
    int32_t op(basalt_op op, const std::string& name, basalt_dtype type, std::initializer_list<int64_t> ne,
               std::initializer_list<int32_t> inputs, std::initializer_list<int32_t> iparams = {},
               std::initializer_list<float> fparams = {});

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
