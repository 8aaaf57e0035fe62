#include <cstring>
#include <memory>

#include "exec/step-input.hpp"
#include "graph/arch.hpp"
#include "graph/graph-builder.hpp"

namespace basalt {
namespace {

// Each row's (list, position): which sequence's attention list it reads and where it stands: I32 [2, T].
class AttentionQuery final : public StepInput {
  public:
    IoRegion prepare(const Step& step) override { return {true, 8 * static_cast<uint64_t>(step.n_tokens)}; }
    void fill(const Step& step, uint8_t* region) const override {
        for (size_t t = 0; t < static_cast<size_t>(step.n_tokens); ++t) {
            put_i32(region, 2 * t, step.list_of_seq[static_cast<size_t>(step.seqs[t])]);
            put_i32(region, 2 * t + 1, step.positions[t]);
        }
    }
    void bind(ForwardContext& c, const Step& step, IoPlace at) const override {
        c.attn_query = c.g.tensor(BASALT_DTYPE_I32, {2, step.n_tokens},
                                  step.encoder ? "inp_enc_query" : "inp_attn_query", at.buffer, at.offset);
    }
};

}  // namespace

std::unique_ptr<StepInput> make_attention_query_input() {
    return std::make_unique<AttentionQuery>();
}

}  // namespace basalt
