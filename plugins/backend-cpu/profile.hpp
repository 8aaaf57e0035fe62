// Per-op wall-time totals of the CPU backend (param "profile" or $BASALT_CPU_PROFILE=1), printed to stderr when the
// backend is destroyed: where a decode step or a prefill spends its time, without an external profiler.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>

namespace basalt::cpu {

class Profile {
  public:
    using Clock = std::chrono::steady_clock;

    // Adds `seconds` to the row `what` (an op name, or a phase such as "checks+plan"). Not thread-safe: the
    // thread that runs graph_compute records.
    void add(const std::string& what, double seconds) { tally(rows_[what], seconds); }
    // Adds `seconds` to a detail row: time inside the rows above (e.g. waits within a parallel region), printed
    // after them and not counted in the totals. Not thread-safe, like add().
    void add_detail(const std::string& what, double seconds) { tally(details_[what], seconds); }
    // Counts one computed graph.
    void graph_done() noexcept { ++graphs_; }
    // Prints the totals (per graph and share of the whole), largest first; nothing when no graph ran.
    void print(const char* label) const;

  private:
    struct Row {
        double seconds = 0;
        int64_t count = 0;
    };
    static void tally(Row& r, double seconds) noexcept {
        r.seconds += seconds;
        ++r.count;
    }
    std::map<std::string, Row> rows_;
    std::map<std::string, Row> details_;
    int64_t graphs_ = 0;
};

}  // namespace basalt::cpu
