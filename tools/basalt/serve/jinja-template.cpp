#include "jinja-template.hpp"

#include <stdexcept>

#include "chat-template.hpp"

namespace basalt::serve {

JinjaTemplate::JinjaTemplate(const std::string& source, std::string origin) : origin_(std::move(origin)) {
    basalt_chat_template* t = nullptr;
    if (basalt_chat_template_create(source.data(), source.size(), &t) != BASALT_OK)
        throw std::invalid_argument(origin_ + ": " + basalt_last_error());
    template_.reset(t, &basalt_chat_template_destroy);
}

std::vector<ChatPiece> JinjaTemplate::render(const basalt_model* model, const nlohmann::ordered_json& context) const {
    const std::string ctx = context.dump();
    basalt_chat_render_params p{};
    p.struct_size = sizeof(p);
    p.context_json = ctx.c_str();
    p.model = model;
    basalt_chat_prompt* raw = nullptr;
    if (basalt_chat_template_render(template_.get(), &p, &raw) != BASALT_OK)
        throw std::invalid_argument(origin_ + ": " + basalt_last_error());
    const std::unique_ptr<basalt_chat_prompt, decltype(&basalt_chat_prompt_destroy)> prompt(
        raw, &basalt_chat_prompt_destroy);
    size_t len = 0;
    const char* text = basalt_chat_prompt_text(prompt.get(), &len);
    std::vector<ChatPiece> out;
    const size_t n = basalt_chat_prompt_n_pieces(prompt.get());
    out.reserve(n);
    for (size_t i = 0; i < n; ++i) {
        size_t offset = 0, length = 0;
        int32_t kind = 0;
        if (basalt_chat_prompt_piece(prompt.get(), i, &offset, &length, &kind) != BASALT_OK || offset + length > len)
            throw std::runtime_error(basalt_last_error());
        out.push_back({std::string(text + offset, length), kind == BASALT_CHAT_PIECE_CONTROL});
    }
    return out;
}

}  // namespace basalt::serve
