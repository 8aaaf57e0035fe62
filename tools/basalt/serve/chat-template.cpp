#include "chat-template.hpp"

#include <stdexcept>

namespace basalt::serve {
namespace {

bool has(const std::string& s, const char* needle) {
    return s.find(needle) != std::string::npos;
}

std::string role_error(size_t i, const std::string& role, const char* family, const char* allowed) {
    return "messages[" + std::to_string(i) + "]: role '" + role + "' is not one the " + family +
           " template can express (" + allowed + ")";
}

void check_roles(const std::vector<ChatMessage>& messages, const char* family) {
    for (size_t i = 0; i < messages.size(); ++i) {
        const std::string& r = messages[i].role;
        if (r != "system" && r != "user" && r != "assistant")
            throw std::invalid_argument(role_error(i, r, family, "system, user, assistant"));
        if (r == "system" && i != 0)
            throw std::invalid_argument("messages[" + std::to_string(i) +
                                        "]: a system message must be the first message");
    }
}

}  // namespace

const char* ChatTemplate::name() const {
    switch (family) {
        case TemplateFamily::Plain:
            return "plain";
        case TemplateFamily::ChatML:
            return "chatml";
        case TemplateFamily::Llama3:
            return "llama3";
        case TemplateFamily::Gemma:
            return "gemma";
        case TemplateFamily::Mistral:
            return "mistral";
        case TemplateFamily::Phi3:
            return "phi3";
    }
    return "plain";
}

const char* template_family_names() {
    return "plain|chatml|llama3|gemma|mistral|phi3";
}

bool template_from_name(const std::string& name, ChatTemplate& out) {
    for (TemplateFamily f : {TemplateFamily::Plain, TemplateFamily::ChatML, TemplateFamily::Llama3,
                             TemplateFamily::Gemma, TemplateFamily::Mistral, TemplateFamily::Phi3}) {
        ChatTemplate t;
        t.family = f;
        if (name == t.name()) {
            out = t;
            return true;
        }
    }
    return false;
}

bool template_from_jinja(const std::string& jinja, ChatTemplate& out) {
    ChatTemplate t;
    if (jinja.find_first_not_of(" \t\r\n") == std::string::npos) {
        t.family = TemplateFamily::Plain;
    } else if (has(jinja, "<|start_header_id|>") && has(jinja, "<|end_header_id|>") && has(jinja, "<|eot_id|>")) {
        t.family = TemplateFamily::Llama3;
    } else if (has(jinja, "<|im_start|>") && has(jinja, "<|im_end|>")) {
        t.family = TemplateFamily::ChatML;
    } else if (has(jinja, "<start_of_turn>") && has(jinja, "<end_of_turn>")) {
        t.family = TemplateFamily::Gemma;
    } else if (has(jinja, "<|user|>") && has(jinja, "<|assistant|>") && has(jinja, "<|end|>")) {
        t.family = TemplateFamily::Phi3;
    } else if (has(jinja, "[INST]") && has(jinja, "[/INST]")) {
        t.family = TemplateFamily::Mistral;
    } else {
        return false;
    }
    out = t;
    return true;
}

const char* ChatTemplate::end_of_turn() const {
    switch (family) {
        case TemplateFamily::ChatML:
            return "<|im_end|>";
        case TemplateFamily::Llama3:
            return "<|eot_id|>";
        case TemplateFamily::Gemma:
            return "<end_of_turn>";
        case TemplateFamily::Phi3:
            return "<|end|>";
        case TemplateFamily::Mistral:
        case TemplateFamily::Plain:
            return "";
    }
    return "";
}

std::vector<std::string> ChatTemplate::stop_strings() const {
    if (family == TemplateFamily::Plain) return {"\nUser:"};
    return {};
}

std::string ChatTemplate::render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
    std::string out;
    switch (family) {
        case TemplateFamily::Plain: {
            // The shipped models have no template: a transcript of "Role: text" lines, the reply after "Assistant:".
            check_roles(messages, "plain");
            for (const auto& m : messages) {
                out += m.role == "system" ? "System: " : m.role == "user" ? "User: " : "Assistant: ";
                out += m.content;
                out += '\n';
            }
            if (add_generation_prompt) out += "Assistant:";
            break;
        }
        case TemplateFamily::ChatML: {
            for (size_t i = 0; i < messages.size(); ++i) {
                const auto& m = messages[i];
                if (m.role != "system" && m.role != "user" && m.role != "assistant")
                    throw std::invalid_argument(role_error(i, m.role, "chatml", "system, user, assistant"));
                out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
            }
            if (add_generation_prompt) out += "<|im_start|>assistant\n";
            break;
        }
        case TemplateFamily::Llama3: {
            check_roles(messages, "llama3");
            for (const auto& m : messages)
                out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" + m.content + "<|eot_id|>";
            if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
            break;
        }
        case TemplateFamily::Gemma: {
            // Gemma has no system role: the system text opens the first user turn.
            check_roles(messages, "gemma");
            std::string system;
            for (size_t i = 0; i < messages.size(); ++i) {
                const auto& m = messages[i];
                if (m.role == "system") {
                    system = m.content + "\n\n";
                    continue;
                }
                std::string content = m.content;
                if (m.role == "user" && !system.empty()) {
                    content = system + content;
                    system.clear();
                }
                out += "<start_of_turn>" + std::string(m.role == "assistant" ? "model" : "user") + "\n" + content +
                       "<end_of_turn>\n";
            }
            if (add_generation_prompt) out += "<start_of_turn>model\n";
            break;
        }
        case TemplateFamily::Mistral: {
            // [INST] user [/INST] reply</s>; the system text opens the first user turn; turns must alternate.
            check_roles(messages, "mistral");
            std::string system;
            std::string last;
            for (size_t i = 0; i < messages.size(); ++i) {
                const auto& m = messages[i];
                if (m.role == "system") {
                    system = m.content + "\n\n";
                    continue;
                }
                if (m.role == last)
                    throw std::invalid_argument("messages[" + std::to_string(i) +
                                                "]: the mistral template needs user and assistant turns to alternate");
                if (m.role == "user") {
                    out += "[INST] " + system + m.content + " [/INST]";
                    system.clear();
                } else {
                    out += m.content + "</s>";
                }
                last = m.role;
            }
            (void)add_generation_prompt;  // the reply follows [/INST] directly
            break;
        }
        case TemplateFamily::Phi3: {
            check_roles(messages, "phi3");
            for (const auto& m : messages) out += "<|" + m.role + "|>\n" + m.content + "<|end|>\n";
            if (add_generation_prompt) out += "<|assistant|>\n";
            break;
        }
    }
    return out;
}

}  // namespace basalt::serve
