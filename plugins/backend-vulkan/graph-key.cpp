#include "graph-key.hpp"

#include <cstring>

namespace basalt::vk {

namespace {

uint64_t mix(uint64_t h, uint64_t v) noexcept {
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h;
}

}  // namespace

GraphKey graph_key(const basalt_graph* g) {
    GraphKey k;
    std::vector<uint64_t>& w = k.words;
    w.reserve(2 + g->n_tensors * 12 + g->n_nodes * 20);
    w.push_back(g->n_tensors);
    w.push_back(g->n_nodes);
    for (size_t i = 0; i < g->n_tensors; ++i) {
        const basalt_tensor* t = g->tensors[i];
        if (t == nullptr || t->struct_size < sizeof(basalt_tensor)) return GraphKey{};
        w.push_back(static_cast<uint64_t>(static_cast<uint32_t>(t->dtype)) << 32 | static_cast<uint32_t>(t->n_dims));
        for (int d = 0; d < 4; ++d) w.push_back(static_cast<uint64_t>(t->ne[d]));
        for (int d = 0; d < 4; ++d) w.push_back(static_cast<uint64_t>(t->nb[d]));
        w.push_back(reinterpret_cast<uintptr_t>(t->buffer));
        w.push_back(t->offset);
    }
    for (size_t i = 0; i < g->n_nodes; ++i) {
        const basalt_graph_node* n = g->nodes[i];
        if (n == nullptr || n->struct_size < sizeof(basalt_graph_node)) return GraphKey{};
        w.push_back(static_cast<uint64_t>(static_cast<uint32_t>(n->op)) << 32 | static_cast<uint32_t>(n->output));
        w.push_back(static_cast<uint64_t>(static_cast<uint32_t>(n->n_inputs)));
        for (int j = 0; j < BASALT_MAX_NODE_INPUTS; ++j) {
            w.push_back(j < n->n_inputs ? static_cast<uint64_t>(static_cast<uint32_t>(n->inputs[j])) : 0);
        }
        for (int j = 0; j < BASALT_MAX_NODE_PARAMS; ++j) {
            uint32_t f = 0;
            std::memcpy(&f, &n->fparams[j], sizeof(f));
            w.push_back(static_cast<uint64_t>(static_cast<uint32_t>(n->iparams[j])) << 32 | f);
        }
    }
    uint64_t h = 0;
    for (uint64_t v : w) h = mix(h, v);
    k.hash = h;
    return k;
}

}  // namespace basalt::vk
