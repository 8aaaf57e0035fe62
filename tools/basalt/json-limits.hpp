// Bounds on untrusted JSON text (request bodies of basalt serve, request lines of basalt batch), checked on the bytes
// before nlohmann parses them: nesting depth (deep values overflow the stack when dumped or destroyed) and keys per
// object (ordered_json inserts cost linear time each), and short excerpts of values for error messages.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace basalt::cli {

struct JsonLimits {
    size_t max_depth = 64;   // arrays and objects nested deeper are refused
    size_t max_keys = 1024;  // members of one object
};

// Returns "" or why text exceeds limits ("JSON nested deeper than 64 levels", "a JSON object with more than 1024
// keys"). One pass over the bytes, no allocation; malformed JSON is left to the parser. Pure function.
std::string check_json_limits(std::string_view text, const JsonLimits& limits = {});

// text cut to at most max_bytes (at a UTF-8 character boundary), "..." appended when cut. Pure function.
std::string excerpt(std::string_view text, size_t max_bytes = 40);

// The JSON text of v for an error message: at most max_bytes, cut as excerpt() does (invalid UTF-8 replaced).
// Pure function.
std::string value_excerpt(const nlohmann::ordered_json& v, size_t max_bytes = 40);

}  // namespace basalt::cli
