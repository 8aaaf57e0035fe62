// Tool-call conventions: how a chat template's model writes a tool call in its reply (Qwen/Hermes <tool_call>{json}
// </tool_call>, Llama 3.x bare JSON or <|python_tag|>, Mistral [TOOL_CALLS][...] and [TOOL_CALLS]name[ARGS]{...},
// Granite, FireFunction, DeepSeek V3.1, Kimi K2, the XML-argument forms of Qwen3-Coder, Seed-OSS, GLM-4.5+ and
// MiniMax-M2, gpt-oss's harmony channels), recognised from the template's source by one table, and the grammar that
// makes a reply one or more such calls (tool_choice required / a named function). The parser of replies is
// tool-call-parser.hpp. docs/structured-output.md, "Tool calling".
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace basalt::serve {

// How a call is spelled between its markers.
enum class ToolShape {
    JsonObject,  // {"name": N, "<args_key>": {...}}: one call per call_begin (Hermes; Llama 3 bare, begin "")
    JsonList,    // call_begin [{"name": N, "arguments": {...}}, ...] (Mistral Nemo, Granite 3, FireFunction)
    NameArgs,    // call_begin NAME name_end {...} call_end, repeated (Mistral v11, DeepSeek V3.1, Kimi K2)
    // XML arguments (xml_tags spells each form's tags): a parameter's value is raw text where its schema is a
    // string, JSON otherwise.
    XmlFunction,  // call_begin <function=NAME> <parameter=P>gap V gap</parameter>... </function> call_end (Qwen3-Coder)
    XmlArgKey,    // call_begin NAME <arg_key>P</arg_key><arg_value>V</arg_value>... call_end (GLM-4.5+)
    XmlInvoke,    // section_begin <invoke name="NAME"><parameter name="P">V</parameter>...</invoke> (MiniMax-M2)
    // gpt-oss: a message to the recipient functions.NAME on the commentary (or analysis) channel, its JSON arguments
    // after <|message|>, ended by <|call|>; the recipient before or after the channel, the content type optional:
    // [<|start|>assistant][ to=functions.NAME]<|channel|>commentary[ to=functions.NAME][ [<|constrain|>]json]
    // <|message|>{...}[<|call|>]. One call per reply (<|call|> ends the turn).
    Harmony,
};

// The tags of an XML-argument shape around the name, each parameter's key and value, and the function. "" where the
// form has none; name_close "": the name runs to the next whitespace or '<'.
struct XmlTags {
    const char* name_open;
    const char* name_close;
    const char* key_open;
    const char* key_close;
    const char* value_open;
    const char* value_close;
    const char* function_close;  // "": the call ends at the convention's call_end
};

// The tags of shape s (an Xml* shape; the others get all ""). Pure function.
const XmlTags& xml_tags(ToolShape s);

// Whether shape s is one of the XML-argument shapes. Pure function.
bool is_xml_shape(ToolShape s);

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
    const char* gap;            // the grammar writes it between a marker and the JSON or name next to it (XML:
                                // around a parameter's value; the parser strips one at each end)
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

// The markers a reply of convention c may hold (section, call and name markers, alt_begin; harmony's <|start|>,
// <|channel|>, <|constrain|>, <|message|>, <|end|>, <|call|>), each non-empty once. Pure function.
std::vector<std::string> convention_markers(const ToolConvention& c);

// A control token of the vocabulary that spells a marker: its id and the marker's text.
using MarkerToken = std::pair<int32_t, std::string>;

// Per declared tool, the parameters whose schema is a plain string (an XML convention's value of one is taken raw).
using StringParams = std::map<std::string, std::set<std::string>>;

// The string parameters of each tool of an OpenAI tools array (already checked): a schema of type "string", or an
// enum / const of strings only. Pure function.
StringParams string_parameters(const nlohmann::ordered_json& tools);

// The system text that describes tools (an OpenAI tools array) and the fallback convention to a model whose
// template does not render tools. Pure function.
std::string fallback_tools_prompt(const nlohmann::ordered_json& tools);

// The grammar (BASALT_GRAMMAR_GBNF_SCHEMAS text) of a reply that is only tool calls of convention c: calls of the
// tools (an OpenAI tools array, already checked) or of the one named `only`, at most one unless parallel. Each
// call's arguments follow its function's parameters schema. open_in_text: the reply spells the opening marker
// (false when it is a control token the grammar cannot write: the reply starts after it). lazy: the grammar is
// armed by the opening marker (free text before it; tool_choice auto). Throws std::invalid_argument naming what
// the grammar cannot express. tokens: markers that are control tokens of the vocabulary; the grammar's text of
// each may also be written as its token id (the sampler reads the id as the text, the lazy trigger included).
// Pure function.
std::string tool_call_grammar(const ToolConvention& c, const nlohmann::ordered_json& tools, const std::string& only,
                              bool parallel, bool open_in_text, bool lazy = false,
                              const std::vector<MarkerToken>& tokens = {});

}  // namespace basalt::serve
