#include "exec/steering-table.hpp"

#include <algorithm>

#include "support/error.hpp"

namespace basalt {

int32_t SteeringTable::acquire(const std::vector<float>& vectors, const std::vector<uint8_t>& layers) {
    const ModelHparams& hp = res_.hp;
    if (hp.encoder_decoder) fail(BASALT_ERR_UNSUPPORTED, "steering is not supported for encoder-decoder models (t5)");
    const size_t n_embd = hp.n_embd;
    if (vectors.size() != static_cast<size_t>(hp.n_layer) * n_embd || layers.size() != hp.n_layer) {
        fail(BASALT_ERR_INVALID_ARGUMENT, "steering vectors of {} floats and {} layer flags do not fit {} layers of {}",
             vectors.size(), layers.size(), hp.n_layer, n_embd);
    }
    const BackendInstance& be = res_.backend;
    if (buffer_.get() == nullptr) {
        n_slots_ = static_cast<uint32_t>(seq_slot_.size()) + 1;  // one spare: a re-set acquires before it frees
        const uint64_t bytes = 4ull * n_embd * n_slots_ * hp.n_layer;
        buffer_ = DeviceBuffer(be, bytes, BASALT_BUFFER_WEIGHTS, "buffer_alloc(steering)");
        const std::vector<float> zeros(bytes / 4, 0.f);
        be.check(be.iface().buffer_write(be.get(), buffer_.get(), 0, zeros.data(), bytes), "buffer_write(steering)");
        slot_layers_.assign(n_slots_, {});
    }
    int32_t slot = -1;
    for (uint32_t i = 0; i < n_slots_ && slot < 0; ++i)
        if (slot_layers_[i].empty()) slot = static_cast<int32_t>(i);
    if (slot < 0) fail(BASALT_ERR_CAPACITY, "all {} steering slots (n_seq_max) are in use", n_slots_);
    // Layer il's table is [n_embd, n_slots_]: the slot's vector is column `slot` of it.
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const uint64_t off = 4ull * n_embd * (static_cast<uint64_t>(il) * n_slots_ + static_cast<uint64_t>(slot));
        be.check(be.iface().buffer_write(be.get(), buffer_.get(), off, vectors.data() + il * n_embd, 4ull * n_embd),
                 "buffer_write(steering)");
    }
    slot_layers_[static_cast<size_t>(slot)] = layers;
    slot_layers_[static_cast<size_t>(slot)].push_back(1);  // never empty while taken
    return slot;
}

void SteeringTable::release(int32_t slot) {
    if (slot < 0) return;
    if (static_cast<uint32_t>(slot) >= n_slots_)
        fail(BASALT_ERR_INVALID_ARGUMENT, "steering slot {} does not exist (0..{})", slot, n_slots_);
    slot_layers_[static_cast<size_t>(slot)].clear();
    for (auto& s : seq_slot_)
        if (s == slot) s = -1;
}

void SteeringTable::set(int32_t seq, int32_t slot) {
    if (slot >= 0 && (static_cast<uint32_t>(slot) >= n_slots_ || slot_layers_[static_cast<size_t>(slot)].empty()))
        fail(BASALT_ERR_INVALID_ARGUMENT, "steering slot {} is not in use", slot);
    seq_slot_[static_cast<size_t>(seq)] = slot < 0 ? -1 : slot;
}

void SteeringTable::set_vectors(int32_t seq, const std::vector<float>& vectors, const std::vector<uint8_t>& layers) {
    const int32_t old = slot_of(seq);
    const int32_t slot = vectors.empty() ? -1 : acquire(vectors, layers);
    seq_slot_[static_cast<size_t>(seq)] = slot;
    if (old >= 0 && std::find(seq_slot_.begin(), seq_slot_.end(), old) == seq_slot_.end()) release(old);
}

}  // namespace basalt
