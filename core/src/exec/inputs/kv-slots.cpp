#include <cstring>
#include <memory>

#include "exec/kv-reservation.hpp"
#include "exec/step-input.hpp"
#include "graph/arch.hpp"
#include "graph/graph-builder.hpp"

namespace basalt {
namespace {

// The cache slot the manager reserved for each row's K/V (decoder steps): I32 [T]; of the sliding-window layers'
// own storage when `window` (present only when the layout has one).
class KvSlots final : public StepInput {
  public:
    explicit KvSlots(bool window) : window_(window) {}
    IoRegion prepare(const Step& step) override {
        if (step.encoder || (window_ && step.res.n_window_slots == 0)) return {};
        return {true, 4 * static_cast<uint64_t>(step.n_tokens)};
    }
    void fill(const Step& step, uint8_t* region) const override {
        const auto& slots = window_ ? step.reservation->window_slots() : step.reservation->slots();
        std::memcpy(region, slots.data(), 4 * slots.size());
    }
    void bind(ForwardContext& c, const Step& step, IoPlace at) const override {
        (window_ ? c.kv_slots_window : c.kv_slots) = c.g.tensor(
            BASALT_DTYPE_I32, {step.n_tokens}, window_ ? "inp_kv_window_slots" : "inp_kv_slots", at.buffer, at.offset);
    }

  private:
    bool window_;
};

}  // namespace

std::unique_ptr<StepInput> make_kv_slots_input() {
    return std::make_unique<KvSlots>(false);
}

std::unique_ptr<StepInput> make_window_slots_input() {
    return std::make_unique<KvSlots>(true);
}

}  // namespace basalt
