// llama-server's template and tokenizer endpoints on `basalt serve` (docs/server.md): POST /apply-template (a chat
// body rendered with the served chat template, {"prompt": ...}), POST /tokenize ({"content", "add_special",
// "parse_special", "with_pieces"} -> {"tokens"}) and POST /detokenize ({"tokens"} -> {"content"}).
#pragma once

#include <basalt/basalt.h>

#include <string>

#include "openai-request.hpp"

namespace basalt::serve {

// True for the paths template_route answers.
bool is_template_route(const std::string& target);
// The answer of one of those endpoints to a parsed body; throws ApiError (400 naming the field) for a bad body.
// Thread-safe (reads the model and the served template only).
json template_route(const std::string& target, const json& body, const ServedModel& served, const basalt_model* model);

}  // namespace basalt::serve
