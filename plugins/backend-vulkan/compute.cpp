// Graph execution: a graph is validated, replayed from a kept recording when its key matches, else its nodes
// are checked, RMS_NORM -> MUL pairs fused and reshaping COPY nodes elided, its intermediates placed, and it is
// recorded and submitted once; graph_compute returns when the device is done.
#include <basalt/sdk/op-contracts.hpp>

#include <vector>

#include "backend.hpp"
#include "common.hpp"

namespace basalt::vk {

void Backend::compute(const basalt_graph* g) {
    if (g == nullptr || g->struct_size < sizeof(basalt_graph)) {
        throw sdk::error(BASALT_ERR_INVALID_ARGUMENT,
                         std::string(kLabel) + ": graph is NULL or has a too small struct_size");
    }
    if ((g->n_tensors > 0 && g->tensors == nullptr) || (g->n_nodes > 0 && g->nodes == nullptr)) {
        throw sdk::error(BASALT_ERR_INVALID_ARGUMENT, std::string(kLabel) + ": graph has NULL tensor or node arrays");
    }
    check_validation("graph_compute");
    ++n_graphs_;
    // A graph with the key of a kept recording runs from its command buffer: no checks, planning or recording
    // (the key covers everything they depend on; recordings go when a buffer they might bind is freed).
    sdk::GraphKey key;
    if (reuse_ && !profile_) key = sdk::graph_key(g);
    if (replay(key)) return;
    const size_t nn = g->n_nodes;
    std::vector<NodeCtx> ctx;
    ctx.reserve(nn);
    for (size_t i = 0; i < nn; ++i) ctx.push_back(check_node(g, i));
    std::vector<bool> fused(nn, false);     // recorded by another node's dispatch, or not at all
    std::vector<bool> reshaped(nn, false);  // COPY nodes elided (their output aliases their input)
    mark_fused(g, ctx, fused, reshaped);
    place_intermediates(g, ctx, reshaped);
    if (nn == 0) return;
    record_and_submit(g, ctx, fused, std::move(key));
    if (profile_) read_profile(g);
    check_validation("graph_compute");
}

// RMS_NORM whose intermediate output only feeds the next node, a MUL by a weight row: one dispatch. The
// planner keeps the norm's input alive through the MUL (the fused dispatch reads it while writing the MUL's
// output, which must not land on it). COPY nodes that only reshape an intermediate run as nothing: the output
// takes the input's memory.
void Backend::mark_fused(const basalt_graph* g, std::vector<NodeCtx>& ctx, std::vector<bool>& fused,
                         std::vector<bool>& reshaped) const {
    const size_t nn = g->n_nodes;
    {
        std::vector<int> readers(g->n_tensors, 0);
        for (size_t i = 0; i < nn; ++i) {
            for (int k = 0; k < g->nodes[i]->n_inputs; ++k) ++readers[static_cast<size_t>(g->nodes[i]->inputs[k])];
        }
        for (size_t i = 0; i + 1 < nn; ++i) {
            const basalt_graph_node* a = g->nodes[i];
            const basalt_graph_node* b = g->nodes[i + 1];
            const auto t = static_cast<size_t>(a->output);
            if (a->op != BASALT_OP_RMS_NORM || b->op != BASALT_OP_MUL || b->inputs[0] != a->output ||
                b->inputs[1] == a->output || g->tensors[t]->buffer != nullptr || readers[t] != 1 || fused[i]) {
                continue;
            }
            const TensorView& w = ctx[i + 1].in[1];
            if (w.ne[0] != ctx[i].out.ne[0] || w.nrows() != 1 || w.nb[0] != 4 || !fusion_) continue;
            ctx[i].fused_mul = &ctx[i + 1];
            fused[i + 1] = true;
        }
    }
    for (size_t i = 0; i < nn; ++i) {
        if (fusion_ && sdk::contract::is_reshape(ctx[i]) && ctx[i].in[0].extent == ctx[i].out.extent) {
            fused[i] = true;
            reshaped[i] = true;
        }
    }
}

}  // namespace basalt::vk
