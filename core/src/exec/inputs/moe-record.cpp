#include <algorithm>
#include <memory>

#include "exec/step-input.hpp"
#include "graph/arch.hpp"
#include "graph/graph-builder.hpp"

namespace basalt {
namespace {

// MoE routing statistics: per layer the expert ids of each row [k, T], then (capacity mode) their status [k, T],
// I32; after the pass, counted into the session's per-layer statistics (per expert, dropped, rerouted).
class MoeRecord final : public StepInput {
  public:
    bool output() const override { return true; }
    IoRegion prepare(const Step& step) override {
        if (step.encoder || !step.state.moe_stats_on) return {};
        const uint64_t per_layer = 4ull * step.hp.n_expert_used * static_cast<uint64_t>(step.n_tokens);
        return {true, per_layer * step.hp.n_layer * (step.state.moe_router.capacity ? 2 : 1)};
    }
    void bind(ForwardContext& c, const Step& step, IoPlace at) const override;
    void read_back(const Step& step, IoPlace at) override;

  private:
    std::vector<int32_t> record_;
};

void MoeRecord::bind(ForwardContext& c, const Step& step, IoPlace at) const {
    const ModelHparams& hp = step.hp;
    const bool capacity = step.state.moe_router.capacity;
    c.moe_ids_out.assign(hp.n_layer, -1);
    c.moe_status_out.assign(hp.n_layer, -1);
    const auto k = static_cast<int64_t>(hp.n_expert_used);
    const int64_t T = step.n_tokens;
    const uint64_t bytes = 4ull * static_cast<uint64_t>(k * T);
    uint64_t off = at.offset;
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        c.moe_ids_out[il] = c.g.tensor(BASALT_DTYPE_I32, {k, T}, "moe_ids." + std::to_string(il), at.buffer, off);
        off += bytes;
        if (capacity) {
            c.moe_status_out[il] =
                c.g.tensor(BASALT_DTYPE_I32, {k, T}, "moe_status." + std::to_string(il), at.buffer, off);
            off += bytes;
        }
    }
}

void MoeRecord::read_back(const Step& step, IoPlace at) {
    const ModelHparams& hp = step.hp;
    const bool capacity = step.state.moe_router.capacity;
    const size_t n = static_cast<size_t>(hp.n_expert_used) * static_cast<size_t>(step.n_tokens);
    record_.resize(n * (capacity ? 2 : 1) * hp.n_layer);
    read_io(step.res, at, record_.data(), 4 * record_.size(), "buffer_read(moe routing)");
    const int32_t* rec = record_.data();
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        MoeLayerStats& ls = step.state.moe_stats[il];
        const int32_t* ids = rec;
        const int32_t* status = capacity ? rec + n : nullptr;
        rec += capacity ? 2 * n : n;
        ls.passes += 1;
        ls.tokens += static_cast<uint64_t>(step.n_tokens);
        for (size_t i = 0; i < n; ++i) {
            const int32_t s = status != nullptr ? status[i] : 0;
            if (s == 1) {
                ls.dropped += 1;
                continue;
            }
            if (s >= 2) ls.rerouted += 1;
            if (ids[i] >= 0 && static_cast<size_t>(ids[i]) < ls.per_expert.size())
                ls.per_expert[static_cast<size_t>(ids[i])] += 1;
        }
    }
}

}  // namespace

std::unique_ptr<StepInput> make_moe_record_readback() {
    return std::make_unique<MoeRecord>();
}

}  // namespace basalt
