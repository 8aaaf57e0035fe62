// A chat request's `tools`, `tool_choice` and `parallel_tool_calls` (OpenAI's function tools): checked (a bad tool,
// a named choice that is no tool: 400 naming it), the tools given to the template (or, for a template that does not
// render tools, a system block in the fallback convention, with earlier tool calls and results rewritten into it),
// the reply's parser chosen, and for tool_choice required / a named function a grammar that makes the reply calls
// (control-token markers written as their token ids).
// docs/structured-output.md, "Tool calling".
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "../request-spec.hpp"
#include "tool-conventions.hpp"

namespace basalt::serve {

using ToolJson = nlohmann::ordered_json;

// What the served model's template does with tools (describe_served_model fills it).
struct ToolSupport {
    bool template_renders_tools = false;         // a Jinja template that reads `tools`
    const ToolConvention* convention = nullptr;  // how its replies spell calls (nullptr: not parsed)
    // Markers of the convention that are one control token of the vocabulary (the reply's text omits them): token
    // id and the marker's text, put back into the text the parser reads, and written by the call grammar as the id.
    std::vector<MarkerToken> marker_tokens;
};

// How a request's replies are parsed for tool calls. convention nullptr: not parsed (no tools, tool_choice none).
struct ToolReplies {
    const ToolConvention* convention = nullptr;
    std::set<std::string> names;  // the declared functions
    StringParams string_params;   // their string parameters (XML conventions' values)
    bool from_start = false;      // tool_choice required / named: the grammar makes the reply calls from its start
};

// The request fields this file reads (for the unknown-field check).
const std::set<std::string>& tool_request_keys();

// Reads tools / tool_choice / parallel_tool_calls of a chat body; on return messages hold what the template
// renders (the fallback system block and rewritten tool turns when the template does not render tools; for gpt-oss's
// template, assistant turns with reasoning_content in `thinking` and no null content, as it expects), tools_out
// the tools array for the template (null when it gets none), replies how to parse the output, and spec.grammar the
// call grammar for required / named choices. Throws ApiError 400 naming the field. Pure function.
void read_tools(const ToolJson& body, const ToolSupport& support, ToolJson& messages, ToolJson& tools_out,
                ToolReplies& replies, cli::RequestSpec& spec);

}  // namespace basalt::serve
