#include <algorithm>
#include <memory>

#include "exec/step-input.hpp"
#include "graph/arch.hpp"
#include "graph/graph-builder.hpp"

namespace basalt {
namespace {

// OBSERVE: the residual rows at the output of the flagged layers (the steering hook point, after any steering),
// F32 [n_embd, T] per observed layer one after another, appended to the session's observed rows after the pass.
class ObservedLayers final : public StepInput {
  public:
    bool output() const override { return true; }
    IoRegion prepare(const Step& step) override {
        const auto& flags = step.state.observe_layers;
        flags_.clear();
        if (step.encoder || flags.empty()) return {};
        flags_.assign(flags.begin(), flags.end());
        const auto n = static_cast<uint64_t>(std::count(flags.begin(), flags.end(), 1));
        return {true, 4ull * step.hp.n_embd * static_cast<uint64_t>(step.n_tokens) * n};
    }
    void key(GraphKey& key) const override { key.insert(key.end(), flags_.begin(), flags_.end()); }
    void bind(ForwardContext& c, const Step& step, IoPlace at) const override;
    void read_back(const Step& step, IoPlace at) override;

  private:
    std::vector<uint8_t> flags_;  // the layers of the last prepare (the key)
};

void ObservedLayers::bind(ForwardContext& c, const Step& step, IoPlace at) const {
    const ModelHparams& hp = step.hp;
    const auto& flags = step.state.observe_layers;
    c.observe_out.assign(hp.n_layer, -1);
    uint64_t off = at.offset;
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        if (flags[il] == 0) continue;
        c.observe_out[il] = c.g.tensor(BASALT_DTYPE_F32, {static_cast<int64_t>(hp.n_embd), step.n_tokens},
                                       "observe." + std::to_string(il), at.buffer, off);
        off += 4ull * hp.n_embd * static_cast<uint64_t>(step.n_tokens);
    }
}

void ObservedLayers::read_back(const Step& step, IoPlace at) {
    const auto& flags = step.state.observe_layers;
    for (uint32_t il = 0; il < flags.size(); ++il) {
        if (flags[il] == 0) continue;
        auto& dst = step.state.observed[il];
        const size_t old = dst.size();
        const size_t count = static_cast<size_t>(step.hp.n_embd) * static_cast<size_t>(step.n_tokens);
        dst.resize(old + count);
        read_io(step.res, at, dst.data() + old, 4 * count, "buffer_read(observed)");
        at.offset += 4 * count;
    }
}

}  // namespace

std::unique_ptr<StepInput> make_observed_layers_readback() {
    return std::make_unique<ObservedLayers>();
}

}  // namespace basalt
