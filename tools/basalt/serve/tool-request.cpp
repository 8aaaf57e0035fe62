// tools, tool_choice, parallel_tool_calls (tool-request.hpp).
#include "tool-request.hpp"

#include <cctype>
#include <stdexcept>

#include "../json-limits.hpp"
#include "openai-request.hpp"

namespace basalt::serve {

namespace {

[[noreturn]] void bad(const std::string& param, const std::string& message) {
    throw ApiError(400, message, param);
}

bool present(const ToolJson& body, const char* key) {
    return body.contains(key) && !body[key].is_null();
}

// OpenAI's function names: letters, digits, '_', '-' (and '.', which MCP tools use), at most 64.
bool good_name(const std::string& n) {
    if (n.empty() || n.size() > 64) return false;
    for (const char c : n)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') return false;
    return true;
}

void check_tools(const ToolJson& tools, std::set<std::string>& names) {
    if (!tools.is_array()) bad("tools", "'tools' must be an array of {\"type\": \"function\", \"function\": {...}}");
    if (tools.size() > 128) bad("tools", "'tools' may hold at most 128 tools, not " + std::to_string(tools.size()));
    for (size_t i = 0; i < tools.size(); ++i) {
        const ToolJson& t = tools[i];
        const std::string where = "tools[" + std::to_string(i) + "]";
        if (!t.is_object() || !t.contains("type") || t["type"] != "function" || !t.contains("function") ||
            !t["function"].is_object())
            bad("tools", where +
                             " must be {\"type\": \"function\", \"function\": {\"name\", \"parameters\", ...}} "
                             "(function tools only)");
        for (const auto& [key, value] : t.items())
            if (key != "type" && key != "function") bad("tools", where + ": unknown field '" + cli::excerpt(key) + "'");
        const ToolJson& fn = t["function"];
        for (const auto& [key, value] : fn.items())
            if (key != "name" && key != "description" && key != "parameters" && key != "strict")
                bad("tools", where + ".function: unknown field '" + cli::excerpt(key) + "'");
        if (!fn.contains("name") || !fn["name"].is_string() || !good_name(fn["name"].get<std::string>()))
            bad("tools", where + ".function.name must be 1 to 64 letters, digits, '_', '-' or '.'");
        const std::string name = fn["name"].get<std::string>();
        if (!names.insert(name).second) bad("tools", where + ": a second tool named '" + name + "'");
        if (fn.contains("description") && !fn["description"].is_string())
            bad("tools", where + ".function.description must be a string");
        if (fn.contains("strict") && !fn["strict"].is_boolean())
            bad("tools", where + ".function.strict must be true or false");
        if (fn.contains("parameters") && !fn["parameters"].is_object())
            bad("tools", where + ".function.parameters must be a JSON Schema object");
        if (fn.contains("parameters") && fn["parameters"].contains("type") && fn["parameters"]["type"] != "object")
            bad("tools", where + ".function.parameters must describe an object (\"type\": \"object\"), not " +
                             cli::value_excerpt(fn["parameters"]["type"]));
    }
}

// A tool call of an earlier assistant turn in the fallback convention's text.
std::string call_text(const ToolJson& call) {
    const ToolJson& fn = call["function"];
    ToolJson c = ToolJson::object();
    c["name"] = fn.value("name", "");
    c["arguments"] = fn.contains("arguments") ? fn["arguments"] : ToolJson::object();
    return "<tool_call>\n" + c.dump() + "\n</tool_call>";
}

// The conversation for a template that does not render tools: the tools described in the system message, earlier
// calls written into the assistant's text and results sent as user turns, as the fallback convention spells them.
ToolJson with_fallback(const ToolJson& messages, const ToolJson& tools) {
    ToolJson out = ToolJson::array();
    if (!tools.is_null()) {
        const std::string block = fallback_tools_prompt(tools);
        if (!messages.empty() && messages[0].value("role", "") == "system") {
            ToolJson first = messages[0];
            const std::string text = first["content"].is_string() ? first["content"].get<std::string>() : "";
            first["content"] = text.empty() ? block : text + "\n\n" + block;
            out.push_back(std::move(first));
        } else {
            out.push_back(ToolJson{{"role", "system"}, {"content", block}});
        }
    }
    for (size_t i = 0; i < messages.size(); ++i) {
        if (i == 0 && !out.empty() && messages[0].value("role", "") == "system") continue;
        ToolJson m = messages[i];
        const std::string role = m.value("role", "");
        std::string content = m.contains("content") && m["content"].is_string() ? m["content"].get<std::string>() : "";
        if (role == "assistant" && m.contains("tool_calls")) {
            for (const auto& call : m["tool_calls"]) content += (content.empty() ? "" : "\n") + call_text(call);
            m.erase("tool_calls");
        } else if (role == "tool") {
            m["role"] = "user";
            content = "<tool_response>\n" + content + "\n</tool_response>";
            m.erase("tool_call_id");
        }
        m["content"] = content;
        out.push_back(std::move(m));
    }
    return out;
}

// The conversation as gpt-oss's template reads it (llama.cpp hands it the same): an assistant turn's reasoning in
// `thinking`, and no `content` where it is null or where the reasoning goes with tool calls (the template refuses
// both, and reads a null content as text).
ToolJson for_harmony(const ToolJson& messages) {
    ToolJson out = ToolJson::array();
    for (ToolJson m : messages) {
        if (m.value("role", "") == "assistant") {
            const bool calls = m.contains("tool_calls") && m["tool_calls"].is_array() && !m["tool_calls"].empty();
            if (m.contains("reasoning_content") && m["reasoning_content"].is_string()) {
                m["thinking"] = m["reasoning_content"];
                if (calls) m.erase("content");
            }
            if (m.contains("content") && m["content"].is_null()) m.erase("content");
        }
        out.push_back(std::move(m));
    }
    return out;
}

}  // namespace

const std::set<std::string>& tool_request_keys() {
    static const std::set<std::string> k = {"tools", "tool_choice", "parallel_tool_calls"};
    return k;
}

void read_tools(const ToolJson& body, const ToolSupport& support, ToolJson& messages, ToolJson& tools_out,
                ToolReplies& replies, cli::RequestSpec& spec) {
    for (const char* k : {"functions", "function_call"})
        if (present(body, k))
            throw ApiError(400,
                           std::string("'") + k +
                               "' (the deprecated function calling) is not supported: use 'tools' "
                               "and 'tool_choice'",
                           k, "invalid_request_error", "unsupported_parameter");
    std::set<std::string> names;
    const bool has_tools = present(body, "tools");
    if (has_tools) check_tools(body["tools"], names);
    bool parallel = true;
    if (present(body, "parallel_tool_calls")) {
        if (!body["parallel_tool_calls"].is_boolean())
            bad("parallel_tool_calls", "'parallel_tool_calls' must be true or false");
        parallel = body["parallel_tool_calls"].get<bool>();
    }
    std::string choice = has_tools && !names.empty() ? "auto" : "none", only;
    if (present(body, "tool_choice")) {
        const ToolJson& tc = body["tool_choice"];
        if (tc.is_string()) {
            choice = tc.get<std::string>();
            if (choice != "none" && choice != "auto" && choice != "required")
                bad("tool_choice",
                    "'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": "
                    "\"function\", \"function\": {\"name\": ...}}, not '" +
                        cli::excerpt(choice) + "'");
        } else if (tc.is_object() && tc.value("type", "") == "function" && tc.contains("function") &&
                   tc["function"].is_object() && tc["function"].contains("name") &&
                   tc["function"]["name"].is_string()) {
            choice = "named";
            only = tc["function"]["name"].get<std::string>();
            if (names.count(only) == 0) {
                std::string known;
                for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
                bad("tool_choice", "'tool_choice' names the function '" + cli::excerpt(only) +
                                       "', which is not in 'tools' (" + (known.empty() ? "none" : known) + ")");
            }
        } else {
            bad("tool_choice",
                "'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": "
                "{\"name\": ...}}");
        }
        if (choice != "none" && names.empty())
            bad("tool_choice", "'tool_choice' \"" + choice + "\" needs 'tools' (a non-empty array)");
    }
    const bool use = choice != "none" && !names.empty();
    // The template renders the tools when it reads them; otherwise the fallback block describes them and earlier
    // calls and results are rewritten in its convention.
    const ToolConvention* convention =
        support.template_renders_tools ? support.convention : &fallback_tool_convention();
    if (support.template_renders_tools) {
        tools_out = use ? body["tools"] : ToolJson();
        if (support.convention != nullptr && support.convention->shape == ToolShape::Harmony)
            messages = for_harmony(messages);
    } else {
        messages = with_fallback(messages, use ? body["tools"] : ToolJson());
        tools_out = ToolJson();
    }
    if (!use) return;
    replies.convention = convention;
    replies.names = names;
    replies.string_params = string_parameters(body["tools"]);
    // Markers that are control tokens: the grammar may write them as their token ids (the lazy trigger included).
    const std::vector<MarkerToken>& tokens = support.marker_tokens;
    if (choice == "auto") {
        // Free text; from the convention's opening marker on, calls of the declared tools (a lazy grammar).
        const std::string first = convention == nullptr                ? ""
                                  : *convention->section_begin != '\0' ? convention->section_begin
                                                                       : convention->call_begin;
        if (!first.empty() && spec.grammar_kind == BASALT_GRAMMAR_NONE) {
            spec.grammar_kind = BASALT_GRAMMAR_GBNF_SCHEMAS;
            spec.grammar = tool_call_grammar(*convention, body["tools"], "", parallel, true, true, tokens);
        }
        return;
    }
    if (convention == nullptr)
        throw ApiError(400,
                       "'tool_choice' \"" + choice +
                           "\" needs a tool-call convention this server parses, and the chat template's is not one "
                           "(docs/structured-output.md lists them)",
                       "tool_choice", "invalid_request_error", "unsupported_parameter");
    if (spec.grammar_kind != BASALT_GRAMMAR_NONE)
        bad("tool_choice", "'tool_choice' \"" + choice +
                               "\" constrains the reply to tool calls: it conflicts with response_format, grammar, "
                               "json_schema or regex");
    spec.grammar_kind = BASALT_GRAMMAR_GBNF_SCHEMAS;
    spec.grammar = tool_call_grammar(*convention, body["tools"], only, parallel, true, false, tokens);
    replies.from_start = true;
}

}  // namespace basalt::serve
