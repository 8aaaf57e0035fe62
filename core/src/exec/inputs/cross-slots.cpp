#include <algorithm>
#include <memory>

#include "exec/step-input.hpp"
#include "graph/arch.hpp"
#include "graph/graph-builder.hpp"

namespace basalt {
namespace {

// An encoder pass's cross-storage row of each token's K/V (its source's rows, in order): I32 [T].
class CrossSlots final : public StepInput {
  public:
    IoRegion prepare(const Step& step) override {
        if (!step.encoder || !step.hp.encoder_decoder) return {};
        return {true, 4 * static_cast<uint64_t>(step.n_tokens)};
    }
    void fill(const Step& step, uint8_t* region) const override {
        for (size_t t = 0; t < static_cast<size_t>(step.n_tokens); ++t) {
            const auto& src = *step.state.seq_source[static_cast<size_t>(step.seqs[t])];
            put_i32(region, t, src[static_cast<size_t>(step.positions[t])]);
        }
    }
    void bind(ForwardContext& c, const Step& step, IoPlace at) const override {
        c.cross_slots = c.g.tensor(BASALT_DTYPE_I32, {step.n_tokens}, "inp_cross_slots", at.buffer, at.offset);
    }
};

}  // namespace

std::unique_ptr<StepInput> make_cross_slots_input() {
    return std::make_unique<CrossSlots>();
}

}  // namespace basalt
