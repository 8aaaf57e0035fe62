// What `basalt serve` and `basalt chat` need to know about a loaded model: its chat template (the GGUF's
// tokenizer.chat_template recognised, or --chat-template NAME) and the template's end-of-turn token.
#pragma once

#include <basalt/basalt.h>

#include <string>

#include "openai-request.hpp"

namespace basalt::serve {

// Fills out for model: id, vocabulary size, per-request context n_ctx (0: the model's, at most 4096), the chat
// template: template_name a family NAME (its native renderer), a Jinja template FILE, or "" for the file's own
// tokenizer.chat_template (the native plain renderer when it has none); out.chat.kwargs (--chat-template-kwargs)
// is kept. Returns "" or why not (a template that does not parse, naming line:column and --chat-template; an
// unknown NAME lists the families). Thread-safe (reads the model only).
std::string describe_served_model(const basalt_model* model, const std::string& id, const std::string& template_name,
                                  uint32_t n_ctx, ServedModel& out);

// Parses --chat-template-kwargs JSON (an object: template variables such as {"enable_thinking": false}); throws
// std::invalid_argument saying what is wrong.
nlohmann::ordered_json parse_template_kwargs(const std::string& text);

}  // namespace basalt::serve
