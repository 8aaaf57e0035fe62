// Profiling and statistics (BASALT_VK_PROFILE=1, BASALT_VK_STATS=1): a timestamp query pair around every node,
// GPU time summed per op, and the totals printed to stderr when the backend is destroyed.
#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "backend.hpp"
#include "common.hpp"

namespace basalt::vk {

// Grows the timestamp query pool to two queries per node.
void Backend::ensure_queries(size_t nn) {
    if (query_cap_ >= 2 * nn) return;
    if (queries_ != VK_NULL_HANDLE) a_.vkDestroyQueryPool(dev_, queries_, nullptr);
    queries_ = VK_NULL_HANDLE;
    query_cap_ = 0;
    VkQueryPoolCreateInfo qi{};
    qi.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO;
    qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qi.queryCount = static_cast<uint32_t>(2 * nn);
    vk_check(a_.vkCreateQueryPool(dev_, &qi, nullptr, &queries_), "vkCreateQueryPool");
    query_cap_ = qi.queryCount;
}

// Adds the GPU time of each node of the graph just run to its op's total.
void Backend::read_profile(const basalt_graph* g) {
    const size_t nn = g->n_nodes;
    std::vector<uint64_t> ts(2 * nn);
    vk_check(a_.vkGetQueryPoolResults(dev_, queries_, 0, static_cast<uint32_t>(2 * nn), ts.size() * 8, ts.data(), 8,
                                      VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
             "vkGetQueryPoolResults");
    const double period = desc_.props.limits.timestampPeriod;
    for (size_t i = 0; i < nn; ++i) {
        auto& e = profile_totals_[op_name(g->nodes[i]->op)];
        e.first += static_cast<double>(ts[2 * i + 1] - ts[2 * i]) * period;
        e.second += 1;
    }
    ++profile_graphs_;
}

void Backend::print_stats() const noexcept {
    if (stats_ || profile_) {
        std::fprintf(stderr, "[vulkan] %llu graphs: %llu command buffers recorded, %llu graphs replayed from one\n",
                     static_cast<unsigned long long>(n_graphs_), static_cast<unsigned long long>(n_recorded_),
                     static_cast<unsigned long long>(n_replayed_));
    }
    if (profile_ && !profile_totals_.empty()) {
        std::vector<std::pair<std::string, std::pair<double, int>>> rows(profile_totals_.begin(),
                                                                         profile_totals_.end());
        std::sort(rows.begin(), rows.end(),
                  [](const auto& x, const auto& y) { return x.second.first > y.second.first; });
        double total = 0;
        for (const auto& r : rows) total += r.second.first;
        std::fprintf(stderr, "[vulkan profile] %llu graphs, %.3f ms GPU time in nodes\n",
                     static_cast<unsigned long long>(profile_graphs_), total * 1e-6);
        for (const auto& r : rows) {
            std::fprintf(stderr, "[vulkan profile] %-12s %8d nodes %10.3f ms %6.1f %%  %8.1f us/node\n",
                         r.first.c_str(), r.second.second, r.second.first * 1e-6,
                         total > 0 ? 100.0 * r.second.first / total : 0.0,
                         r.second.second > 0 ? r.second.first * 1e-3 / r.second.second : 0.0);
        }
    }
}

}  // namespace basalt::vk
