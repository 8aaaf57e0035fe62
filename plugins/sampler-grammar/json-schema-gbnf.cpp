// JSON Schema -> GBNF (json-schema-gbnf.hpp).
#include "json-schema-gbnf.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "grammar.hpp"
#include "regex-gbnf.hpp"

namespace basalt::grammar {
namespace {

using json = nlohmann::ordered_json;

// The value rules every schema may use, each followed by `space`.
const std::map<std::string, std::string>& primitives() {
    static const std::map<std::string, std::string> p = {
        {"space", "| \" \" | \"\\n\"{1,2} [ \\t]{0,20}"},
        {"boolean", "(\"true\" | \"false\") space"},
        {"null", "\"null\" space"},
        {"integral-part", "[0] | [1-9] [0-9]{0,15}"},
        {"decimal-part", "[0-9]{1,16}"},
        {"number", "(\"-\"? integral-part) (\".\" decimal-part)? ([eE] [-+]? integral-part)? space"},
        {"integer", "(\"-\"? integral-part) space"},
        {"char", "[^\"\\\\\\x7F\\x00-\\x1F] | [\\\\] ([\"\\\\bfnrt] | \"u\" [0-9a-fA-F]{4})"},
        {"string", "\"\\\"\" char* \"\\\"\" space"},
        {"value", "object | array | string | number | boolean | null"},
        {"object", "\"{\" space ( string \":\" space value (\",\" space string \":\" space value)* )? \"}\" space"},
        {"array", "\"[\" space ( value (\",\" space value)* )? \"]\" space"},
        {"uuid",
         "\"\\\"\" [0-9a-fA-F]{8} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" "
         "[0-9a-fA-F]{12} \"\\\"\" space"},
        {"date", "[0-9]{4} \"-\" ( \"0\" [1-9] | \"1\" [0-2] ) \"-\" ( \"0\" [1-9] | [1-2] [0-9] | \"3\" [0-1] )"},
        {"time",
         "([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9] \":\" [0-5] [0-9] ( \".\" [0-9]{3} )? ( \"Z\" | ( \"+\" | "
         "\"-\" ) ( [01] [0-9] | \"2\" [0-3] ) \":\" [0-5] [0-9] )"},
        {"date-time", "date \"T\" time"},
        {"date-string", "\"\\\"\" date \"\\\"\" space"},
        {"time-string", "\"\\\"\" time \"\\\"\" space"},
        {"date-time-string", "\"\\\"\" date-time \"\\\"\" space"},
    };
    return p;
}

// Which primitive rules a primitive's body references.
const std::map<std::string, std::vector<std::string>>& primitive_deps() {
    static const std::map<std::string, std::vector<std::string>> d = {
        {"boolean", {"space"}},
        {"null", {"space"}},
        {"number", {"integral-part", "decimal-part", "space"}},
        {"integer", {"integral-part", "space"}},
        {"string", {"char", "space"}},
        {"value", {"object", "array", "string", "number", "boolean", "null"}},
        {"object", {"string", "value", "space"}},
        {"array", {"value", "space"}},
        {"uuid", {"space"}},
        {"date-time", {"date", "time"}},
        {"date-string", {"date", "space"}},
        {"time-string", {"time", "space"}},
        {"date-time-string", {"date-time", "space"}},
    };
    return d;
}

// Digits-only range helpers for integer bounds: GBNF for the decimal strings of length n in [lo, hi].
std::string digit_class(char a, char b) {
    if (a == b) return std::string("\"") + a + "\"";
    return std::string("[") + a + "-" + b + "]";
}

std::string same_length_range(const std::string& lo, const std::string& hi) {
    const size_t n = lo.size();
    if (n == 0) return "";
    if (lo == std::string(n, '0') && hi == std::string(n, '9')) {
        return n == 1 ? "[0-9]" : "[0-9]{" + std::to_string(n) + "}";
    }
    if (lo[0] == hi[0]) {
        const std::string rest = same_length_range(lo.substr(1), hi.substr(1));
        return digit_class(lo[0], lo[0]) + (rest.empty() ? "" : " " + rest);
    }
    std::vector<std::string> alts;
    const std::string nines(n - 1, '9'), zeros(n - 1, '0');
    auto with = [&](char d, const std::string& a, const std::string& b) {
        const std::string rest = same_length_range(a, b);
        return digit_class(d, d) + (rest.empty() ? "" : " " + rest);
    };
    alts.push_back(with(lo[0], lo.substr(1), nines));
    if (hi[0] - lo[0] > 1) {
        std::string mid = digit_class(static_cast<char>(lo[0] + 1), static_cast<char>(hi[0] - 1));
        if (n > 1) mid += " " + same_length_range(zeros, nines);
        alts.push_back(mid);
    }
    alts.push_back(with(hi[0], zeros, hi.substr(1)));
    std::string out = "(";
    for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
    return out + ")";
}

// Non-negative integers in [lo, hi] (hi empty: unbounded, up to 16 digits as integral-part), no leading zeros.
std::string nonneg_range(uint64_t lo, bool bounded, uint64_t hi_value) {
    const std::string a = std::to_string(lo);
    std::vector<std::string> alts;
    const std::string hi_text = std::to_string(hi_value);
    const size_t max_len = bounded ? hi_text.size() : a.size();
    for (size_t len = a.size(); len <= max_len; ++len) {
        const std::string first = len == 1 ? "0" : "1" + std::string(len - 1, '0');
        const std::string from = len == a.size() ? a : first;
        const std::string to = (bounded && len == max_len) ? hi_text : std::string(len, '9');
        if (from <= to) alts.push_back(same_length_range(from, to));
    }
    if (!bounded && a.size() < 16) {  // every longer number
        alts.push_back("[1-9] [0-9]{" + std::to_string(a.size()) + ",15}");
    }
    if (alts.empty()) return "";
    std::string out = "(";
    for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
    return out + ")";
}

class Converter {
  public:
    explicit Converter(json root) : root_(std::move(root)) {}

    std::string run() {
        const std::string body = visit(root_, "root", "#");
        if (body != "root") add_rule("root", body, true);
        std::string out;
        for (const auto& [name, rule] : rules_) out += name + " ::= " + rule + "\n";
        return out;
    }

  private:
    json root_;
    std::map<std::string, std::string> rules_;
    std::set<std::string> refs_done_;

    [[noreturn]] static void fail(const std::string& where, const std::string& what) {
        throw GrammarError("json schema: " + what + " at " + where);
    }

    std::string prim(const std::string& name) {
        if (rules_.count(name) == 0) {
            rules_[name] = primitives().at(name);
            auto it = primitive_deps().find(name);
            if (it != primitive_deps().end()) {
                for (const std::string& d : it->second) prim(d);
            }
        }
        return name;
    }

    // Adds a rule under a name derived from `hint` (suffixed when taken, unless `exact`); returns its name.
    std::string add_rule(const std::string& hint, const std::string& body, bool exact = false) {
        std::string name;
        for (const char c : hint) name += (std::isalnum(static_cast<unsigned char>(c)) ? c : '-');
        if (name.empty()) name = "r";
        if (!exact && rules_.count(name) != 0 && rules_[name] != body) {
            int i = 1;
            while (rules_.count(name + "-" + std::to_string(i)) != 0 && rules_[name + "-" + std::to_string(i)] != body)
                ++i;
            name += "-" + std::to_string(i);
        }
        rules_[name] = body;
        return name;
    }

    static void check_keywords(const json& s, const std::string& where) {
        static const std::set<std::string> known = {
            "type", "properties", "required", "additionalProperties", "items", "prefixItems", "minItems", "maxItems",
            "enum", "const", "anyOf", "oneOf", "$ref", "$defs", "definitions", "minimum", "maximum", "exclusiveMinimum",
            "exclusiveMaximum", "minLength", "maxLength", "pattern", "format",
            // annotations
            "title", "description", "default", "examples", "$schema", "$id", "$comment", "strict", "deprecated",
            "readOnly", "writeOnly", "name", "nullable"};
        for (auto it = s.begin(); it != s.end(); ++it) {
            if (known.count(it.key()) == 0) fail(where + "/" + it.key(), "unsupported keyword '" + it.key() + "'");
        }
    }

    const json& resolve(const std::string& ref, const std::string& where) {
        std::string name;
        const json* table = nullptr;
        if (ref.rfind("#/$defs/", 0) == 0) {
            name = ref.substr(8);
            table = root_.contains("$defs") ? &root_["$defs"] : nullptr;
        } else if (ref.rfind("#/definitions/", 0) == 0) {
            name = ref.substr(14);
            table = root_.contains("definitions") ? &root_["definitions"] : nullptr;
        } else if (ref == "#") {
            return root_;
        } else {
            fail(where, "unsupported $ref '" + ref + "' (only #, #/$defs/NAME and #/definitions/NAME)");
        }
        if (table == nullptr || !table->contains(name)) fail(where, "$ref '" + ref + "' names no definition");
        return (*table)[name];
    }

    std::string literal_value(const json& v) { return gbnf_literal(v.dump()) + " space"; }

    std::string visit(const json& s, const std::string& name, const std::string& where) {
        if (s.is_boolean()) {
            if (!s.get<bool>()) fail(where, "the schema 'false' matches nothing");
            return prim("value");
        }
        if (!s.is_object()) fail(where, "a schema must be an object or a boolean");
        check_keywords(s, where);
        prim("space");
        if (s.contains("$ref")) {
            const std::string ref = s["$ref"].get<std::string>();
            std::string rule = "ref-" + ref.substr(ref.find_last_of('/') + 1);
            if (ref == "#") rule = "root";
            for (char& c : rule) {
                if (!std::isalnum(static_cast<unsigned char>(c))) c = '-';
            }
            if (refs_done_.insert(rule).second && rule != "root") {
                rules_[rule] = "";  // reserve the name: recursive references see it
                rules_[rule] = visit(resolve(ref, where + "/$ref"), rule, where + "/$ref");
            }
            return rule;
        }
        for (const char* key : {"anyOf", "oneOf"}) {
            if (s.contains(key)) {
                const json& list = s[key];
                if (!list.is_array() || list.empty()) fail(where + "/" + key, "expected a non-empty array");
                std::string out = "(";
                for (size_t i = 0; i < list.size(); ++i) {
                    const std::string w = where + "/" + key + "/" + std::to_string(i);
                    out += (i ? " | " : "") + visit(list[i], name + "-" + std::to_string(i), w);
                }
                return out + ")";
            }
        }
        if (s.contains("const")) return literal_value(s["const"]);
        if (s.contains("enum")) {
            const json& list = s["enum"];
            if (!list.is_array() || list.empty()) fail(where + "/enum", "expected a non-empty array");
            std::string out = "(";
            for (size_t i = 0; i < list.size(); ++i) out += (i ? " | " : "") + gbnf_literal(list[i].dump());
            return out + ") space";
        }
        std::vector<std::string> types;
        if (s.contains("type")) {
            const json& t = s["type"];
            if (t.is_string()) {
                types.push_back(t.get<std::string>());
            } else if (t.is_array()) {
                for (const json& x : t) types.push_back(x.get<std::string>());
            } else {
                fail(where + "/type", "expected a string or an array of strings");
            }
        } else if (s.contains("properties") || s.contains("additionalProperties")) {
            types.push_back("object");
        } else if (s.contains("items") || s.contains("prefixItems")) {
            types.push_back("array");
        } else if (s.contains("minLength") || s.contains("maxLength") || s.contains("pattern") ||
                   s.contains("format")) {
            types.push_back("string");
        } else {
            return prim("value");
        }
        if (types.size() > 1) {
            std::string out = "(";
            for (size_t i = 0; i < types.size(); ++i) {
                json one = s;
                one["type"] = types[i];
                out += (i ? " | " : "") + visit(one, name + "-" + types[i], where);
            }
            return out + ")";
        }
        const std::string& type = types[0];
        if (type == "object") return object(s, name, where);
        if (type == "array") return array(s, name, where);
        if (type == "string") return string(s, name, where);
        if (type == "integer") return integer(s, name, where);
        if (type == "number") {
            for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
                if (s.contains(k))
                    fail(where + "/" + k, std::string("'") + k + "' is supported for integers only, not numbers");
            }
            return prim("number");
        }
        if (type == "boolean") return prim("boolean");
        if (type == "null") return prim("null");
        fail(where + "/type", "unknown type '" + type + "'");
    }

    std::string object(const json& s, const std::string& name, const std::string& where) {
        const json props = s.value("properties", json::object());
        if (!props.is_object()) fail(where + "/properties", "expected an object");
        std::set<std::string> required;
        if (s.contains("required")) {
            for (const json& r : s["required"]) {
                const std::string key = r.get<std::string>();
                if (!props.contains(key))
                    fail(where + "/required", "required property '" + key + "' is not among the properties");
                required.insert(key);
            }
        }
        json additional = s.contains("additionalProperties") ? s["additionalProperties"] : json(props.empty());
        if (props.empty() && additional.is_boolean() && additional.get<bool>()) return prim("object");
        std::string extra_kv;
        if (!(additional.is_boolean() && !additional.get<bool>())) {
            const std::string value = additional.is_boolean()
                                          ? prim("value")
                                          : visit(additional, name + "-additional", where + "/additionalProperties");
            extra_kv = add_rule(name + "-additional-kv", prim("string") + " \":\" space " + value);
        }
        std::vector<std::pair<std::string, bool>> kvs;  // rule, required
        size_t i = 0;
        for (auto it = props.begin(); it != props.end(); ++it, ++i) {
            const std::string value = visit(it.value(), name + "-" + it.key(), where + "/properties/" + it.key());
            const std::string kv = add_rule(name + "-" + it.key() + "-kv",
                                            gbnf_literal(json(it.key()).dump()) + " space \":\" space " + value);
            kvs.emplace_back(kv, required.count(it.key()) != 0);
        }
        // rest_i: what may follow once something was written; first_i: what may start the object at property i
        const size_t n = kvs.size();
        std::string rest = extra_kv.empty() ? "" : "(\",\" space " + extra_kv + ")*";
        std::string first = extra_kv.empty() ? "" : "(" + extra_kv + " (\",\" space " + extra_kv + ")*)?";
        for (size_t k = n; k-- > 0;) {
            const auto& [kv, req] = kvs[k];
            const std::string rest_next = rest.empty() ? "" : add_rule(name + "-rest-" + std::to_string(k + 1), rest);
            const std::string first_next =
                first.empty() ? "" : add_rule(name + "-first-" + std::to_string(k + 1), first);
            const std::string tail = rest_next.empty() ? "" : " " + rest_next;
            if (req) {
                first = kv + tail;
                rest = "\",\" space " + kv + tail;
            } else {
                first = "(" + kv + tail + (first_next.empty() ? " | \"\"" : " | " + first_next) + ")";
                rest = "(\",\" space " + kv + ")?" + tail;
            }
        }
        return add_rule(name, "\"{\" space " + (first.empty() ? "" : first + " ") + "\"}\" space");
    }

    std::string array(const json& s, const std::string& name, const std::string& where) {
        const uint64_t min = s.value("minItems", uint64_t{0});
        const std::optional<uint64_t> max =
            s.contains("maxItems") ? std::optional<uint64_t>(s["maxItems"].get<uint64_t>()) : std::nullopt;
        if (max && *max < min) fail(where + "/maxItems", "maxItems is below minItems");
        if (s.contains("prefixItems")) {
            const json& list = s["prefixItems"];
            std::string body = "\"[\" space";
            for (size_t i = 0; i < list.size(); ++i) {
                if (i) body += " \",\" space";
                body +=
                    " " + visit(list[i], name + "-" + std::to_string(i), where + "/prefixItems/" + std::to_string(i));
            }
            return add_rule(name, body + " \"]\" space");
        }
        const std::string item =
            s.contains("items") ? visit(s["items"], name + "-item", where + "/items") : prim("value");
        const std::string more = "(\",\" space " + item + ")";
        std::string list;
        const uint64_t lo = min > 0 ? min - 1 : 0;
        if (max && *max == 0) {
            list = "";
        } else if (max) {
            list = item + " " + more + "{" + std::to_string(lo) + "," + std::to_string(*max - 1) + "}";
        } else {
            list = item + " " + more + "{" + std::to_string(lo) + ",}";
        }
        if (!list.empty() && min == 0) list = "(" + list + ")?";
        return add_rule(name, "\"[\" space " + (list.empty() ? "" : list + " ") + "\"]\" space");
    }

    std::string string(const json& s, const std::string& name, const std::string& where) {
        if (s.contains("pattern")) {
            std::string pat = s["pattern"].get<std::string>();
            if (!pat.empty() && pat.front() == '^') pat.erase(0, 1);
            if (!pat.empty() && pat.back() == '$') pat.pop_back();
            std::string body;
            try {
                body = regex_to_gbnf(pat, true);
            } catch (const GrammarError& e) {
                fail(where + "/pattern", e.what());
            }
            return add_rule(name, "\"\\\"\" " + body + " \"\\\"\" space");
        }
        if (s.contains("format")) {
            const std::string f = s["format"].get<std::string>();
            if (f == "uuid") return prim("uuid");
            if (f == "date" || f == "time" || f == "date-time") return prim(f + "-string");
        }
        const uint64_t min = s.value("minLength", uint64_t{0});
        if (!s.contains("maxLength") && min == 0) return prim("string");
        prim("char");
        std::string rep = "{" + std::to_string(min) + ",";
        if (s.contains("maxLength")) {
            const auto max = s["maxLength"].get<uint64_t>();
            if (max < min) fail(where + "/maxLength", "maxLength is below minLength");
            rep += std::to_string(max);
        }
        return add_rule(name, "\"\\\"\" char" + rep + "} \"\\\"\" space");
    }

    std::string integer(const json& s, const std::string& name, const std::string& where) {
        std::optional<int64_t> lo, hi;
        auto bound = [&](const char* key, int64_t adjust, std::optional<int64_t>& out, bool is_min) {
            if (!s.contains(key)) return;
            const json& v = s[key];
            if (!v.is_number()) fail(where + "/" + key, "expected a number");
            const double d = v.get<double>();
            int64_t b = static_cast<int64_t>(is_min ? std::ceil(d) : std::floor(d));
            if (adjust != 0 && static_cast<double>(b) == d) b += adjust;
            out = out ? (is_min ? std::max(*out, b) : std::min(*out, b)) : b;
        };
        bound("minimum", 0, lo, true);
        bound("exclusiveMinimum", 1, lo, true);
        bound("maximum", 0, hi, false);
        bound("exclusiveMaximum", -1, hi, false);
        if (!lo && !hi) return prim("integer");
        if (lo && hi && *lo > *hi) fail(where, "no integer lies between the minimum and the maximum");
        std::vector<std::string> alts;
        // negative part: -x for x in [max(1, -hi), -lo]
        if (!lo || *lo < 0) {
            const uint64_t from = hi && *hi < 0 ? static_cast<uint64_t>(-*hi) : 1;
            const std::string r = nonneg_range(from, lo.has_value(), lo ? static_cast<uint64_t>(-*lo) : 0);
            if (!r.empty()) alts.push_back("\"-\" " + r);
        }
        if (!hi || *hi >= 0) {
            const uint64_t from = lo && *lo > 0 ? static_cast<uint64_t>(*lo) : 0;
            const std::string r = nonneg_range(from, hi.has_value(), hi ? static_cast<uint64_t>(*hi) : 0);
            if (!r.empty()) alts.push_back(r);
        }
        std::string body = "(";
        for (size_t i = 0; i < alts.size(); ++i) body += (i ? " | " : "") + alts[i];
        return add_rule(name, body + ") space");
    }
};

}  // namespace

std::string json_schema_grammar(std::string_view schema_json) {
    json schema;
    try {
        schema = json::parse(schema_json);
    } catch (const json::exception& e) {
        throw GrammarError(std::string("json schema: not valid JSON: ") + e.what());
    }
    try {
        return Converter(std::move(schema)).run();
    } catch (const json::exception& e) {
        throw GrammarError(std::string("json schema: a keyword has a value of the wrong type: ") + e.what());
    }
}

std::string json_object_grammar() {
    return json_schema_grammar(R"({"type": "object"})");
}

}  // namespace basalt::grammar
