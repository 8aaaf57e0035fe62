#include <cstring>
#include <memory>

#include "exec/step-input.hpp"
#include "graph/arch.hpp"
#include "graph/graph-builder.hpp"

namespace basalt {
namespace {

// Position of each row in its sequence: I32 [T].
class Positions final : public StepInput {
  public:
    IoRegion prepare(const Step& step) override { return {true, 4 * static_cast<uint64_t>(step.n_tokens)}; }
    void fill(const Step& step, uint8_t* region) const override {
        std::memcpy(region, step.positions, 4 * static_cast<size_t>(step.n_tokens));
    }
    void bind(ForwardContext& c, const Step& step, IoPlace at) const override {
        c.positions = c.g.tensor(BASALT_DTYPE_I32, {step.n_tokens},
                                 step.encoder ? "inp_enc_positions" : "inp_positions", at.buffer, at.offset);
    }
};

}  // namespace

std::unique_ptr<StepInput> make_positions_input() {
    return std::make_unique<Positions>();
}

}  // namespace basalt
