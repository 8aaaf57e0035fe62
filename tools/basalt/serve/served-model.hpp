// What `basalt serve` and `basalt chat` need to know about a loaded model: its chat template (the GGUF's
// tokenizer.chat_template recognised, or --chat-template NAME) and the template's end-of-turn token.
#pragma once

#include <basalt/basalt.h>

#include <string>

#include "openai-request.hpp"

namespace basalt::serve {

// Fills out for model: id, vocabulary size, per-request context n_ctx (0: the model's, at most 4096), the chat
// template (template_name "" : the file's). Returns "" or why not (an unrecognised template names
// --chat-template; an unknown NAME lists the families). Thread-safe (reads the model only).
std::string describe_served_model(const basalt_model* model, const std::string& id, const std::string& template_name,
                                  uint32_t n_ctx, ServedModel& out);

}  // namespace basalt::serve
