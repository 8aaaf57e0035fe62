// A chat template rendered by libbasalt's Jinja interpreter (basalt_chat_template_*, docs/chat-templates.md): the
// GGUF's tokenizer.chat_template or a --chat-template FILE, given the OpenAI-shaped conversation (messages with
// tool_calls, tool results and reasoning_content, tools, chat_template_kwargs) as Hugging Face passes it.
#pragma once

#include <basalt/basalt.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace basalt::serve {

struct ChatPiece;

class JinjaTemplate {
  public:
    // Parses source; throws std::invalid_argument with the interpreter's message naming line:column. origin says
    // where the source came from ("the model's tokenizer.chat_template", a file name) for messages.
    JinjaTemplate(const std::string& source, std::string origin);
    // Renders context (a JSON object: messages, tools, add_generation_prompt and any template keyword such as
    // enable_thinking) into pieces: message data is text, the template's markup spelling a special token of
    // model (may be NULL) a control piece. bos_token / eos_token come from model's vocabulary. Throws
    // std::invalid_argument with the template's error (raise_exception's message, a limit reached) naming
    // line:column. Thread-safe.
    std::vector<ChatPiece> render(const basalt_model* model, const nlohmann::ordered_json& context) const;
    const std::string& origin() const { return origin_; }

  private:
    std::shared_ptr<basalt_chat_template> template_;
    std::string origin_;
};

}  // namespace basalt::serve
