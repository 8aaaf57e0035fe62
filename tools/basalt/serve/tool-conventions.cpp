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

}  // namespace

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
                              bool open_in_text, bool lazy) {
    const std::string gap = c.gap;
    json schemas = json::object();
    std::vector<std::string> calls;  // one GBNF alternative per tool
    for (size_t i = 0; i < tools.size(); ++i) {
        const json& fn = tools[i]["function"];
        const std::string name = fn["name"].get<std::string>();
        if (!only.empty() && name != only) continue;
        const std::string rule = "args-" + std::to_string(i);
        schemas[rule] = fn.contains("parameters") ? fn["parameters"] : json{{"type", "object"}};
        switch (c.shape) {
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
    }
    json out = {{"gbnf", gbnf}, {"schemas", schemas}};
    const std::string first = *c.section_begin != '\0' ? c.section_begin : c.call_begin;
    if (lazy) {
        if (first.empty() || !open_in_text) throw std::invalid_argument("a lazy grammar needs an opening marker");
        out["trigger"] = first;
    }
    return out.dump();
}

}  // namespace basalt::serve
