#include <cstring>
#include <memory>

#include "exec/step-input.hpp"
#include "graph/arch.hpp"
#include "graph/graph-builder.hpp"

namespace basalt {
namespace {

// Token ids of the pass's rows: I32 [T].
class Tokens final : public StepInput {
  public:
    IoRegion prepare(const Step& step) override { return {true, 4 * static_cast<uint64_t>(step.n_tokens)}; }
    void fill(const Step& step, uint8_t* region) const override {
        std::memcpy(region, step.tokens, 4 * static_cast<size_t>(step.n_tokens));
    }
    void bind(ForwardContext& c, const Step& step, IoPlace at) const override {
        c.tokens = c.g.tensor(BASALT_DTYPE_I32, {step.n_tokens}, step.encoder ? "inp_enc_tokens" : "inp_tokens",
                              at.buffer, at.offset);
    }
};

}  // namespace

std::unique_ptr<StepInput> make_tokens_input() {
    return std::make_unique<Tokens>();
}

}  // namespace basalt
