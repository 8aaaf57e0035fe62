#include <algorithm>
#include <memory>

#include "exec/step-input.hpp"
#include "graph/arch.hpp"
#include "graph/graph-builder.hpp"

namespace basalt {
namespace {

// An encoder pass's self-attention lists: sources packed one after another, each attending over its own rows
// (batch row of the pass, position), bidirectionally: I32 [2 * longest, n_lists], padded with -1.
class SourceLists final : public StepInput {
  public:
    IoRegion prepare(const Step& step) override {
        if (!step.encoder) return {};
        return {true, 8 * static_cast<uint64_t>(step.longest) * step.n_lists()};
    }
    void fill(const Step& step, uint8_t* region) const override {
        fill_i32(region, 2 * step.longest * step.n_lists(), -1);
        int32_t row = 0;
        for (size_t g = 0; g < step.n_lists(); ++g) {
            const size_t len = step.after[static_cast<size_t>(step.order[g])];
            for (size_t i = 0; i < len; ++i) {
                put_i32(region, 2 * (step.longest * g + i), row++);
                put_i32(region, 2 * (step.longest * g + i) + 1, static_cast<int32_t>(i));
            }
        }
    }
    void bind(ForwardContext& c, const Step& step, IoPlace at) const override {
        c.attn_lists =
            c.g.tensor(BASALT_DTYPE_I32, {static_cast<int64_t>(2 * step.longest), static_cast<int64_t>(step.n_lists())},
                       "inp_enc_lists", at.buffer, at.offset);
    }
};

}  // namespace

std::unique_ptr<StepInput> make_source_lists_input() {
    return std::make_unique<SourceLists>();
}

}  // namespace basalt
