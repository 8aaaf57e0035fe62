#include <memory>

#include "exec/step-input.hpp"
#include "graph/arch.hpp"
#include "graph/graph-builder.hpp"

namespace basalt {
namespace {

// Hybrid recurrent models (decoder steps): each token's recurrent state slot (its sequence's: one slot per
// sequence, n_seq_max in all) and whether it starts the sequence (position 0: the state begins at zero, whatever a
// dropped sequence left there): I32 [2, T].
class StateRows final : public StepInput {
  public:
    IoRegion prepare(const Step& step) override {
        if (step.encoder || !step.hp.recurrent()) return {};
        return {true, 8 * static_cast<uint64_t>(step.n_tokens)};
    }
    void fill(const Step& step, uint8_t* region) const override {
        for (size_t t = 0; t < static_cast<size_t>(step.n_tokens); ++t) {
            put_i32(region, 2 * t, step.seqs[t]);
            put_i32(region, 2 * t + 1, step.positions[t] == 0 ? 1 : 0);
        }
    }
    void bind(ForwardContext& c, const Step& step, IoPlace at) const override {
        c.state_rows = c.g.tensor(BASALT_DTYPE_I32, {2, step.n_tokens}, "inp_state_rows", at.buffer, at.offset);
    }
};

}  // namespace

std::unique_ptr<StepInput> make_state_rows_input() {
    return std::make_unique<StateRows>();
}

}  // namespace basalt
