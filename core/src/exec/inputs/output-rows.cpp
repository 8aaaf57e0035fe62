#include <algorithm>
#include <memory>

#include "exec/step-input.hpp"
#include "graph/arch.hpp"
#include "graph/graph-builder.hpp"

namespace basalt {
namespace {

// The rows of a decoder step whose logits are produced: I32 [max(1, n_outputs)] (one unused entry when none).
class OutputRows final : public StepInput {
  public:
    IoRegion prepare(const Step& step) override {
        rows_.clear();
        if (step.encoder) return {};
        for (size_t t = 0; t < static_cast<size_t>(step.n_tokens); ++t)
            if (step.wants_logits(t)) rows_.push_back(static_cast<int32_t>(t));
        return {true, 4 * std::max<uint64_t>(1, rows_.size())};
    }
    void key(GraphKey& key) const override { key.push_back(static_cast<int64_t>(rows_.size())); }
    void fill(const Step& /*step*/, uint8_t* region) const override {
        put_i32(region, 0, 0);
        for (size_t i = 0; i < rows_.size(); ++i) put_i32(region, i, rows_[i]);
    }
    void bind(ForwardContext& c, const Step& /*step*/, IoPlace at) const override {
        const auto n = static_cast<int64_t>(rows_.size());
        c.n_outputs = n;
        c.out_rows = c.g.tensor(BASALT_DTYPE_I32, {std::max<int64_t>(1, n)}, "inp_out_rows", at.buffer, at.offset);
    }

  private:
    std::vector<int32_t> rows_;
};

}  // namespace

std::unique_ptr<StepInput> make_output_rows_input() {
    return std::make_unique<OutputRows>();
}

}  // namespace basalt
