// The cache slots of one decoder step: the manager's all-or-nothing reservation for the step's tokens (slots, window
// slots) and the copy-on-write / window copies to run before it. Reused from step to step (no allocation once its
// arrays have grown). Not thread-safe: one session's thread.
#pragma once

#include <basalt/plugin_kv_cache.h>

#include <cstdint>
#include <vector>

namespace basalt {

class GraphBuilder;
struct SessionResources;

class KvReservation {
  public:
    // Reserves slots for n tokens (the arrays borrowed for the call); fails naming the manager, the cache unchanged.
    void reserve(const SessionResources& res, size_t n, const int32_t* tokens, const int32_t* positions,
                 const int32_t* seqs);
    // Adds the copy nodes (before any other node of the step) to g.
    void add_copies(GraphBuilder& g, const SessionResources& res) const;
    bool has_copies() const { return !copies_.empty() || !window_copies_.empty(); }
    bool has_window_copies() const { return !window_copies_.empty(); }
    const std::vector<int32_t>& slots() const { return slots_; }
    const std::vector<int32_t>& window_slots() const { return window_slots_; }

  private:
    std::vector<int32_t> slots_, window_slots_;
    std::vector<basalt_kv_copy> copies_, window_copies_;
};

}  // namespace basalt
