#include "exec/step-graph.hpp"

#include "exec/kv-reservation.hpp"
#include "exec/step-input-list.hpp"
#include "graph/arch.hpp"
#include "host/host-services.hpp"
#include "support/error.hpp"

namespace basalt {
namespace {

uint64_t align64(uint64_t x) {
    return (x + 63) & ~uint64_t{63};
}

}  // namespace

StepGraph::StepGraph(SessionResources& res) : res_(res), inputs_(make_step_inputs()) {
    regions_.resize(inputs_.size());
    offsets_.resize(inputs_.size());
}

StepGraph::~StepGraph() = default;

// Regions 64-byte aligned in list order, inputs first (uploaded as one block), then outputs; absent ones take no
// room. A region's offset follows from the sizes before it, so equal keys give equal offsets.
void StepGraph::place() {
    uint64_t cursor = 0;
    for (int outputs = 0; outputs < 2; ++outputs) {
        for (size_t i = 0; i < inputs_.size(); ++i) {
            if (inputs_[i]->output() != (outputs == 1) || !regions_[i].present) continue;
            offsets_[i] = align64(cursor);
            cursor = offsets_[i] + regions_[i].bytes;
        }
        if (outputs == 0) inputs_end_ = cursor;
    }
    end_ = cursor;
}

void StepGraph::prepare(const Step& step) {
    for (size_t i = 0; i < inputs_.size(); ++i) regions_[i] = inputs_[i]->prepare(step);
    place();
    res_.ensure_io(end_);
    staged_.resize(inputs_end_);
    for (size_t i = 0; i < inputs_.size(); ++i) {
        if (regions_[i].present && !inputs_[i]->output()) inputs_[i]->fill(step, staged_.data() + offsets_[i]);
    }
    const BackendInstance& be = res_.backend;
    be.check(be.iface().buffer_write(be.get(), res_.io.get(), 0, staged_.data(), staged_.size()),
             step.encoder ? "buffer_write(encoder inputs)" : "buffer_write(inputs)");
    if (step.encoder) {
        build(step, encoder_graph_);  // one pass per encode call: nothing to reuse
        return;
    }
    // The graph depends only on the key (the inputs' data sit in the IO buffer), so a step of the same shape
    // (consecutive decode steps, within one kVisibleStep of visible pairs) runs it again instead of rebuilding
    // ~1000 tensors by name.
    key_.clear();
    key_.push_back(step.n_tokens);
    key_.push_back(static_cast<int64_t>(step.n_lists()));
    key_.push_back(reinterpret_cast<intptr_t>(res_.io.get()));
    for (size_t i = 0; i < inputs_.size(); ++i) {
        key_.push_back(regions_[i].present ? static_cast<int64_t>(regions_[i].bytes) : -1);
        if (regions_[i].present) inputs_[i]->key(key_);
    }
    if (!step.reservation->has_copies() && key_ == built_) return;
    built_.clear();  // nothing valid until the build completes
    build(step, decoder_graph_);
    if (!step.reservation->has_copies()) built_ = key_;
}

// Copies first (copy on write, window rings), then the forward pass over the inputs' regions and the K/V storage.
void StepGraph::build(const Step& step, GraphBuilder& g) {
    g.clear();
    if (!step.encoder) step.reservation->add_copies(g, res_);
    ForwardContext c{g, step.hp, *res_.weights.view};
    c.encoder_pass = step.encoder;
    c.n_tokens = step.n_tokens;
    c.n_ctx = res_.n_ctx;
    if (!step.encoder) {
        c.stream_sinks = static_cast<int32_t>(res_.layout.stream_sinks);
        c.stream_window = static_cast<int32_t>(res_.layout.stream_window);
        c.moe_router = step.state.moe_router;
    }
    for (size_t i = 0; i < inputs_.size(); ++i) {
        if (regions_[i].present) inputs_[i]->bind(c, step, IoPlace{res_.io.get(), offsets_[i]});
    }
    res_.bind_storage(c, step.encoder);
    build_forward(c);
}

basalt_status StepGraph::compute(const Step& step) {
    GraphBuilder& g = step.encoder ? encoder_graph_ : decoder_graph_;
    clear_plugin_error();
    return res_.backend.iface().graph_compute(res_.backend.get(), &g.graph());
}

void StepGraph::read_back(const Step& step) {
    for (size_t i = 0; i < inputs_.size(); ++i) {
        if (regions_[i].present && inputs_[i]->output())
            inputs_[i]->read_back(step, IoPlace{res_.io.get(), offsets_[i]});
    }
}

}  // namespace basalt
