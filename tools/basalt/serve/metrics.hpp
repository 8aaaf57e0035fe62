// Prometheus metrics of `basalt serve`: requests by endpoint and status, tokens, TTFT and ITL histograms; engine
// gauges (queue, running, KV slots, prefix-cache hit rate) are read from basalt_engine_stats_get when scraped.
#pragma once

#include <basalt/basalt.h>

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace basalt::serve {

// A cumulative histogram with fixed upper bounds (seconds). Not thread-safe alone: Metrics locks.
struct Histogram {
    std::vector<double> bounds;
    std::vector<uint64_t> counts;  // per bound, non-cumulative; one more for +Inf
    double sum = 0;
    uint64_t count = 0;
    explicit Histogram(std::vector<double> b) : bounds(std::move(b)), counts(bounds.size() + 1, 0) {}
    void observe(double v);
};

// All counters of one server. Thread-safe.
class Metrics {
  public:
    Metrics();
    // Counts one answered HTTP request.
    void count_request(const std::string& endpoint, int status);
    // Adds one finished generation's figures (ttft and itl in milliseconds, as basalt_request_stats gives them).
    void count_generation(uint64_t prompt_tokens, uint64_t cached_tokens, uint64_t generated_tokens, double ttft_ms,
                          const std::vector<double>& itl_ms, const char* finish_reason);
    // Prometheus text exposition (version 0.0.4) of everything, with the engine's gauges (engine may be NULL).
    std::string render(const basalt_engine* engine, int64_t http_inflight) const;

  private:
    mutable std::mutex mu_;
    std::map<std::pair<std::string, int>, uint64_t> requests_;
    std::map<std::string, uint64_t> finish_;
    uint64_t prompt_tokens_ = 0, cached_tokens_ = 0, generated_tokens_ = 0;
    Histogram ttft_, itl_;
};

}  // namespace basalt::serve
