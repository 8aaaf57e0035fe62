#include <algorithm>
#include <memory>

#include "exec/step-input.hpp"
#include "graph/arch.hpp"
#include "graph/graph-builder.hpp"

namespace basalt {
namespace {

// Encoder-decoder models: the position-bias bucket of each distance -R..R, I32 [2R + 1] (causal in decoder steps,
// bidirectional in encoder passes). The tables depend on the model only: computed once each.
class PositionBuckets final : public StepInput {
  public:
    IoRegion prepare(const Step& step) override {
        if (!step.hp.encoder_decoder) return {};
        auto& table = step.encoder ? encoder_ : decoder_;
        if (table.empty()) table = t5_bucket_table(step.hp, step.encoder);
        return {true, 4 * static_cast<uint64_t>(table.size())};
    }
    void fill(const Step& step, uint8_t* region) const override {
        const auto& table = step.encoder ? encoder_ : decoder_;
        for (size_t i = 0; i < table.size(); ++i) put_i32(region, i, table[i]);
    }
    void bind(ForwardContext& c, const Step& step, IoPlace at) const override {
        if (step.encoder) {
            c.rel_index = c.g.tensor(BASALT_DTYPE_I32, {static_cast<int64_t>(encoder_.size())}, "inp_enc_rel_index",
                                     at.buffer, at.offset);
        } else {
            c.rel_index = c.g.tensor(BASALT_DTYPE_I32, {2 * static_cast<int64_t>(step.hp.rel_max_distance) + 1},
                                     "inp_rel_index", at.buffer, at.offset);
        }
    }

  private:
    std::vector<int32_t> decoder_, encoder_;
};

}  // namespace

std::unique_ptr<StepInput> make_position_buckets_input() {
    return std::make_unique<PositionBuckets>();
}

}  // namespace basalt
