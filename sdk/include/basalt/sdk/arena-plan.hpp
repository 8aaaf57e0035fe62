// First-fit placement of a graph's intermediate tensors in one arena, reusing a range once its tensor's last
// reader has run. Header-only, for backend plugins (the CPU and Vulkan backends both plan with it).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "basalt/plugin_backend.h"

namespace basalt::sdk {

// Offsets are multiples of `align` (a power of two or any positive value). Not thread-safe; one per planning pass.
class ArenaPlan {
  public:
    explicit ArenaPlan(uint64_t align) : align_(align) {}

    // Returns the offset of a new range of `size` bytes: the first free range that fits, else the arena's end.
    uint64_t place(uint64_t size) {
        size = round_up(size);
        for (size_t i = 0; i < free_.size(); ++i) {
            if (free_[i].second >= size) {
                const uint64_t off = free_[i].first;
                free_[i].first += size;
                free_[i].second -= size;
                if (free_[i].second == 0) free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(i));
                return off;
            }
        }
        const uint64_t off = top_;
        top_ += size;
        return off;
    }

    // Returns the range [off, off + size) from place() to the free list, merging adjacent free ranges.
    void release(uint64_t off, uint64_t size) {
        free_.emplace_back(off, round_up(size));
        std::sort(free_.begin(), free_.end());
        std::vector<std::pair<uint64_t, uint64_t>> merged;
        for (const auto& f : free_) {
            if (!merged.empty() && merged.back().first + merged.back().second == f.first) {
                merged.back().second += f.second;
            } else {
                merged.push_back(f);
            }
        }
        free_ = std::move(merged);
    }

    // Returns the arena size the placements so far need.
    uint64_t peak() const noexcept { return top_; }

  private:
    uint64_t round_up(uint64_t size) const noexcept { return (size + align_ - 1) / align_ * align_; }

    uint64_t align_;
    std::vector<std::pair<uint64_t, uint64_t>> free_;  // (offset, size), sorted after each release
    uint64_t top_ = 0;
};

// Where a graph's intermediates (tensors with no buffer) live in one arena. bad_node >= 0 means node bad_node's
// input bad_input reads an intermediate before any node writes it (the plan is then incomplete).
struct IntermediatePlan {
    std::vector<uint64_t> offset;  // per tensor index; 0 for tensors with a buffer
    uint64_t peak = 0;             // arena bytes needed
    int64_t bad_node = -1;
    int bad_input = -1;
};

// Plans the intermediates of `graph` (its node and tensor arrays checked by the caller): each is placed when
// its first writer runs and released after its last reader; node_extent(i) gives the bytes of node i's output.
// joined(i) true means node i runs in one dispatch with node i + 1 (a fused chain): memory read by any node of
// a chain is released only after the whole chain, so no output of the chain overlaps one of its inputs.
// alias(i) >= 0 names an intermediate input of node i whose memory node i's output takes over (a reshape the
// backend does not run: same bytes, same layout); the memory then lives until the last reader of either.
// Not thread-safe per graph; allocates.
template <typename NodeExtent, typename Joined, typename Alias>
IntermediatePlan plan_intermediates(const basalt_graph* graph, uint64_t align, NodeExtent node_extent, Joined joined,
                                    Alias alias) {
    const size_t nn = graph->n_nodes;
    const size_t nt = graph->n_tensors;
    IntermediatePlan out;
    std::vector<int64_t> first_write(nt, -1);
    std::vector<int64_t> last_use(nt, -1);
    for (size_t i = 0; i < nn; ++i) {
        const basalt_graph_node* n = graph->nodes[i];
        for (int k = 0; k < n->n_inputs; ++k) {
            const auto t = static_cast<size_t>(n->inputs[k]);
            if (graph->tensors[t]->buffer != nullptr) continue;
            if (first_write[t] < 0) {
                out.bad_node = static_cast<int64_t>(i);
                out.bad_input = k;
                return out;
            }
            last_use[t] = static_cast<int64_t>(i);
        }
        const auto o = static_cast<size_t>(n->output);
        if (graph->tensors[o]->buffer == nullptr) {
            if (first_write[o] < 0) first_write[o] = static_cast<int64_t>(i);
            last_use[o] = std::max(last_use[o], static_cast<int64_t>(i));
        }
    }
    // Aliases: an output sharing an earlier intermediate's memory; the memory's owner (root) lives as long as any.
    std::vector<size_t> root(nt);
    for (size_t t = 0; t < nt; ++t) root[t] = t;
    std::vector<int64_t> live_until = last_use;
    for (size_t i = 0; i < nn; ++i) {
        const int64_t a = alias(i);
        const auto o = static_cast<size_t>(graph->nodes[i]->output);
        if (a < 0 || static_cast<size_t>(a) >= nt || first_write[o] != static_cast<int64_t>(i)) continue;
        const auto src = static_cast<size_t>(a);
        if (graph->tensors[src]->buffer != nullptr || first_write[src] < 0 || first_write[src] >= first_write[o]) {
            continue;
        }
        root[o] = root[src];
        live_until[root[o]] = std::max(live_until[root[o]], last_use[o]);
    }
    ArenaPlan plan(align);
    out.offset.assign(nt, 0);
    std::vector<std::vector<size_t>> release_after(nn);
    for (size_t i = 0; i < nn; ++i) {
        const auto o = static_cast<size_t>(graph->nodes[i]->output);
        if (first_write[o] == static_cast<int64_t>(i) && root[o] != o) {
            out.offset[o] = out.offset[root[o]];
        } else if (first_write[o] == static_cast<int64_t>(i)) {
            out.offset[o] = plan.place(node_extent(i));
            auto r = static_cast<size_t>(live_until[o]);
            while (r + 1 < nn && joined(r)) ++r;
            release_after[r].push_back(o);
        }
        // A tensor's memory becomes free after the node that reads it last (not before it runs).
        for (size_t t : release_after[i]) plan.release(out.offset[t], node_extent(static_cast<size_t>(first_write[t])));
    }
    out.peak = plan.peak();
    return out;
}

// plan_intermediates without aliases.
template <typename NodeExtent, typename Joined>
IntermediatePlan plan_intermediates(const basalt_graph* graph, uint64_t align, NodeExtent node_extent, Joined joined) {
    return plan_intermediates(graph, align, node_extent, joined, [](size_t) { return int64_t{-1}; });
}

// plan_intermediates with every node in its own dispatch and no aliases.
template <typename NodeExtent>
IntermediatePlan plan_intermediates(const basalt_graph* graph, uint64_t align, NodeExtent node_extent) {
    return plan_intermediates(graph, align, node_extent, [](size_t) { return false; });
}

}  // namespace basalt::sdk
