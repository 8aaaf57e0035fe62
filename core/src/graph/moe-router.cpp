#include "graph/moe-router.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <numeric>

#include "support/error.hpp"

namespace basalt {

MoeRouter MoeRouter::parse(const std::string& spec) {
    MoeRouter r;
    if (spec.empty() || spec == "dropless") return r;
    const std::string head = "capacity";
    if (spec.compare(0, head.size(), head) != 0 || (spec.size() > head.size() && spec[head.size()] != ':')) {
        fail(BASALT_ERR_INVALID_ARGUMENT,
             "MoE router '{}' is not 'dropless' or 'capacity:factor=C,overflow=drop|reroute'", spec);
    }
    r.capacity = true;
    std::string rest = spec.size() > head.size() ? spec.substr(head.size() + 1) : std::string();
    size_t at = 0;
    while (at < rest.size()) {
        const size_t end = std::min(rest.find(',', at), rest.size());
        const std::string item = rest.substr(at, end - at);
        const size_t eq = item.find('=');
        const std::string key = item.substr(0, eq);
        const std::string value = eq == std::string::npos ? std::string() : item.substr(eq + 1);
        if (key == "factor") {
            double f = 0;
            const auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), f);
            if (value.empty() || ec != std::errc() || p != value.data() + value.size() || !std::isfinite(f) || f <= 0) {
                fail(BASALT_ERR_INVALID_ARGUMENT, "MoE router '{}': factor '{}' is not a number above 0", spec, value);
            }
            r.factor = f;
        } else if (key == "overflow") {
            if (value != "drop" && value != "reroute") {
                fail(BASALT_ERR_INVALID_ARGUMENT, "MoE router '{}': overflow '{}' is not drop or reroute", spec, value);
            }
            r.reroute = value == "reroute";
        } else {
            fail(BASALT_ERR_INVALID_ARGUMENT, "MoE router '{}': unknown key '{}' (keys: factor, overflow)", spec, key);
        }
        at = end + 1;
    }
    return r;
}

int32_t MoeRouter::expert_capacity(int64_t tokens, int64_t k, int64_t n_expert) const {
    const double c = std::ceil(factor * static_cast<double>(tokens) * static_cast<double>(k) /
                               static_cast<double>(std::max<int64_t>(1, n_expert)));
    return static_cast<int32_t>(std::clamp(c, 1.0, static_cast<double>(std::numeric_limits<int32_t>::max())));
}

uint64_t MoeLayerStats::assignments() const {
    return std::accumulate(per_expert.begin(), per_expert.end(), uint64_t{0});
}

double MoeLayerStats::imbalance() const {
    if (per_expert.empty()) return 0;
    const uint64_t total = assignments();
    if (total == 0) return 0;
    const uint64_t mx = *std::max_element(per_expert.begin(), per_expert.end());
    return static_cast<double>(mx) * static_cast<double>(per_expert.size()) / static_cast<double>(total);
}

}  // namespace basalt
