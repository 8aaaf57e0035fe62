// response_format, grammar, json_schema, regex (structured-output.hpp).
#include "structured-output.hpp"

#include <set>
#include <string>

namespace basalt::serve {

const std::set<std::string>& structured_output_keys() {
    static const std::set<std::string> k = {"grammar", "json_schema", "regex"};
    return k;
}

namespace {

[[noreturn]] void bad(const std::string& param, const std::string& message) {
    throw ApiError(400, message, param);
}

bool has(const json& body, const char* key) {
    return body.contains(key) && !body[key].is_null();
}

void set(cli::RequestSpec& spec, int32_t kind, std::string text, const char* field) {
    if (spec.grammar_kind != BASALT_GRAMMAR_NONE)
        bad(field, std::string("'") + field +
                       "' conflicts with another output constraint (give one of response_format, grammar, "
                       "json_schema, regex)");
    spec.grammar_kind = kind;
    spec.grammar = std::move(text);
}

}  // namespace

void read_structured_output(const json& body, bool chat, cli::RequestSpec& spec) {
    if (chat && has(body, "response_format")) {
        const json& rf = body["response_format"];
        if (!rf.is_object() || !rf.contains("type") || !rf["type"].is_string())
            bad("response_format", "'response_format' must be an object with a 'type'");
        const std::string type = rf["type"].get<std::string>();
        if (type == "json_object") {
            set(spec, BASALT_GRAMMAR_JSON, "", "response_format");
        } else if (type == "json_schema") {
            if (!rf.contains("json_schema") || !rf["json_schema"].is_object())
                bad("response_format", "'response_format.json_schema' must be an object {name, schema, strict}");
            const json& js = rf["json_schema"];
            for (const auto& [key, value] : js.items()) {
                if (key != "name" && key != "schema" && key != "strict" && key != "description")
                    bad("response_format", "unknown field 'response_format.json_schema." + key + "'");
            }
            if (js.contains("strict") && !js["strict"].is_boolean())
                bad("response_format", "'response_format.json_schema.strict' must be true or false");
            // No schema: any JSON value (OpenAI requires one; llama-server accepts its absence).
            const json schema = js.contains("schema") ? js["schema"] : json::object();
            if (!schema.is_object() && !schema.is_boolean())
                bad("response_format", "'response_format.json_schema.schema' must be a JSON Schema object");
            set(spec, BASALT_GRAMMAR_JSON_SCHEMA, schema.dump(), "response_format");
        } else if (type != "text") {
            bad("response_format",
                "'response_format.type' must be text, json_object or json_schema, not '" + type.substr(0, 64) + "'");
        }
    }
    if (has(body, "grammar")) {
        if (!body["grammar"].is_string()) bad("grammar", "'grammar' must be a GBNF grammar (a string)");
        set(spec, BASALT_GRAMMAR_GBNF, body["grammar"].get<std::string>(), "grammar");
    }
    if (has(body, "json_schema")) {
        const json& s = body["json_schema"];
        if (!s.is_object() && !s.is_boolean()) bad("json_schema", "'json_schema' must be a JSON Schema object");
        set(spec, BASALT_GRAMMAR_JSON_SCHEMA, s.dump(), "json_schema");
    }
    if (has(body, "regex")) {
        if (!body["regex"].is_string()) bad("regex", "'regex' must be a regular expression (a string)");
        set(spec, BASALT_GRAMMAR_REGEX, body["regex"].get<std::string>(), "regex");
    }
}

}  // namespace basalt::serve
