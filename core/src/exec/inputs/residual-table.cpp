#include <algorithm>
#include <memory>

#include "exec/step-input.hpp"
#include "graph/arch.hpp"
#include "graph/graph-builder.hpp"

namespace basalt {
namespace {

// The K/V residual window: per list its base residual row and the first position of its open unit after this step
// (earlier units are sealed, i.e. quantized, by this step's writes): I32 [2, n_lists].
class ResidualTable final : public StepInput {
  public:
    IoRegion prepare(const Step& step) override {
        if (step.encoder || step.res.residual == 0) return {};
        return {true, 8 * static_cast<uint64_t>(step.n_lists())};
    }
    void fill(const Step& step, uint8_t* region) const override {
        const uint32_t R = step.res.residual;
        for (size_t g = 0; g < step.n_lists(); ++g) {
            const int32_t s = step.order[g];
            put_i32(region, 2 * g, s * static_cast<int32_t>(R));
            put_i32(region, 2 * g + 1, static_cast<int32_t>(step.after[static_cast<size_t>(s)] / R * R));
        }
    }
    void bind(ForwardContext& c, const Step& step, IoPlace at) const override {
        c.attn_residual = c.g.tensor(BASALT_DTYPE_I32, {2, static_cast<int64_t>(step.n_lists())}, "inp_attn_residual",
                                     at.buffer, at.offset);
    }
};

}  // namespace

std::unique_ptr<StepInput> make_residual_table_input() {
    return std::make_unique<ResidualTable>();
}

}  // namespace basalt
