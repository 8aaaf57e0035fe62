#include "request-spec.hpp"

#include <algorithm>

namespace basalt::cli {

std::string read_string_or_list(const nlohmann::ordered_json& v, const char* name, const char* what,
                                std::vector<std::string>& out) {
    const std::string why = std::string("'") + name + "' must be " + what;
    if (v.is_string()) {
        out.push_back(v.get<std::string>());
        return {};
    }
    if (!v.is_array()) return why;
    for (const auto& e : v) {
        if (!e.is_string()) return why;
        out.push_back(e.get<std::string>());
    }
    return {};
}

std::string with_draft_adaptive(const std::string& spec, const std::string& setting) {
    if (setting.empty()) return spec;
    const std::string name = spec.substr(0, spec.find(':'));
    if (name != "speculative") return spec;
    const size_t colon = spec.find(':');
    const std::string params = colon == std::string::npos ? "" : spec.substr(colon + 1);
    // The parameters are key=value pairs separated by commas: `adaptive` given as a key keeps the request's value.
    for (size_t at = 0; at <= params.size();) {
        const size_t end = std::min(params.find(',', at), params.size());
        if (params.compare(at, end - at, "adaptive") == 0 || params.compare(at, 9, "adaptive=") == 0) return spec;
        at = end + 1;
    }
    const std::string value = setting == "off" ? "adaptive=0" : "adaptive=1";
    return colon == std::string::npos ? spec + ":" + value : params.empty() ? spec + value : spec + "," + value;
}

}  // namespace basalt::cli
