#include "json-limits.hpp"

#include <array>

namespace basalt::cli {

std::string check_json_limits(std::string_view text, const JsonLimits& limits) {
    // Per open container: whether it is an object, and its members so far (commas + 1 once one is seen).
    constexpr size_t kStack = 256;
    std::array<bool, kStack> is_object{};
    std::array<size_t, kStack> commas{};
    const size_t max_depth = limits.max_depth < kStack ? limits.max_depth : kStack - 1;
    size_t depth = 0;
    bool in_string = false;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\')
                ++i;  // the escaped character (\" does not end the string)
            else if (c == '"')
                in_string = false;
            continue;
        }
        switch (c) {
            case '"':
                in_string = true;
                break;
            case '{':
            case '[':
                if (depth == max_depth)
                    return "JSON nested deeper than " + std::to_string(limits.max_depth) + " levels";
                is_object[depth] = c == '{';
                commas[depth] = 0;
                ++depth;
                break;
            case '}':
            case ']':
                if (depth > 0) --depth;  // unbalanced text is the parser's to refuse
                break;
            case ',':
                if (depth > 0 && is_object[depth - 1] && ++commas[depth - 1] >= limits.max_keys)
                    return "a JSON object with more than " + std::to_string(limits.max_keys) + " keys";
                break;
            default:
                break;
        }
    }
    return {};
}

std::string excerpt(std::string_view text, size_t max_bytes) {
    if (text.size() <= max_bytes) return std::string(text);
    size_t cut = max_bytes;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
    return std::string(text.substr(0, cut)) + "...";
}

std::string value_excerpt(const nlohmann::ordered_json& v, size_t max_bytes) {
    return excerpt(v.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace), max_bytes);
}

}  // namespace basalt::cli
