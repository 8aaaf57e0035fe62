// Structured output in OpenAI requests: `response_format` ({"type": "text" | "json_object" | "json_schema"}, chat)
// and the extensions `grammar` (GBNF, llama-server's field), `json_schema` (a schema object, llama-server's field)
// and `regex`. The grammar itself is compiled by the engine at submit (a bad one is answered 400 there).
#pragma once

#include <set>
#include <string>

#include "openai-request.hpp"
#include "request-spec.hpp"

namespace basalt::serve {

// The request fields structured output adds (for the unknown-field check).
const std::set<std::string>& structured_output_keys();

// Reads response_format (only when chat) and grammar / json_schema / regex into spec.grammar_kind and
// spec.grammar. Throws ApiError 400 naming the field for a malformed value or more than one constraint.
void read_structured_output(const json& body, bool chat, cli::RequestSpec& spec);

}  // namespace basalt::serve
