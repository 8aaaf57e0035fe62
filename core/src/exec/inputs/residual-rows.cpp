#include <algorithm>
#include <memory>

#include "exec/step-input.hpp"
#include "graph/arch.hpp"
#include "graph/graph-builder.hpp"

namespace basalt {
namespace {

// The K/V residual window (quantized K/V with the layout's residual R): each row's F32 residual row, R per sequence
// (sequence * R + position % R): I32 [T].
class ResidualRows final : public StepInput {
  public:
    IoRegion prepare(const Step& step) override {
        if (step.encoder || step.res.residual == 0) return {};
        return {true, 4 * static_cast<uint64_t>(step.n_tokens)};
    }
    void fill(const Step& step, uint8_t* region) const override {
        const auto R = static_cast<int32_t>(step.res.residual);
        for (size_t t = 0; t < static_cast<size_t>(step.n_tokens); ++t)
            put_i32(region, t, step.seqs[t] * R + step.positions[t] % R);
    }
    void bind(ForwardContext& c, const Step& step, IoPlace at) const override {
        c.kv_residual_rows =
            c.g.tensor(BASALT_DTYPE_I32, {step.n_tokens}, "inp_kv_residual_rows", at.buffer, at.offset);
    }
};

}  // namespace

std::unique_ptr<StepInput> make_residual_rows_input() {
    return std::make_unique<ResidualRows>();
}

}  // namespace basalt
