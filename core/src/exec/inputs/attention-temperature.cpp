#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "exec/step-input.hpp"
#include "graph/arch.hpp"
#include "graph/graph-builder.hpp"

namespace basalt {
namespace {

// Llama 4's attention temperature (mistral3: attention.temperature_scale s over the original context n): each
// row's query factor 1 + s ln(floor(pos / n) + 1), F32 [1, T], computed as llama.cpp's llm_graph_input_attn_temp
// does (the quotient and floor in single floats, the logarithm in double, rounded to a float). Absent for a model
// without a temperature (the graph has no node for it) and in encoder passes.
class AttentionTemperature final : public StepInput {
  public:
    IoRegion prepare(const Step& step) override {
        const RopeScaling& rs = step.hp.rope_scaling;
        if (step.encoder || rs.attn_temp_scale == 0.0f || rs.n_ctx_orig == 0) return {};
        const auto n = static_cast<size_t>(step.n_tokens);
        factors_.resize(n);
        const auto floor_scale = static_cast<float>(rs.n_ctx_orig);
        for (size_t t = 0; t < n; ++t) {
            const auto pos = static_cast<float>(step.positions[t]);
            const double steps = std::floor(pos / floor_scale);
            factors_[t] = static_cast<float>(std::log(steps + 1.0) * rs.attn_temp_scale + 1.0);
        }
        return {true, 4 * static_cast<uint64_t>(n)};
    }
    void fill(const Step& /*step*/, uint8_t* region) const override {
        std::memcpy(region, factors_.data(), 4 * factors_.size());
    }
    void bind(ForwardContext& c, const Step& step, IoPlace at) const override {
        c.attn_temp = c.g.tensor(BASALT_DTYPE_F32, {1, step.n_tokens}, "inp_attn_temp", at.buffer, at.offset);
    }

  private:
    std::vector<float> factors_;
};

}  // namespace

std::unique_ptr<StepInput> make_attn_temp_input() {
    return std::make_unique<AttentionTemperature>();
}

}  // namespace basalt
