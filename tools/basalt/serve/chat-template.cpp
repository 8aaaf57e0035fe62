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
    if (jinja) return "jinja";
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
    if (jinja && family == TemplateFamily::Plain) return "";
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
    if (family == TemplateFamily::Plain && !jinja) return {"\nUser:"};
    return {};
}

std::string ChatTemplate::render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
    std::string out;
    for (const ChatPiece& p : render_pieces(messages, add_generation_prompt)) out += p.text;
    return out;
}

std::vector<ChatPiece> ChatTemplate::render_conversation(const nlohmann::ordered_json& messages,
                                                         const nlohmann::ordered_json& tools,
                                                         const nlohmann::ordered_json& request_kwargs,
                                                         bool add_generation_prompt) const {
    if (!jinja) {
        if (!tools.is_null())
            throw std::invalid_argument(std::string("the ") + name() + " template cannot render tools");
        std::vector<ChatMessage> plain;
        for (const auto& m : messages) {
            ChatMessage c;
            c.role = m.value("role", "");
            if (m.contains("content") && m["content"].is_string()) c.content = m["content"].get<std::string>();
            plain.push_back(std::move(c));
        }
        return render_pieces(plain, add_generation_prompt);
    }
    // Hugging Face's call: render(messages=..., tools=..., add_generation_prompt=..., **kwargs); the vocabulary's
    // bos_token / eos_token are added by libbasalt.
    nlohmann::ordered_json context = nlohmann::ordered_json::object();
    for (const auto& [k, v] : kwargs.items()) context[k] = v;
    if (request_kwargs.is_object())
        for (const auto& [k, v] : request_kwargs.items()) context[k] = v;
    context["messages"] = messages;
    if (!tools.is_null()) context["tools"] = tools;
    context["add_generation_prompt"] = add_generation_prompt;
    return jinja->render(model, context);
}

std::vector<ChatPiece> ChatTemplate::render_pieces(const std::vector<ChatMessage>& messages,
                                                   bool add_generation_prompt) const {
    if (jinja) {
        nlohmann::ordered_json ms = nlohmann::ordered_json::array();
        for (const auto& m : messages) ms.push_back({{"role", m.role}, {"content", m.content}});
        return render_conversation(ms, nullptr, nullptr, add_generation_prompt);
    }
    std::vector<ChatPiece> out;
    const auto control = [&](std::string text) { out.push_back({std::move(text), true}); };
    const auto text = [&](std::string t) {
        if (!t.empty()) out.push_back({std::move(t), false});
    };
    switch (family) {
        case TemplateFamily::Plain: {
            // The shipped models have no template: a transcript of "Role: text" lines, the reply after "Assistant:".
            check_roles(messages, "plain");
            for (const auto& m : messages) {
                text(m.role == "system" ? "System: " : m.role == "user" ? "User: " : "Assistant: ");
                text(m.content);
                text("\n");
            }
            if (add_generation_prompt) text("Assistant:");
            break;
        }
        case TemplateFamily::ChatML: {
            for (size_t i = 0; i < messages.size(); ++i) {
                const auto& m = messages[i];
                if (m.role != "system" && m.role != "user" && m.role != "assistant")
                    throw std::invalid_argument(role_error(i, m.role, "chatml", "system, user, assistant"));
                control("<|im_start|>");
                text(m.role + "\n");
                text(m.content);
                control("<|im_end|>");
                text("\n");
            }
            if (add_generation_prompt) {
                control("<|im_start|>");
                text("assistant\n");
            }
            break;
        }
        case TemplateFamily::Llama3: {
            check_roles(messages, "llama3");
            for (const auto& m : messages) {
                control("<|start_header_id|>");
                text(m.role);
                control("<|end_header_id|>");
                text("\n\n");
                text(m.content);
                control("<|eot_id|>");
            }
            if (add_generation_prompt) {
                control("<|start_header_id|>");
                text("assistant");
                control("<|end_header_id|>");
                text("\n\n");
            }
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
                control("<start_of_turn>");
                text(m.role == "assistant" ? "model\n" : "user\n");
                if (m.role == "user" && !system.empty()) {
                    text(system);
                    system.clear();
                }
                text(m.content);
                control("<end_of_turn>");
                text("\n");
            }
            if (add_generation_prompt) {
                control("<start_of_turn>");
                text("model\n");
            }
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
                    control("[INST]");
                    text(" ");
                    text(system);
                    text(m.content);
                    text(" ");
                    control("[/INST]");
                    system.clear();
                } else {
                    text(m.content);
                    control("</s>");
                }
                last = m.role;
            }
            (void)add_generation_prompt;  // the reply follows [/INST] directly
            break;
        }
        case TemplateFamily::Phi3: {
            check_roles(messages, "phi3");
            for (const auto& m : messages) {
                control("<|" + m.role + "|>");
                text("\n");
                text(m.content);
                control("<|end|>");
                text("\n");
            }
            if (add_generation_prompt) {
                control("<|assistant|>");
                text("\n");
            }
            break;
        }
    }
    return out;
}

}  // namespace basalt::serve
