// MoE routing statistics as basalt eval, perplexity and batch report them (JSON and lines of text).
#pragma once

#include <basalt/basalt.hpp>

#include <functional>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

namespace basalt::cli {

// The statistics of a session that collects them (basalt_session_set_moe_stats) as JSON: router, totals (dropped /
// rerouted counts and fractions of every layer's assignments, the largest imbalance) and per layer (passes, tokens,
// assignments, dropped, rerouted, imbalance, per_expert). Throws cpp::Error.
nlohmann::json moe_stats_json(basalt_session* session, const cpp::Model& model, const std::string& router);
// The same from any source of per-layer statistics (get: basalt_session_moe_stats or basalt_engine_moe_stats bound
// to their handle).
nlohmann::json moe_stats_json(const std::function<basalt_status(uint32_t, basalt_moe_stats*, uint64_t*, size_t)>& get,
                              const cpp::Model& model, const std::string& router);
// The same as lines of text.
void print_moe_stats(const nlohmann::json& stats, std::ostream& os);

}  // namespace basalt::cli
