#include <algorithm>
#include <memory>

#include "exec/step-input.hpp"
#include "graph/arch.hpp"
#include "graph/graph-builder.hpp"

namespace basalt {
namespace {

// The logits of a decoder step's wanted rows, F32 [n_vocab, n_outputs], appended to the step's logits after the
// pass. Present in every decoder step (empty when no row is wanted).
class LogitsReadback final : public StepInput {
  public:
    bool output() const override { return true; }
    IoRegion prepare(const Step& step) override {
        n_rows_ = 0;
        if (step.encoder) return {};
        for (size_t t = 0; t < static_cast<size_t>(step.n_tokens); ++t) n_rows_ += step.wants_logits(t) ? 1 : 0;
        const uint64_t bytes = 4 * static_cast<uint64_t>(step.hp.n_vocab) * n_rows_;
        step.state.io_logits_bytes = std::max(step.state.io_logits_bytes, bytes);
        return {true, bytes};
    }
    void bind(ForwardContext& c, const Step& step, IoPlace at) const override {
        if (n_rows_ == 0) return;
        c.logits = c.g.tensor(BASALT_DTYPE_F32, {static_cast<int64_t>(step.hp.n_vocab), static_cast<int64_t>(n_rows_)},
                              "logits", at.buffer, at.offset);
    }
    void read_back(const Step& step, IoPlace at) override {
        if (n_rows_ == 0) return;
        std::vector<float>& out = *step.logits;
        const size_t old = out.size();
        out.resize(old + n_rows_ * step.hp.n_vocab);
        read_io(step.res, at, out.data() + old, 4 * static_cast<uint64_t>(n_rows_) * step.hp.n_vocab,
                "buffer_read(logits)");
    }

  private:
    size_t n_rows_ = 0;
};

}  // namespace

std::unique_ptr<StepInput> make_logits_readback() {
    return std::make_unique<LogitsReadback>();
}

}  // namespace basalt
