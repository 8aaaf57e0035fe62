// JSON in and out of template values: the caller's context (messages, tools, options) arrives as JSON text and
// becomes values whose strings are data; the tojson filter writes values as Python's json.dumps does (HF's
// tojson: ensure_ascii off unless asked, indent, separators, sort_keys).
#pragma once

#include <string>
#include <string_view>

#include "value.hpp"

namespace basalt::tmpl {

// Parses JSON text (RFC 8259; nesting at most max_depth) into a value whose strings and keys are all data.
// Throws std::invalid_argument naming the byte offset of the first error.
Value parse_json(std::string_view text, int max_depth = 128);

struct JsonStyle {
    int indent = -1;  // < 0: one line
    bool ensure_ascii = false;
    std::string item_separator;  // default ", " (one line) or "," (indented)
    std::string key_separator = ": ";
    bool sort_keys = false;
};

// json.dumps(v) with the given style. Throws std::invalid_argument for values JSON cannot hold (callables).
std::string to_json(const Value& v, const JsonStyle& style);

}  // namespace basalt::tmpl
