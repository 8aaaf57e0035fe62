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

// Calls emit(word) for each key word of `g` (its arrays non-NULL, checked by the caller) while emit returns true.
// Returns false when emit stopped it or the graph cannot be keyed (a NULL or short struct). Reads g only;
// thread-safe as far as emit is.
template <typename Emit>
bool visit_graph_key(const basalt_graph* g, Emit&& emit) {
    if (!emit(g->n_tensors) || !emit(g->n_nodes)) return false;
    for (size_t i = 0; i < g->n_tensors; ++i) {
        const basalt_tensor* t = g->tensors[i];
        if (t == nullptr || t->struct_size < sizeof(basalt_tensor)) return false;
        if (!emit(static_cast<uint64_t>(static_cast<uint32_t>(t->dtype)) << 32 | static_cast<uint32_t>(t->n_dims))) {
            return false;
        }
        for (int d = 0; d < 4; ++d) {
            if (!emit(static_cast<uint64_t>(t->ne[d])) || !emit(static_cast<uint64_t>(t->nb[d]))) return false;
        }
        if (!emit(reinterpret_cast<uintptr_t>(t->buffer)) || !emit(t->offset)) return false;
    }
    for (size_t i = 0; i < g->n_nodes; ++i) {
        const basalt_graph_node* n = g->nodes[i];
        if (n == nullptr || n->struct_size < sizeof(basalt_graph_node)) return false;
        if (!emit(static_cast<uint64_t>(static_cast<uint32_t>(n->op)) << 32 | static_cast<uint32_t>(n->output)) ||
            !emit(static_cast<uint64_t>(static_cast<uint32_t>(n->n_inputs)))) {
            return false;
        }
        for (int j = 0; j < BASALT_MAX_NODE_INPUTS; ++j) {
            if (!emit(j < n->n_inputs ? static_cast<uint64_t>(static_cast<uint32_t>(n->inputs[j])) : 0)) return false;
        }
        for (int j = 0; j < BASALT_MAX_NODE_PARAMS; ++j) {
            uint32_t f = 0;
            std::memcpy(&f, &n->fparams[j], sizeof(f));
            if (!emit(static_cast<uint64_t>(static_cast<uint32_t>(n->iparams[j])) << 32 | f)) return false;
        }
    }
    return true;
}

// Writes the key words of `g` into `words`, reusing its storage. Returns false, leaving `words` empty, when the
// graph cannot be keyed. Pure; thread-safe.
inline bool graph_key_words(const basalt_graph* g, std::vector<uint64_t>& words) {
    words.clear();
    words.reserve(2 + g->n_tensors * 11 + g->n_nodes * (2 + BASALT_MAX_NODE_INPUTS + BASALT_MAX_NODE_PARAMS));
    if (visit_graph_key(g, [&](uint64_t w) {
            words.push_back(w);
            return true;
        })) {
        return true;
    }
    words.clear();
    return false;
}

// True when `g`'s key words are `words` (stops at the first difference; never allocates). Pure; thread-safe.
inline bool graph_key_matches(const basalt_graph* g, const std::vector<uint64_t>& words) {
    size_t i = 0;
    const bool all = visit_graph_key(g, [&](uint64_t w) { return i < words.size() && words[i++] == w; });
    return all && i == words.size();
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
