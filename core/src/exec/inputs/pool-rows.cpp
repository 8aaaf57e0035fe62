#include <memory>

#include "exec/step-input.hpp"
#include "graph/arch.hpp"
#include "graph/graph-builder.hpp"

namespace basalt {
namespace {

// The row the rank head reads for each input of an embedding pass: its first ([CLS]), inputs packed one after
// another in list order: I32 [n_lists].
class PoolRows final : public StepInput {
  public:
    IoRegion prepare(const Step& step) override {
        if (!step.encoder || !step.rank) return {};
        return {true, 4 * static_cast<uint64_t>(step.n_lists())};
    }
    void fill(const Step& step, uint8_t* region) const override {
        int32_t row = 0;
        for (size_t g = 0; g < step.n_lists(); ++g) {
            put_i32(region, g, row);
            row += static_cast<int32_t>(step.after[static_cast<size_t>(step.order[g])]);
        }
    }
    void bind(ForwardContext& c, const Step& step, IoPlace at) const override {
        c.pool_rows =
            c.g.tensor(BASALT_DTYPE_I32, {static_cast<int64_t>(step.n_lists())}, "inp_pool_rows", at.buffer, at.offset);
    }
};

}  // namespace

std::unique_ptr<StepInput> make_pool_rows_input() {
    return std::make_unique<PoolRows>();
}

}  // namespace basalt
