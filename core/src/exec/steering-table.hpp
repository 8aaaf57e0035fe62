// Activation steering of a session: one device buffer of n_layer tables [n_embd, n_slots] (allocated at the first
// acquire), each slot's layer flags (empty: free) and each sequence's slot. Not thread-safe: one session's thread.
#pragma once

#include <cstdint>
#include <vector>

#include "exec/session-resources.hpp"

namespace basalt {

class SteeringTable {
  public:
    // No slots until the first acquire; every sequence unsteered. `res` must outlive the table.
    explicit SteeringTable(const SessionResources& res) : res_(res), seq_slot_(res.n_seq_max, -1) {}

    // Uploads one vector per layer (n_layer x n_embd floats) into a free slot; `layers` (n_layer flags) says after
    // which layers it is added. Fails with BASALT_ERR_CAPACITY when all n_seq_max + 1 slots are taken.
    int32_t acquire(const std::vector<float>& vectors, const std::vector<uint8_t>& layers);
    // Frees a slot (sequences pointing at it stop being steered). -1 is ignored.
    void release(int32_t slot);
    // Sets seq's slot (-1: none); the slot must be in use. seq must be in range (the session checks it).
    void set(int32_t seq, int32_t slot);
    int32_t slot_of(int32_t seq) const { return seq_slot_[static_cast<size_t>(seq)]; }
    // Gives seq a slot of its own holding these vectors (empty: none), freeing its previous one when unshared.
    void set_vectors(int32_t seq, const std::vector<float>& vectors, const std::vector<uint8_t>& layers);
    void fork(int32_t src, int32_t dst) { seq_slot_[static_cast<size_t>(dst)] = seq_slot_[static_cast<size_t>(src)]; }

    // The layer flags of a slot in use (n_layer + 1 entries).
    const std::vector<uint8_t>& layers(int32_t slot) const { return slot_layers_[static_cast<size_t>(slot)]; }
    basalt_buffer* buffer() const { return buffer_.get(); }
    uint32_t n_slots() const { return n_slots_; }

  private:
    const SessionResources& res_;
    DeviceBuffer buffer_;
    uint32_t n_slots_ = 0;
    std::vector<std::vector<uint8_t>> slot_layers_;
    std::vector<int32_t> seq_slot_;
};

}  // namespace basalt
