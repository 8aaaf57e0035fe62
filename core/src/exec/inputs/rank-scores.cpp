#include <memory>

#include "exec/step-input.hpp"
#include "graph/arch.hpp"
#include "graph/graph-builder.hpp"

namespace basalt {
namespace {

// The rank head's scores of each input of an embedding pass, F32 [n_cls_out, n_lists] in list order, appended to
// the step's scores after the pass.
class RankScores final : public StepInput {
  public:
    bool output() const override { return true; }
    IoRegion prepare(const Step& step) override {
        if (!step.encoder || !step.rank) return {};
        return {true, 4ull * step.hp.n_cls_out * step.n_lists()};
    }
    void bind(ForwardContext& c, const Step& step, IoPlace at) const override {
        c.rank_out = c.g.tensor(BASALT_DTYPE_F32,
                                {static_cast<int64_t>(step.hp.n_cls_out), static_cast<int64_t>(step.n_lists())},
                                "rank_scores", at.buffer, at.offset);
    }
    void read_back(const Step& step, IoPlace at) override {
        std::vector<float>& out = *step.scores;
        const size_t old = out.size(), count = static_cast<size_t>(step.hp.n_cls_out) * step.n_lists();
        out.resize(old + count);
        read_io(step.res, at, out.data() + old, 4 * count, "buffer_read(rank scores)");
    }
};

}  // namespace

std::unique_ptr<StepInput> make_rank_scores_readback() {
    return std::make_unique<RankScores>();
}

}  // namespace basalt
