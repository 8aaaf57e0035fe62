// Chat templates: the GGUF's tokenizer.chat_template (or --chat-template FILE) rendered by libbasalt's Jinja
// interpreter (jinja-template.hpp); the native family renderers here are the fallback for files without a template
// and what --chat-template NAME picks. Shared by `basalt serve` and `basalt chat`. docs/chat-templates.md.
#pragma once

#include <basalt/basalt.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "jinja-template.hpp"

namespace basalt::serve {

// One chat message. role: "system", "user" or "assistant".
struct ChatMessage {
    std::string role;
    std::string content;
};

// One piece of a rendered chat: the template's control markup (control: text such as "<|im_start|>" that is one
// control token of the family's vocabulary) or text (the template's other markup, e.g. a role name, and message
// content), which is tokenized as plain text so that a message cannot forge the template's markup
// (chat-tokens.hpp).
struct ChatPiece {
    std::string text;
    bool control = false;
};

// A template family Basalt renders.
enum class TemplateFamily { Plain, ChatML, Llama3, Gemma, Mistral, Phi3 };

// What rendering needs to know about a family. All members are static strings.
struct ChatTemplate {
    TemplateFamily family = TemplateFamily::Plain;
    // The Jinja template rendered for every chat (the file's, or --chat-template FILE); null: the family's native
    // renderer. With a Jinja template, family is only the family recognised from it (its end-of-turn token).
    std::shared_ptr<const JinjaTemplate> jinja;
    const basalt_model* model = nullptr;  // the vocabulary the Jinja template renders for (bos/eos, control pieces)
    nlohmann::ordered_json kwargs =
        nlohmann::ordered_json::object();  // --chat-template-kwargs: variables of every rendering
    // "jinja" with a Jinja template, else the family's name as --chat-template takes it ("plain", "chatml", ...).
    const char* name() const;
    // Renders an OpenAI-shaped conversation: messages (a JSON array of {role, content, tool_calls, tool_call_id,
    // reasoning_content, name}), tools (null: none), request_kwargs (the request's chat_template_kwargs object,
    // or null; over kwargs). A Jinja template gets them as Hugging Face passes them; a family renderer takes role
    // and content and refuses tools. Throws std::invalid_argument (the template's error, naming line:column, or
    // the family's). Thread-safe.
    std::vector<ChatPiece> render_conversation(const nlohmann::ordered_json& messages,
                                               const nlohmann::ordered_json& tools,
                                               const nlohmann::ordered_json& request_kwargs,
                                               bool add_generation_prompt) const;
    // Renders messages (the conversation so far) and, when add_generation_prompt, the opening of the assistant's
    // reply. The text holds control-token text (e.g. "<|im_start|>"): tokenized with special-token parsing it also
    // turns such text inside message content into control tokens, so only a trusted client's chat is tokenized
    // that way (serve --trust-client-special-tokens); otherwise tokenize render_pieces() with tokenize_chat
    // (chat-tokens.hpp). The vocabulary's BOS is not part of it (the tokenizer adds it as the vocabulary asks). Throws
    // std::invalid_argument naming the message for a role the family cannot express (an unknown role, a system
    // message that is not first, two assistant turns in a row for Mistral). Pure function.
    std::string render(const std::vector<ChatMessage>& messages, bool add_generation_prompt = true) const;
    // The same rendering as pieces whose texts concatenate to render()'s: the family's control markup apart from
    // the text around it (message content is never a control piece). Throws as render does. Pure function.
    std::vector<ChatPiece> render_pieces(const std::vector<ChatMessage>& messages,
                                         bool add_generation_prompt = true) const;
    // The text that ends an assistant turn ("<|im_end|>"...): a stop string / end token; "" for Mistral (</s>, the
    // vocabulary's EOS). For plain: none (stop strings cover it).
    const char* end_of_turn() const;
    // Stop strings the family needs beyond its end token (plain: "\nUser:" so the model does not speak for the
    // user).
    std::vector<std::string> stop_strings() const;
};

// The family names --chat-template accepts, "plain|chatml|llama3|gemma|mistral|phi3".
const char* template_family_names();
// Parses a --chat-template NAME; false when unknown.
bool template_from_name(const std::string& name, ChatTemplate& out);
// Recognises a GGUF chat template (Jinja text) by the control tokens and structure of each family. "" (no template)
// gives plain. Returns false for a template that matches no family (the caller refuses it naming --chat-template).
// Pure function.
bool template_from_jinja(const std::string& jinja, ChatTemplate& out);

}  // namespace basalt::serve
