// The tool-call convention table and the grammar of a reply made of calls (tool-conventions.hpp).
#include "tool-conventions.hpp"

#include <basalt/sdk/gbnf-literal.hpp>

#include <stdexcept>

namespace basalt::serve {

namespace {

using json = nlohmann::ordered_json;

// First match wins: rows that spell a marker another row also spells come first. Facts read from the templates in
// tests/chat-templates/templates and the families' model cards.
const std::vector<ToolConvention> kConventions = {
    // Devstral, Mistral Small 3.2, Ministral 3: [TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}
    {"mistral-args",
     {"[TOOL_CALLS]", "[ARGS]", nullptr},
     {nullptr, nullptr},
     ToolShape::NameArgs,
     "",
     "",
     "[TOOL_CALLS]",
     "",
     "[ARGS]",
     "",
     "",
     "",
     "",
     "",
     false},
    // Mistral Nemo: [TOOL_CALLS][{"name": "get_weather", "arguments": {...}, "id": "..."}]
    {"mistral",
     {"[TOOL_CALLS]", nullptr, nullptr},
     {nullptr, nullptr},
     ToolShape::JsonList,
     "",
     "",
     "[TOOL_CALLS]",
     "",
     "",
     "arguments",
     "",
     "",
     ", ",
     "",
     false},
    // DeepSeek R1 (and its distills):
    // <｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{...}\n```<｜tool▁call▁end｜>
    {"deepseek-r1",
     {"<｜tool▁calls▁begin｜>", "```json", nullptr},
     {nullptr, nullptr},
     ToolShape::NameArgs,
     "<｜tool▁calls▁begin｜>",
     "<｜tool▁calls▁end｜>",
     "<｜tool▁call▁begin｜>function<｜tool▁sep｜>",
     "```<｜tool▁call▁end｜>",
     "```json",
     "",
     "",
     "",
     "\n",
     "\n",
     false},
    // DeepSeek V3.1:
    // <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{...}<｜tool▁call▁end｜><｜tool▁calls▁end｜>
    {"deepseek-v3.1",
     {"<｜tool▁calls▁begin｜>", "<｜tool▁sep｜>", nullptr},
     {nullptr, nullptr},
     ToolShape::NameArgs,
     "<｜tool▁calls▁begin｜>",
     "<｜tool▁calls▁end｜>",
     "<｜tool▁call▁begin｜>",
     "<｜tool▁call▁end｜>",
     "<｜tool▁sep｜>",
     "",
     "",
     "",
     "",
     "",
     false},
    // Kimi K2: <|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:0<|tool_call_argument_begin|>{...}
    // <|tool_call_end|><|tool_calls_section_end|>
    {"kimi-k2",
     {"<|tool_calls_section_begin|>", "<|tool_call_argument_begin|>", nullptr},
     {nullptr, nullptr},
     ToolShape::NameArgs,
     "<|tool_calls_section_begin|>",
     "<|tool_calls_section_end|>",
     "<|tool_call_begin|>",
     "<|tool_call_end|>",
     "<|tool_call_argument_begin|>",
     "",
     "functions.",
     "",
     "",
     "",
     false},
    // Granite 3: <|tool_call|>[{"name": ..., "arguments": {...}}]
    {"granite",
     {"<|tool_call|>", nullptr, nullptr},
     {nullptr, nullptr},
     ToolShape::JsonList,
     "",
     "",
     "<|tool_call|>",
     "",
     "",
     "arguments",
     "",
     "",
     ", ",
     "",
     false},
    // FireFunction v2: functools[{"name": ..., "arguments": {...}}]
    {"firefunction",
     {"functools[", nullptr, nullptr},
     {nullptr, nullptr},
     ToolShape::JsonList,
     "",
     "",
     "functools",
     "",
     "",
     "arguments",
     "",
     "",
     ", ",
     "",
     false},
    // gpt-oss (harmony): <|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{...}<|call|>, or the
    // recipient in the role header as the template renders earlier calls: <|start|>assistant to=functions.NAME
    // <|channel|>commentary json<|message|>{...}<|call|>. The grammar writes the first form.
    {"gpt-oss",
     {"<|channel|>commentary", "<|call|>", nullptr},
     {nullptr, nullptr},
     ToolShape::Harmony,
     "",
     "",
     "<|channel|>commentary to=",
     "<|call|>",
     " <|constrain|>json<|message|>",
     "",
     "functions.",
     "",
     "",
     "",
     false},
    // Qwen3-Coder, Qwen3.5, Nemotron 3, StepFun 3.5: <tool_call>\n<function=NAME>\n<parameter=P>\nVALUE\n</parameter>
    // \n</function>\n</tool_call>
    {"qwen3-coder",
     {"<tool_call>", "<function=", "<parameter="},
     {nullptr, nullptr},
     ToolShape::XmlFunction,
     "",
     "",
     "<tool_call>",
     "</tool_call>",
     "",
     "",
     "",
     "",
     "\n",
     "\n",
     false},
    // Seed-OSS: <seed:tool_call>\n<function=NAME>\n<parameter=P>VALUE</parameter>\n</function>\n</seed:tool_call>
    {"seed-oss",
     {"<seed:tool_call>", "<function=", nullptr},
     {nullptr, nullptr},
     ToolShape::XmlFunction,
     "",
     "",
     "<seed:tool_call>",
     "</seed:tool_call>",
     "",
     "",
     "",
     "",
     "\n",
     "",
     false},
    // GLM-4.5/4.6/4.7, Ling 3, Laguna:
    // <tool_call>NAME\n<arg_key>P</arg_key>\n<arg_value>VALUE</arg_value>\n</tool_call>
    {"glm",
     {"<tool_call>", "<arg_key>", "<arg_value>"},
     {nullptr, nullptr},
     ToolShape::XmlArgKey,
     "",
     "",
     "<tool_call>",
     "</tool_call>",
     "",
     "",
     "",
     "",
     "\n",
     "",
     false},
    // MiniMax-M2: <minimax:tool_call>\n<invoke name="NAME">\n<parameter name="P">VALUE</parameter>\n</invoke>\n
    // </minimax:tool_call>
    {"minimax-m2",
     {"<minimax:tool_call>", "<invoke name=", nullptr},
     {nullptr, nullptr},
     ToolShape::XmlInvoke,
     "<minimax:tool_call>",
     "</minimax:tool_call>",
     "<invoke name=",
     "</invoke>",
     "",
     "",
     "",
     "",
     "\n",
     "",
     false},
    // Qwen 2.5/3, QwQ, Hermes 2/3, Granite 4, MiMo, Bielik, Apriel: <tool_call>\n{"name": ..., "arguments": {...}}
    // \n</tool_call> (not the XML forms that also open with <tool_call>: Qwen3-Coder's <function=, GLM's <arg_key>)
    {"hermes",
     {"<tool_call>", nullptr, nullptr},
     {"<function=", "<arg_key>"},
     ToolShape::JsonObject,
     "",
     "",
     "<tool_call>",
     "</tool_call>",
     "",
     "arguments",
     "",
     "",
     "\n",
     "\n",
     false},
    // Llama 3.1 / 3.2 / 3.3: {"name": ..., "parameters": {...}} as the whole reply, or after <|python_tag|>
    {"llama3-json",
     {"<|start_header_id|>", "\"parameters\"", nullptr},
     {nullptr, nullptr},
     ToolShape::JsonObject,
     "",
     "",
     "",
     "",
     "",
     "parameters",
     "",
     "<|python_tag|>",
     "; ",
     "",
     true},
};

bool spells(const std::string& source, const char* s) {
    return s == nullptr || source.find(s) != std::string::npos;
}

// A GBNF literal of text (the SDK's quoting: UTF-8 kept, quotes, backslashes and control bytes escaped).
std::string lit(const std::string& text) {
    return basalt::sdk::gbnf_literal(text);
}

constexpr XmlTags kNoTags = {"", "", "", "", "", "", ""};
constexpr XmlTags kFunctionTags = {"<function=", ">", "<parameter=", ">", "", "</parameter>", "</function>"};
constexpr XmlTags kArgKeyTags = {"", "", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>", ""};
constexpr XmlTags kInvokeTags = {"\"", "\">", "<parameter name=\"", "\">", "", "</parameter>", ""};

// A GBNF character class of every code point but '<' and c (both escaped as \xHH).
std::string class_without(char c) {
    static const char* hex = "0123456789ABCDEF";
    const auto u = static_cast<unsigned char>(c);
    return std::string("[^\\x3C\\x") + hex[u >> 4] + hex[u & 15] + "]";
}

// Rules `name` for raw text that never spells stop (which starts with '<' and holds no other '<'): one rule per
// prefix of stop matched so far, the last one refusing stop's last character.
std::string raw_text_rules(const std::string& name, const std::string& stop) {
    std::string out;
    const auto rule = [&](size_t k) { return k == 0 ? name : name + "-at" + std::to_string(k); };
    out += name + " ::= ( [^<] " + name + " | \"<\" " + rule(1) + " )?\n";
    for (size_t k = 1; k < stop.size(); ++k) {
        out += rule(k) + " ::= ( " + class_without(stop[k]) + " " + name + " | \"<\" " + rule(1);
        if (k + 1 < stop.size()) out += " | " + lit(std::string(1, stop[k])) + " " + rule(k + 1);
        out += " )?\n";
    }
    return out;
}

// Whether a parameter's schema is a plain string (its value is written raw).
bool string_schema(const json& schema) {
    if (!schema.is_object()) return false;
    if (schema.contains("type")) return schema["type"] == "string";
    if (schema.contains("enum") && schema["enum"].is_array() && !schema["enum"].empty()) {
        for (const auto& v : schema["enum"])
            if (!v.is_string()) return false;
        return true;
    }
    return schema.contains("const") && schema["const"].is_string();
}

// The GBNF (and the schema rules it names) of the XML-argument calls of tool i: its parameters in the schema's order,
// the required ones always, the others optional. String values are raw text (or one of the enum's strings), other
// values JSON of the parameter's schema (the parameters' $defs copied in, so references resolve).
std::string xml_params(const ToolConvention& c, const json& parameters, size_t i, json& schemas) {
    const XmlTags& t = xml_tags(c.shape);
    const std::string gap = c.gap;
    std::string out;
    if (!parameters.contains("properties") || !parameters["properties"].is_object()) return "";
    std::set<std::string> required;
    if (parameters.contains("required") && parameters["required"].is_array())
        for (const auto& r : parameters["required"])
            if (r.is_string()) required.insert(r.get<std::string>());
    size_t j = 0;
    for (const auto& [key, schema] : parameters["properties"].items()) {
        std::string value;
        if (string_schema(schema) && (schema.contains("enum") || schema.contains("const"))) {
            const json options = schema.contains("enum") ? schema["enum"] : json::array({schema["const"]});
            for (const auto& o : options) value += (value.empty() ? "( " : " | ") + lit(o.get<std::string>());
            value += " )";
        } else if (string_schema(schema)) {
            value = "xml-raw";
        } else {
            const std::string rule = "args-" + std::to_string(i) + "-" + std::to_string(j);
            json s = schema.is_object() ? schema : json::object();
            for (const char* defs : {"$defs", "definitions"})
                if (parameters.contains(defs) && !s.contains(defs)) s[defs] = parameters[defs];
            schemas[rule] = s;
            value = rule;
        }
        const std::string value_open = *t.value_open != '\0' ? "\n" + std::string(t.value_open) : "";
        const std::string one = lit(std::string(t.key_open) + key + t.key_close + value_open + gap) + " " + value +
                                " " + lit(gap + t.value_close + "\n");
        out += (out.empty() ? "" : " ") + std::string(required.count(key) != 0 ? "" : "(") + one +
               (required.count(key) != 0 ? "" : ")?");
        ++j;
    }
    return out;
}

}  // namespace

StringParams string_parameters(const json& tools) {
    StringParams out;
    for (const auto& t : tools) {
        const json& fn = t["function"];
        auto& names = out[fn["name"].get<std::string>()];
        if (!fn.contains("parameters") || !fn["parameters"].contains("properties") ||
            !fn["parameters"]["properties"].is_object())
            continue;
        for (const auto& [key, schema] : fn["parameters"]["properties"].items())
            if (string_schema(schema)) names.insert(key);
    }
    return out;
}

bool is_xml_shape(ToolShape s) {
    return s == ToolShape::XmlFunction || s == ToolShape::XmlArgKey || s == ToolShape::XmlInvoke;
}

const XmlTags& xml_tags(ToolShape s) {
    switch (s) {
        case ToolShape::XmlFunction:
            return kFunctionTags;
        case ToolShape::XmlArgKey:
            return kArgKeyTags;
        case ToolShape::XmlInvoke:
            return kInvokeTags;
        default:
            return kNoTags;
    }
}

const std::vector<ToolConvention>& tool_conventions() {
    return kConventions;
}

const ToolConvention* tool_convention_for(const std::string& template_source) {
    for (const ToolConvention& c : kConventions) {
        bool all = true;
        for (const char* d : c.detect) all = all && spells(template_source, d);
        for (const char* a : c.absent) all = all && (a == nullptr || !spells(template_source, a));
        if (all) return &c;
    }
    return nullptr;
}

const ToolConvention& fallback_tool_convention() {
    static const ToolConvention* hermes = [] {
        for (const ToolConvention& c : kConventions)
            if (std::string(c.name) == "hermes") return &c;
        return &kConventions.front();
    }();
    return *hermes;
}

std::vector<std::string> convention_markers(const ToolConvention& c) {
    if (c.shape == ToolShape::Harmony)
        return {"<|start|>", "<|channel|>", "<|constrain|>", "<|message|>", "<|end|>", "<|call|>"};
    std::vector<std::string> out;
    for (const char* m : {c.section_begin, c.section_end, c.call_begin, c.call_end, c.name_end, c.alt_begin}) {
        const std::string s = m;
        bool seen = s.empty();
        for (const auto& o : out) seen = seen || o == s;
        if (!seen) out.push_back(s);
    }
    return out;
}

std::string fallback_tools_prompt(const json& tools) {
    std::string out =
        "You can call functions (tools) to answer. Their signatures, one JSON object per line, between <tools> and "
        "</tools>:\n<tools>\n";
    for (const auto& t : tools) out += t.dump() + "\n";
    out +=
        "</tools>\n\nTo call a function, reply with one block per call, each a JSON object with the function's name "
        "and its arguments between <tool_call> and </tool_call>:\n<tool_call>\n{\"name\": \"FUNCTION_NAME\", "
        "\"arguments\": {ARGUMENTS}}\n</tool_call>\nA function's result comes back in a user message between "
        "<tool_response> and </tool_response>.";
    return out;
}

std::string tool_call_grammar(const ToolConvention& c, const json& tools, const std::string& only, bool parallel,
                              bool open_in_text, bool lazy, const std::vector<MarkerToken>& tokens) {
    const std::string gap = c.gap;
    json schemas = json::object();
    std::vector<std::string> calls;  // one GBNF alternative per tool
    bool raw_values = false;         // an XML call writes a string parameter raw
    for (size_t i = 0; i < tools.size(); ++i) {
        const json& fn = tools[i]["function"];
        const std::string name = fn["name"].get<std::string>();
        if (!only.empty() && name != only) continue;
        const std::string rule = "args-" + std::to_string(i);
        const json parameters = fn.contains("parameters") ? fn["parameters"] : json{{"type", "object"}};
        if (is_xml_shape(c.shape)) {
            const XmlTags& t = xml_tags(c.shape);
            const std::string params = xml_params(c, parameters, i, schemas);
            raw_values = raw_values || params.find("xml-raw") != std::string::npos;
            const std::string close = t.function_close;
            calls.push_back(lit(std::string(t.name_open) + name + t.name_close + "\n") + " " + params +
                            (close.empty() ? "" : " " + lit(close)));
            continue;
        }
        schemas[rule] = parameters;
        switch (c.shape) {
            case ToolShape::Harmony:
                calls.push_back(lit(std::string(c.name_prefix) + name + c.name_end) + " " + rule);
                break;
            case ToolShape::JsonObject:
            case ToolShape::JsonList:
                calls.push_back(lit("{\"name\": " + json(name).dump() + ", \"" + c.args_key + "\": ") + " " + rule +
                                " " + lit("}"));
                break;
            case ToolShape::NameArgs: {
                std::string n = lit(std::string(c.name_prefix) + name);
                if (std::string(c.name_prefix) == "functions.") n += " \":\" [0-9]{1,3}";  // Kimi's call index
                calls.push_back(n + " " + lit(gap + c.name_end + gap) + " " + rule);
                break;
            }
            case ToolShape::XmlFunction:
            case ToolShape::XmlArgKey:
            case ToolShape::XmlInvoke:
                break;  // written above
        }
    }
    if (calls.empty()) throw std::invalid_argument("no tool named '" + only + "'");
    // The opening marker is not written when it is a control token: the reply starts after it, so a second call
    // (which would need the marker again) cannot follow.
    const bool first_is_call_begin = std::string(c.section_begin).empty();
    if (!open_in_text && first_is_call_begin && c.shape != ToolShape::JsonList) parallel = false;
    if (std::string(c.call_begin).empty() && c.shape == ToolShape::JsonObject) parallel = false;  // Llama 3: one
    std::string call = "call ::= ";
    for (size_t i = 0; i < calls.size(); ++i) call += (i ? " | " : "") + calls[i];
    std::string gbnf = call + "\n";
    const std::string begin = c.call_begin, end = c.call_end;
    switch (c.shape) {
        case ToolShape::JsonObject: {
            const std::string wrapped =
                (begin.empty() ? "" : lit(begin + gap) + " ") + "call" + (end.empty() ? "" : " " + lit(gap + end));
            gbnf += "one ::= " + wrapped + "\n";
            const std::string first =
                open_in_text || begin.empty() ? "one" : "call" + (end.empty() ? "" : " " + lit(gap + end));
            gbnf += "root ::= " + first + (parallel ? " (" + lit(c.separator) + " one)*" : "") + "\n";
            break;
        }
        case ToolShape::JsonList:
            gbnf += "root ::= " + (open_in_text ? lit(begin) + " " : "") + "\"[\" call" +
                    (parallel ? " (" + lit(c.separator) + " call)*" : "") + " \"]\"\n";
            break;
        case ToolShape::NameArgs: {
            gbnf += "one ::= " + lit(begin) + " call" + (end.empty() ? "" : " " + lit(gap + end)) + "\n";
            const std::string section_begin = c.section_begin;
            std::string body = "one" + std::string(parallel ? " (" + lit(c.separator) + " one)*" : "");
            if (!section_begin.empty()) {
                body = (open_in_text ? lit(section_begin) + " " : "") + body + " " + lit(c.section_end);
            } else if (!open_in_text) {
                body = "call" + (end.empty() ? "" : " " + lit(gap + end));
            }
            gbnf += "root ::= " + body + "\n";
            break;
        }
        case ToolShape::XmlFunction:
        case ToolShape::XmlArgKey: {
            const std::string nl = c.shape == ToolShape::XmlFunction ? "\n" : "";
            gbnf += "one ::= " + lit(begin + nl) + " call " + lit(nl + end) + "\n";
            const std::string first =
                open_in_text ? "one" : (nl.empty() ? "" : lit(nl) + " ") + "call " + lit(nl + end);
            gbnf += "root ::= " + first + (parallel ? " (" + lit(c.separator) + " one)*" : "") + "\n";
            break;
        }
        case ToolShape::XmlInvoke:
            gbnf += "one ::= " + lit(begin) + " call " + lit(end + "\n") + "\n";
            gbnf += "root ::= " + lit(open_in_text ? c.section_begin + std::string("\n") : "\n") + " one" +
                    (parallel ? "+ " : " ") + lit(c.section_end) + "\n";
            break;
        case ToolShape::Harmony:  // one call: <|call|> ends the turn
            gbnf += "root ::= " + (open_in_text ? lit(begin) + " " : "") + "call\n";
            break;
    }
    if (raw_values) gbnf += raw_text_rules("xml-raw", xml_tags(c.shape).value_close);
    json out = {{"gbnf", gbnf}, {"schemas", schemas}};
    const std::string first = *c.section_begin != '\0' ? c.section_begin : c.call_begin;
    if (lazy) {
        if (first.empty() || !open_in_text) throw std::invalid_argument("a lazy grammar needs an opening marker");
        out["trigger"] = first;
    }
    if (!tokens.empty()) {
        json ids = json::object();
        for (const auto& [id, text] : tokens) ids[text] = id;
        out["tokens"] = std::move(ids);
    }
    return out.dump();
}

}  // namespace basalt::serve
