#include "profile.hpp"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace basalt::cpu {

void Profile::print(const char* label) const {
    if (graphs_ == 0) return;
    std::vector<std::pair<std::string, Row>> rows(rows_.begin(), rows_.end());
    std::sort(rows.begin(), rows.end(),
              [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
    double total = 0;
    for (const auto& r : rows) total += r.second.seconds;
    const auto g = static_cast<double>(graphs_);
    std::fprintf(stderr, "[%s profile] %lld graphs, %.3f ms per graph\n", label, static_cast<long long>(graphs_),
                 total * 1e3 / g);
    for (const auto& [what, r] : rows) {
        std::fprintf(stderr, "[%s profile] %-12s %8.1f per graph %9.1f us per graph %6.1f %%  %8.2f us each\n", label,
                     what.c_str(), static_cast<double>(r.count) / g, r.seconds * 1e6 / g,
                     total > 0 ? 100.0 * r.seconds / total : 0.0, r.seconds * 1e6 / static_cast<double>(r.count));
    }
    for (const auto& [what, r] : details_) {
        std::fprintf(stderr, "[%s profile]   within: %-28s %8.1f per graph %9.1f us per graph  %8.2f us each\n", label,
                     what.c_str(), static_cast<double>(r.count) / g, r.seconds * 1e6 / g,
                     r.seconds * 1e6 / static_cast<double>(r.count));
    }
}

}  // namespace basalt::cpu
