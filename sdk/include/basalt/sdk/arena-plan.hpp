// First-fit placement of a graph's intermediate tensors in one arena, reusing a range once its tensor's last
// reader has run. Header-only, for backend plugins (the CPU and Vulkan backends both plan with it).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

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

}  // namespace basalt::sdk
