#include <algorithm>
#include <memory>

#include "exec/step-input.hpp"
#include "graph/arch.hpp"
#include "graph/graph-builder.hpp"

namespace basalt {
namespace {

// Activation steering of a decoder step: each row's steering slot (-1: none), I32 [T], and the layers any of them
// steers; absent when no row is steered or their vectors hook no layer (the graph has no STEER node at all).
class SteerRows final : public StepInput {
  public:
    IoRegion prepare(const Step& step) override;
    void key(GraphKey& key) const override { key.insert(key.end(), layers_.begin(), layers_.end()); }
    void fill(const Step& step, uint8_t* region) const override {
        for (size_t t = 0; t < static_cast<size_t>(step.n_tokens); ++t) put_i32(region, t, rows_[t]);
    }
    void bind(ForwardContext& c, const Step& step, IoPlace at) const override;

  private:
    std::vector<int32_t> rows_;
    std::vector<uint8_t> layers_;
};

IoRegion SteerRows::prepare(const Step& step) {
    rows_.clear();
    layers_.clear();
    if (step.encoder) return {};
    const SteeringTable& steering = step.state.steering;
    const uint32_t n_layer = step.hp.n_layer;
    for (size_t t = 0; t < static_cast<size_t>(step.n_tokens); ++t) {
        const int32_t slot = steering.slot_of(step.seqs[t]);
        if (slot < 0) continue;
        if (layers_.empty()) {
            layers_.assign(n_layer, 0);
            rows_.assign(static_cast<size_t>(step.n_tokens), -1);
        }
        rows_[t] = slot;
        const auto& flags = steering.layers(slot);
        for (uint32_t il = 0; il < n_layer; ++il) layers_[il] |= flags[il];
    }
    if (std::find(layers_.begin(), layers_.end(), 1) == layers_.end()) {
        layers_.clear();  // steered sequences whose vectors hook no layer
        rows_.clear();
        return {};
    }
    return {true, 4 * static_cast<uint64_t>(step.n_tokens)};
}

void SteerRows::bind(ForwardContext& c, const Step& step, IoPlace at) const {
    const ModelHparams& hp = step.hp;
    const SteeringTable& steering = step.state.steering;
    c.steer_rows = c.g.tensor(BASALT_DTYPE_I32, {step.n_tokens}, "inp_steer_slots", at.buffer, at.offset);
    c.steer_tables.assign(hp.n_layer, -1);
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        if (layers_[il] == 0) continue;
        const uint64_t off = 4ull * hp.n_embd * steering.n_slots() * il;
        c.steer_tables[il] =
            c.g.tensor(BASALT_DTYPE_F32, {static_cast<int64_t>(hp.n_embd), static_cast<int64_t>(steering.n_slots())},
                       "steer." + std::to_string(il), steering.buffer(), off);
    }
}

}  // namespace

std::unique_ptr<StepInput> make_steer_rows_input() {
    return std::make_unique<SteerRows>();
}

}  // namespace basalt
