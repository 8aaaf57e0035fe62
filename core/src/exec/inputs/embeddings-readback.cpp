#include <memory>

#include "exec/step-input.hpp"
#include "graph/arch.hpp"
#include "graph/graph-builder.hpp"

namespace basalt {
namespace {

// The final hidden state of every row of an embedding pass (encoder-only models), F32 [n_embd, T], appended to the
// step's embeddings after the pass (pooling happens on the host: docs/embeddings.md).
class EmbeddingsReadback final : public StepInput {
  public:
    bool output() const override { return true; }
    IoRegion prepare(const Step& step) override {
        if (!step.encoder || step.embd == nullptr) return {};
        return {true, 4ull * step.hp.n_embd * static_cast<uint64_t>(step.n_tokens)};
    }
    void bind(ForwardContext& c, const Step& step, IoPlace at) const override {
        c.embd_out = c.g.tensor(BASALT_DTYPE_F32, {static_cast<int64_t>(step.hp.n_embd), step.n_tokens}, "embd",
                                at.buffer, at.offset);
    }
    void read_back(const Step& step, IoPlace at) override {
        std::vector<float>& out = *step.embd;
        const size_t old = out.size(), count = static_cast<size_t>(step.hp.n_embd) * static_cast<size_t>(step.n_tokens);
        out.resize(old + count);
        read_io(step.res, at, out.data() + old, 4 * count, "buffer_read(embeddings)");
    }
};

}  // namespace

std::unique_ptr<StepInput> make_embeddings_readback() {
    return std::make_unique<EmbeddingsReadback>();
}

}  // namespace basalt
