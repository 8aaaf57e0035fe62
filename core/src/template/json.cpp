#include "json.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "tokenizer/unicode.hpp"
#include "value.hpp"

namespace basalt::tmpl {
namespace {

struct JsonReader {
    std::string_view s;
    size_t p = 0;
    int max_depth;

    [[noreturn]] void fail(const std::string& what) const {
        throw std::invalid_argument("JSON at byte " + std::to_string(p) + ": " + what);
    }
    void ws() {
        while (p < s.size() && (s[p] == ' ' || s[p] == '\t' || s[p] == '\n' || s[p] == '\r')) ++p;
    }
    void expect(char c) {
        ws();
        if (p >= s.size() || s[p] != c) fail(std::string("expected '") + c + "'");
        ++p;
    }
    uint32_t hex4() {
        if (p + 4 > s.size()) fail("truncated \\u escape");
        uint32_t v = 0;
        for (int i = 0; i < 4; ++i) {
            const char c = s[p++];
            v <<= 4;
            if (c >= '0' && c <= '9')
                v |= static_cast<uint32_t>(c - '0');
            else if (c >= 'a' && c <= 'f')
                v |= static_cast<uint32_t>(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F')
                v |= static_cast<uint32_t>(c - 'A' + 10);
            else
                fail("bad \\u escape");
        }
        return v;
    }
    std::string string() {
        expect('"');
        std::string out;
        while (true) {
            if (p >= s.size()) fail("unterminated string");
            const char c = s[p++];
            if (c == '"') break;
            if (static_cast<unsigned char>(c) < 0x20) fail("control character in string");
            if (c != '\\') {
                out += c;
                continue;
            }
            if (p >= s.size()) fail("unterminated escape");
            const char e = s[p++];
            switch (e) {
                case '"':
                case '\\':
                case '/':
                    out += e;
                    break;
                case 'b':
                    out += '\b';
                    break;
                case 'f':
                    out += '\f';
                    break;
                case 'n':
                    out += '\n';
                    break;
                case 'r':
                    out += '\r';
                    break;
                case 't':
                    out += '\t';
                    break;
                case 'u': {
                    uint32_t cp = hex4();
                    if (cp >= 0xD800 && cp < 0xDC00 && p + 1 < s.size() && s[p] == '\\' && s[p + 1] == 'u') {
                        p += 2;
                        const uint32_t lo = hex4();
                        if (lo >= 0xDC00 && lo < 0xE000)
                            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                        else
                            fail("bad surrogate pair");
                    }
                    unicode::append_utf8(out, cp);
                    break;
                }
                default:
                    fail(std::string("bad escape '\\") + e + "'");
            }
        }
        return out;
    }
    Value number() {
        const size_t start = p;
        if (p < s.size() && s[p] == '-') ++p;
        bool is_float = false;
        while (p < s.size()) {
            const char c = s[p];
            if (c >= '0' && c <= '9') {
                ++p;
            } else if (c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
                is_float = true;
                ++p;
            } else {
                break;
            }
        }
        const std::string t(s.substr(start, p - start));
        if (t.empty() || t == "-") fail("bad number");
        try {
            if (!is_float) return Value::of(static_cast<int64_t>(std::stoll(t)));
            return Value::of(std::stod(t));
        } catch (const std::exception&) {
            if (!is_float) return Value::of(std::stod(t));  // beyond int64: Python keeps it exact; we keep a float
            fail("bad number '" + t + "'");
        }
    }
    Value value(int depth) {
        if (depth > max_depth) fail("nesting deeper than " + std::to_string(max_depth));
        ws();
        if (p >= s.size()) fail("unexpected end");
        const char c = s[p];
        if (c == '{') {
            ++p;
            auto d = std::make_shared<Dict>();
            ws();
            if (p < s.size() && s[p] == '}') {
                ++p;
                return Value::of(d);
            }
            while (true) {
                ws();
                std::string k = string();
                expect(':');
                Value v = value(depth + 1);
                d->set(Str::from_data(std::move(k)), std::move(v));
                ws();
                if (p < s.size() && s[p] == ',') {
                    ++p;
                    continue;
                }
                expect('}');
                return Value::of(d);
            }
        }
        if (c == '[') {
            ++p;
            List l;
            ws();
            if (p < s.size() && s[p] == ']') {
                ++p;
                return Value::of(std::move(l));
            }
            while (true) {
                l.push_back(value(depth + 1));
                ws();
                if (p < s.size() && s[p] == ',') {
                    ++p;
                    continue;
                }
                expect(']');
                return Value::of(std::move(l));
            }
        }
        if (c == '"') return Value::of(Str::from_data(string()));
        if (s.substr(p, 4) == "true") {
            p += 4;
            return Value::of(true);
        }
        if (s.substr(p, 5) == "false") {
            p += 5;
            return Value::of(false);
        }
        if (s.substr(p, 4) == "null") {
            p += 4;
            return Value::none();
        }
        return number();
    }
};

void put_string(std::string& out, const std::string& s, bool ensure_ascii) {
    out += '"';
    for (size_t i = 0; i < s.size(); ++i) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        switch (c) {
            case '"':
                out += "\\\"";
                continue;
            case '\\':
                out += "\\\\";
                continue;
            case '\n':
                out += "\\n";
                continue;
            case '\r':
                out += "\\r";
                continue;
            case '\t':
                out += "\\t";
                continue;
            case '\b':
                out += "\\b";
                continue;
            case '\f':
                out += "\\f";
                continue;
            default:
                break;
        }
        char e[16];
        if (c < 0x20) {
            std::snprintf(e, sizeof e, "\\u%04x", c);
            out += e;
        } else if (c < 0x80 || !ensure_ascii) {
            out += static_cast<char>(c);
        } else {
            // Decode one UTF-8 sequence and escape it as Python does (\uXXXX, surrogate pairs above the BMP).
            uint32_t cp = 0;
            size_t n = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
            cp = n == 3 ? (c & 0x07u) : n == 2 ? (c & 0x0Fu) : n == 1 ? (c & 0x1Fu) : 0xFFFDu;
            for (size_t k = 0; k < n && i + 1 < s.size(); ++k)
                cp = (cp << 6) | (static_cast<unsigned char>(s[++i]) & 0x3Fu);
            if (cp >= 0x10000) {
                cp -= 0x10000;
                std::snprintf(e, sizeof e, "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
            } else {
                std::snprintf(e, sizeof e, "\\u%04x", cp);
            }
            out += e;
        }
    }
    out += '"';
}

// A key as json.dumps writes it: strings as they are, numbers and constants as their JSON text.
std::string key_text(const Value& k) {
    if (k.is_string()) return k.text();
    if (k.kind == Value::Kind::Bool) return k.boolean ? "true" : "false";
    if (k.is_none()) return "null";
    return k.to_str().text;
}

void dump(std::string& out, const Value& v, const JsonStyle& st, int level) {
    if (level > 512) throw std::invalid_argument("a value nested deeper than 512 levels");
    check_string_limit(out.size());
    const auto newline = [&](int lvl) {
        if (st.indent < 0) return;
        out += '\n';
        out.append(static_cast<size_t>(st.indent * lvl), ' ');
    };
    const std::string& item_sep = st.item_separator;
    switch (v.kind) {
        case Value::Kind::Undefined:
        case Value::Kind::None:
            out += "null";
            return;
        case Value::Kind::Bool:
            out += v.boolean ? "true" : "false";
            return;
        case Value::Kind::Int:
            out += std::to_string(v.integer);
            return;
        case Value::Kind::Float:
            if (std::isnan(v.number))
                out += "NaN";
            else if (std::isinf(v.number))
                out += v.number < 0 ? "-Infinity" : "Infinity";
            else
                out += float_repr(v.number);
            return;
        case Value::Kind::String:
            put_string(out, v.text(), st.ensure_ascii);
            return;
        case Value::Kind::Array: {
            if (v.list->empty()) {
                out += "[]";
                return;
            }
            out += '[';
            for (size_t i = 0; i < v.list->size(); ++i) {
                if (i) out += item_sep;
                newline(level + 1);
                dump(out, (*v.list)[i], st, level + 1);
            }
            newline(level);
            out += ']';
            return;
        }
        case Value::Kind::Map:
        case Value::Kind::Namespace: {
            if (v.dict->items.empty()) {
                out += "{}";
                return;
            }
            std::vector<const std::pair<Value, Value>*> items;
            for (const auto& kv : v.dict->items) items.push_back(&kv);
            if (st.sort_keys)
                std::stable_sort(items.begin(), items.end(),
                                 [](const auto* a, const auto* b) { return key_text(a->first) < key_text(b->first); });
            out += '{';
            for (size_t i = 0; i < items.size(); ++i) {
                if (i) out += item_sep;
                newline(level + 1);
                put_string(out, key_text(items[i]->first), st.ensure_ascii);
                out += st.key_separator;
                dump(out, items[i]->second, st, level + 1);
            }
            newline(level);
            out += '}';
            return;
        }
        case Value::Kind::Function:
            throw std::invalid_argument("Object of type function is not JSON serializable");
    }
}

}  // namespace

Value parse_json(std::string_view text, int max_depth) {
    JsonReader r{text, 0, max_depth};
    Value v = r.value(0);
    r.ws();
    if (r.p != text.size()) r.fail("trailing characters");
    return v;
}

std::string to_json(const Value& v, const JsonStyle& style) {
    JsonStyle st = style;
    if (st.item_separator.empty()) st.item_separator = st.indent >= 0 ? "," : ", ";
    std::string out;
    dump(out, v, st, 0);
    return out;
}

}  // namespace basalt::tmpl
