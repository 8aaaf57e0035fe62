#include "request-spec.hpp"

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

}  // namespace basalt::cli
