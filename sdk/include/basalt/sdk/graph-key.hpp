// The shape key of a graph: everything a backend's plan for it depends on (ops, parameters, tensor types,
// shapes, strides, buffers and offsets), nothing it does not (names, the data in the buffers). Backends key what
// they keep between graph_compute calls on it: the Vulkan backend its recorded command buffers, the CPU backend
// its checked and planned nodes.
#pragma once

#include <basalt/plugin_backend.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace basalt::sdk {

// Writes the key words of `g` (its arrays non-NULL, checked by the caller) into `words`, reusing its storage.
// Returns false, leaving `words` empty, when the graph cannot be keyed (a NULL or short struct). Pure; thread-safe.
inline bool graph_key_words(const basalt_graph* g, std::vector<uint64_t>& words) {
    words.clear();
    words.reserve(2 + g->n_tensors * 11 + g->n_nodes * (2 + BASALT_MAX_NODE_INPUTS + BASALT_MAX_NODE_PARAMS));
    words.push_back(g->n_tensors);
    words.push_back(g->n_nodes);
    for (size_t i = 0; i < g->n_tensors; ++i) {
        const basalt_tensor* t = g->tensors[i];
        if (t == nullptr || t->struct_size < sizeof(basalt_tensor)) {
            words.clear();
            return false;
        }
        words.push_back(static_cast<uint64_t>(static_cast<uint32_t>(t->dtype)) << 32 |
                        static_cast<uint32_t>(t->n_dims));
        for (int d = 0; d < 4; ++d) words.push_back(static_cast<uint64_t>(t->ne[d]));
        for (int d = 0; d < 4; ++d) words.push_back(static_cast<uint64_t>(t->nb[d]));
        words.push_back(reinterpret_cast<uintptr_t>(t->buffer));
        words.push_back(t->offset);
    }
    for (size_t i = 0; i < g->n_nodes; ++i) {
        const basalt_graph_node* n = g->nodes[i];
        if (n == nullptr || n->struct_size < sizeof(basalt_graph_node)) {
            words.clear();
            return false;
        }
        words.push_back(static_cast<uint64_t>(static_cast<uint32_t>(n->op)) << 32 | static_cast<uint32_t>(n->output));
        words.push_back(static_cast<uint64_t>(static_cast<uint32_t>(n->n_inputs)));
        for (int j = 0; j < BASALT_MAX_NODE_INPUTS; ++j) {
            words.push_back(j < n->n_inputs ? static_cast<uint64_t>(static_cast<uint32_t>(n->inputs[j])) : 0);
        }
        for (int j = 0; j < BASALT_MAX_NODE_PARAMS; ++j) {
            uint32_t f = 0;
            std::memcpy(&f, &n->fparams[j], sizeof(f));
            words.push_back(static_cast<uint64_t>(static_cast<uint32_t>(n->iparams[j])) << 32 | f);
        }
    }
    return true;
}

// A key with its hash, for backends that keep several plans.
struct GraphKey {
    std::vector<uint64_t> words;  // empty: the graph cannot be keyed: plan it afresh
    uint64_t hash = 0;

    bool operator==(const GraphKey& o) const noexcept { return hash == o.hash && words == o.words; }
};

// Builds the key of `g` (its arrays non-NULL, checked by the caller). Pure; thread-safe.
inline GraphKey graph_key(const basalt_graph* g) {
    GraphKey k;
    if (!graph_key_words(g, k.words)) return k;
    uint64_t h = 0;
    for (uint64_t v : k.words) h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    k.hash = h;
    return k;
}

}  // namespace basalt::sdk
