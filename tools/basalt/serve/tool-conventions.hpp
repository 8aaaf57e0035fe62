// Tool-call conventions: how a chat template's model writes a tool call in its reply (Qwen/Hermes <tool_call>{json}
// </tool_call>, Llama 3.x bare JSON or <|python_tag|>, Mistral [TOOL_CALLS][...] and [TOOL_CALLS]name[ARGS]{...},
// Granite, FireFunction, DeepSeek V3.1, Kimi K2), recognised from the template's source by one table, and the
// grammar that makes a reply one or more such calls (tool_choice required / a named function). The parser of
// replies is tool-call-parser.hpp. docs/structured-output.md, "Tool calling".
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace basalt::serve {

// How a call is spelled between its markers.
enum class ToolShape {
    JsonObject,  // {"name": N, "<args_key>": {...}}: one call per call_begin (Hermes; Llama 3 bare, begin "")
    JsonList,    // call_begin [{"name": N, "arguments": {...}}, ...] (Mistral Nemo, Granite 3, FireFunction)
    NameArgs,    // call_begin NAME name_end {...} call_end, repeated (Mistral v11, DeepSeek V3.1, Kimi K2)
};

// One convention. All strings are static; "" means none.
struct ToolConvention {
    const char* name;       // "hermes", "llama3-json", ... (docs and tests name them so)
    const char* detect[3];  // the template source spells all of these (nullptr ends the list early)
    const char* absent[2];  // ... and none of these (nullptr: no condition)
    ToolShape shape;
    const char* section_begin;  // opens the tool-call section before the calls (DeepSeek, Kimi)
    const char* section_end;    // closes it
    const char* call_begin;     // opens each call (JsonObject, NameArgs) or the list (JsonList); "" for bare JSON
    const char* call_end;       // closes each call (or the list); may be absent from a reply
    const char* name_end;       // NameArgs: between the name and the arguments
    const char* args_key;       // JSON shapes: the key of the arguments ("arguments"; Llama 3: "parameters")
    const char* name_prefix;    // NameArgs: dropped before the name (Kimi's "functions."); a ":N" suffix is dropped
    const char* alt_begin;      // another marker that opens a call of the same shape (Llama 3's <|python_tag|>)
    const char* separator;      // between parallel calls in the grammar
    const char* gap;            // the grammar writes it between a marker and the JSON or name next to it
    bool at_start_only;         // a bare call (call_begin "") counts only at the start of the reply
};

// The table's row for a chat template's Jinja source, or nullptr when it spells no convention this server parses
// (a template that renders tools in another way: its replies stay text). Pure function.
const ToolConvention* tool_convention_for(const std::string& template_source);

// The convention the fallback system block teaches (Hermes): for templates that do not render tools and for the
// native families. Pure function.
const ToolConvention& fallback_tool_convention();

// Every convention of the table (tests walk it). Pure function.
const std::vector<ToolConvention>& tool_conventions();

// The markers a reply of convention c may hold (section, call and name markers, alt_begin), each non-empty once.
std::vector<std::string> convention_markers(const ToolConvention& c);

// The system text that describes tools (an OpenAI tools array) and the fallback convention to a model whose
// template does not render tools. Pure function.
std::string fallback_tools_prompt(const nlohmann::ordered_json& tools);

// The grammar (BASALT_GRAMMAR_GBNF_SCHEMAS text) of a reply that is only tool calls of convention c: calls of the
// tools (an OpenAI tools array, already checked) or of the one named `only`, at most one unless parallel. Each
// call's arguments follow its function's parameters schema. open_in_text: the reply spells the opening marker
// (false when it is a control token the grammar cannot write: the reply starts after it). lazy: the grammar is
// armed by the opening marker (free text before it; tool_choice auto). Throws std::invalid_argument naming what
// the grammar cannot express. Pure function.
std::string tool_call_grammar(const ToolConvention& c, const nlohmann::ordered_json& tools, const std::string& only,
                              bool parallel, bool open_in_text, bool lazy = false);

}  // namespace basalt::serve
