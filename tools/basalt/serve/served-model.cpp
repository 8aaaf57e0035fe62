#include "served-model.hpp"

#include <algorithm>

namespace basalt::serve {

std::string describe_served_model(const basalt_model* model, const std::string& id, const std::string& template_name,
                                  uint32_t n_ctx, ServedModel& out) {
    basalt_model_info info{};
    info.struct_size = sizeof(info);
    if (basalt_model_describe(model, &info) != BASALT_OK) return basalt_last_error();
    out.id = id;
    out.n_vocab = info.n_vocab;
    out.n_ctx = n_ctx != 0 ? n_ctx : std::min<uint32_t>(info.n_ctx_train == 0 ? 4096 : info.n_ctx_train, 4096);
    if (!template_name.empty()) {
        if (!template_from_name(template_name, out.chat))
            return "unknown chat template '" + template_name + "' (known: " + template_family_names() + ")";
    } else {
        const char* jinja = nullptr;
        const std::string text =
            basalt_model_meta(model, "tokenizer.chat_template", &jinja) == BASALT_OK ? std::string(jinja) : "";
        if (!template_from_jinja(text, out.chat)) {
            std::string head = text.substr(0, 120);
            std::replace(head.begin(), head.end(), '\n', ' ');
            return "the model's chat template (tokenizer.chat_template: \"" + head +
                   (text.size() > 120 ? "...\"" : "\"") +
                   ") is not one Basalt recognises; choose its family with --chat-template NAME (" +
                   template_family_names() + ")";
        }
    }
    // The end-of-turn marker stops generation when it is one token of the vocabulary (a control token).
    out.chat_stop_tokens.clear();
    const std::string eot = out.chat.end_of_turn();
    if (!eot.empty()) {
        int32_t ids[8];
        size_t n = 0;
        if (basalt_tokenize(model, eot.c_str(), eot.size(), BASALT_TOKENIZE_PARSE_SPECIAL, ids, 8, &n) == BASALT_OK &&
            n == 1)
            out.chat_stop_tokens.push_back(ids[0]);
    }
    return {};
}

}  // namespace basalt::serve
