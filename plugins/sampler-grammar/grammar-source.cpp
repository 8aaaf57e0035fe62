// Grammar forms -> Grammar (grammar-source.hpp).
#include "grammar-source.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <climits>

#include "json-schema-gbnf.hpp"
#include "regex-gbnf.hpp"

namespace basalt::grammar {

namespace {

bool is_word(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-';
}

// Skips a "..." literal or a [...] class starting at s[i] (its escapes included); returns the index after it.
size_t skip_quoted(std::string_view s, size_t i, char close) {
    for (++i; i < s.size() && s[i] != close; ++i)
        if (s[i] == '\\') ++i;
    return i < s.size() ? i + 1 : s.size();
}

// The GBNF text with every rule name (definitions and references) renamed: `root` to `name`, any other rule R to
// `name-R`. Literals, classes, {m,n} counts and comments are copied as they are.
std::string rename_rules(std::string_view gbnf, const std::string& name) {
    std::string out;
    for (size_t i = 0; i < gbnf.size();) {
        const char c = gbnf[i];
        if (c == '"' || c == '[') {
            const size_t end = skip_quoted(gbnf, i, c == '"' ? '"' : ']');
            out.append(gbnf.substr(i, end - i));
            i = end;
        } else if (c == '{' || c == '#') {
            const size_t end = gbnf.find(c == '{' ? '}' : '\n', i);
            const size_t stop = end == std::string_view::npos ? gbnf.size() : end + (c == '{' ? 1 : 0);
            out.append(gbnf.substr(i, stop - i));
            i = stop;
        } else if (is_word(c)) {
            size_t end = i;
            while (end < gbnf.size() && is_word(gbnf[end])) ++end;
            const std::string_view word = gbnf.substr(i, end - i);
            out += word == "root" ? name : name + "-" + std::string(word);
            i = end;
        } else {
            out += c;
            ++i;
        }
    }
    return out;
}

// {"gbnf": TEXT, "schemas": {"NAME": SCHEMA, ...}, "trigger": T}: the GBNF with a rule NAME for each schema (its helper
// rules named NAME-...), so a grammar can put JSON values of a schema between literal text (tool calls).
std::string gbnf_with_schemas(std::string_view text) {
    const auto spec = nlohmann::json::parse(text, nullptr, false);
    if (spec.is_discarded() || !spec.is_object() || !spec.contains("gbnf") || !spec["gbnf"].is_string())
        throw GrammarError("gbnf_schemas: expected a JSON object {\"gbnf\": TEXT, \"schemas\": {NAME: SCHEMA}}");
    std::string out = spec["gbnf"].get<std::string>();
    if (!out.empty() && out.back() != '\n') out += '\n';
    if (!spec.contains("schemas")) return out;
    if (!spec["schemas"].is_object()) throw GrammarError("gbnf_schemas: 'schemas' must be an object");
    for (const auto& [name, schema] : spec["schemas"].items()) {
        if (name.empty() || name == "root" || !std::all_of(name.begin(), name.end(), is_word))
            throw GrammarError("gbnf_schemas: '" + name + "' is not a rule name (letters, digits, '-'; not root)");
        try {
            out += rename_rules(json_schema_grammar(schema.dump()), name);
        } catch (const GrammarError& e) {
            throw GrammarError("schema '" + name + "': " + e.what());
        }
    }
    return out;
}

}  // namespace

std::string source_to_gbnf(std::string_view kind, std::string_view text) {
    if (kind == "gbnf") return std::string(text);
    if (kind == "json_schema") return json_schema_grammar(text);
    if (kind == "regex") return regex_grammar(text);
    if (kind == "json") return json_object_grammar();
    if (kind == "gbnf_schemas") return gbnf_with_schemas(text);
    throw UnknownKind(std::string(kind));
}

std::string lazy_trigger(std::string_view kind, std::string_view text) {
    if (kind != "gbnf_schemas") return "";
    const auto spec = nlohmann::json::parse(text, nullptr, false);
    if (spec.is_discarded() || !spec.is_object() || !spec.contains("trigger")) return "";
    const auto& t = spec["trigger"];
    if (!t.is_string() || t.get<std::string>().empty())
        throw GrammarError("gbnf_schemas: 'trigger' must be a non-empty string");
    return t.get<std::string>();
}

std::vector<std::pair<int32_t, std::string>> control_tokens(std::string_view kind, std::string_view text) {
    std::vector<std::pair<int32_t, std::string>> out;
    if (kind != "gbnf_schemas") return out;
    const auto spec = nlohmann::json::parse(text, nullptr, false);
    if (spec.is_discarded() || !spec.is_object() || !spec.contains("tokens")) return out;
    const auto& t = spec["tokens"];
    if (!t.is_object()) throw GrammarError("gbnf_schemas: 'tokens' must be an object {TEXT: TOKEN_ID}");
    for (const auto& [marker, id] : t.items()) {
        if (marker.empty() || !id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
            throw GrammarError("gbnf_schemas: 'tokens' maps a non-empty text to a token id, not '" + marker +
                               "': " + id.dump());
        out.emplace_back(id.get<int32_t>(), marker);
    }
    return out;
}

Grammar compile_source(std::string_view kind, std::string_view text) {
    return parse_gbnf(source_to_gbnf(kind, text));
}

}  // namespace basalt::grammar
