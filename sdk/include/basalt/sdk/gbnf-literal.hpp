// Basalt SDK: quoting text as a GBNF string literal (llama.cpp's grammar dialect, which the grammar sampler reads),
// for code that generates GBNF: schema and regex compilers, tool-call grammars. Header-only C++17; nothing here
// crosses the ABI.
#pragma once

#include <string>
#include <string_view>

namespace basalt::sdk {

// Returns `text` as a GBNF literal: "..." with quotes, backslashes and control bytes escaped, UTF-8 bytes kept as
// they are. Pure function, thread-safe.
inline std::string gbnf_literal(std::string_view text) {
    static constexpr const char* kHex = "0123456789ABCDEF";
    std::string out = "\"";
    for (const char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += ch;
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c < 0x20 || c == 0x7F) {
            out += "\\x";
            out += kHex[c >> 4];
            out += kHex[c & 15];
        } else {
            out += ch;
        }
    }
    return out + "\"";
}

}  // namespace basalt::sdk
