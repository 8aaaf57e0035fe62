#include <algorithm>
#include <memory>

#include "exec/step-input.hpp"
#include "graph/arch.hpp"
#include "graph/graph-builder.hpp"
#include "host/host-services.hpp"
#include "support/error.hpp"

namespace basalt {
namespace {

// The (slot, position) pairs each sequence of a decoder step may attend to, as the cache manager lists them for one
// full-attention layer (or, with `window`, one sliding-window layer when those keep their own storage): I32
// [2 * n_vis, n_lists], each list padded (slot -1) to n_vis pairs, a multiple of kVisibleStep (at most the storage's
// rows), so consecutive steps keep one graph shape.
class VisibleLists final : public StepInput {
  public:
    explicit VisibleLists(bool window) : window_(window) {}
    IoRegion prepare(const Step& step) override;
    void key(GraphKey& key) const override { key.push_back(static_cast<int64_t>(n_vis_)); }
    void fill(const Step& step, uint8_t* region) const override;
    void bind(ForwardContext& c, const Step& step, IoPlace at) const override;

  private:
    bool window_;
    size_t n_vis_ = 0;
    std::vector<int32_t> slots_, positions_;  // the manager's answer for one sequence
    std::vector<int32_t> pairs_;              // every list's pairs, one after another
    std::vector<size_t> counts_;              // pairs per list
};

IoRegion VisibleLists::prepare(const Step& step) {
    const SessionResources& res = step.res;
    if (step.encoder || (window_ && res.n_window_slots == 0)) return {};
    // The first layer of the kind (the manager lists the same pairs for every layer of one kind).
    uint32_t layer = 0;
    while (layer + 1 < res.cache_layers() && (res.window_storage[layer] != 0) != window_) ++layer;
    const size_t cap = window_ ? res.n_window_slots : res.n_ctx;
    // A sequence sees at most what it holds after this step: the buffers are sized to the longest such sequence,
    // not to the whole cache per sequence (a step of many short sequences over a big cache would zero megabytes).
    slots_.resize(std::min(cap, step.longest));
    positions_.resize(slots_.size());
    pairs_.clear();
    counts_.clear();
    const auto& kv = res.kv.iface();
    for (int32_t s : step.order) {
        size_t count = 0;
        clear_plugin_error();
        const basalt_status vs =
            kv.visible(res.kv.get(), s, layer, slots_.data(), positions_.data(), slots_.size(), &count);
        if (vs != BASALT_OK) fail(vs, "KV cache manager '{}': visible: {}", res.kv.name(), plugin_error_message());
        count = std::min(count, slots_.size());
        for (size_t i = 0; i < count; ++i) {
            pairs_.push_back(slots_[i]);
            pairs_.push_back(positions_[i]);
        }
        counts_.push_back(count);
    }
    n_vis_ = 1;
    for (size_t n : counts_) n_vis_ = std::max(n_vis_, n);
    n_vis_ = std::max(n_vis_, std::min<size_t>((n_vis_ + kVisibleStep - 1) / kVisibleStep * kVisibleStep, cap));
    return {true, 8 * static_cast<uint64_t>(n_vis_) * counts_.size()};
}

void VisibleLists::fill(const Step& /*step*/, uint8_t* region) const {
    fill_i32(region, 2 * n_vis_ * counts_.size(), -1);
    size_t at = 0;
    for (size_t g = 0; g < counts_.size(); ++g) {
        for (size_t i = 0; i < 2 * counts_[g]; ++i) put_i32(region, 2 * n_vis_ * g + i, pairs_[at + i]);
        at += 2 * counts_[g];
    }
}

void VisibleLists::bind(ForwardContext& c, const Step& step, IoPlace at) const {
    const int64_t ne0 = static_cast<int64_t>(2 * n_vis_), ne1 = static_cast<int64_t>(step.n_lists());
    if (!window_) {
        c.attn_lists = c.g.tensor(BASALT_DTYPE_I32, {ne0, ne1}, "inp_attn_lists", at.buffer, at.offset);
        return;
    }
    c.attn_lists_window = c.g.tensor(BASALT_DTYPE_I32, {ne0, ne1}, "inp_attn_window_lists", at.buffer, at.offset);
    c.window_storage.assign(step.res.window_storage.begin(), step.res.window_storage.end());
}

}  // namespace

std::unique_ptr<StepInput> make_visible_lists_input() {
    return std::make_unique<VisibleLists>(false);
}

std::unique_ptr<StepInput> make_window_lists_input() {
    return std::make_unique<VisibleLists>(true);
}

}  // namespace basalt
