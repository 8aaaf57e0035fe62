#include <algorithm>
#include <memory>

#include "exec/step-input.hpp"
#include "graph/arch.hpp"
#include "graph/graph-builder.hpp"

namespace basalt {
namespace {

// Encoder-decoder decoder steps: each sequence's cross-attention (row, position) pairs over its encoded source,
// I32 [2 * n_vis_cross, n_lists], padded like the self-attention lists (to kVisibleStep, at most n_ctx).
class CrossLists final : public StepInput {
  public:
    IoRegion prepare(const Step& step) override {
        if (step.encoder || !step.hp.encoder_decoder) return {};
        n_vis_ = 0;
        for (int32_t s : step.order) n_vis_ = std::max(n_vis_, step.state.seq_source[static_cast<size_t>(s)]->size());
        n_vis_ = std::min<size_t>((n_vis_ + kVisibleStep - 1) / kVisibleStep * kVisibleStep, step.res.n_ctx);
        return {true, 8 * static_cast<uint64_t>(n_vis_) * step.n_lists()};
    }
    void key(GraphKey& key) const override { key.push_back(static_cast<int64_t>(n_vis_)); }
    void fill(const Step& step, uint8_t* region) const override {
        fill_i32(region, 2 * n_vis_ * step.n_lists(), -1);
        for (size_t g = 0; g < step.n_lists(); ++g) {
            const auto& src = *step.state.seq_source[static_cast<size_t>(step.order[g])];
            for (size_t i = 0; i < src.size(); ++i) {
                put_i32(region, 2 * (n_vis_ * g + i), src[i]);
                put_i32(region, 2 * (n_vis_ * g + i) + 1, static_cast<int32_t>(i));
            }
        }
    }
    void bind(ForwardContext& c, const Step& step, IoPlace at) const override {
        c.cross_lists =
            c.g.tensor(BASALT_DTYPE_I32, {static_cast<int64_t>(2 * n_vis_), static_cast<int64_t>(step.n_lists())},
                       "inp_cross_lists", at.buffer, at.offset);
    }

  private:
    size_t n_vis_ = 0;
};

}  // namespace

std::unique_ptr<StepInput> make_cross_lists_input() {
    return std::make_unique<CrossLists>();
}

}  // namespace basalt
