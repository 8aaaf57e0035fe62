#include "served-model.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace basalt::serve {

std::string describe_served_model(const basalt_model* model, const std::string& id, const std::string& template_name,
                                  uint32_t n_ctx, ServedModel& out) {
    basalt_model_info info{};
    info.struct_size = sizeof(info);
    if (basalt_model_describe(model, &info) != BASALT_OK) return basalt_last_error();
    out.id = id;
    out.n_vocab = info.n_vocab;
    out.n_ctx = n_ctx != 0 ? n_ctx : std::min<uint32_t>(info.n_ctx_train == 0 ? 4096 : info.n_ctx_train, 4096);
    const nlohmann::ordered_json kwargs = out.chat.kwargs;
    out.chat = ChatTemplate{};
    out.reasoning = reasoning_markers_for("");
    std::string template_source;  // the Jinja source in use ("" for a native family)
    if (!template_name.empty() && template_from_name(template_name, out.chat)) {
        // a family named on the command line: its native renderer
    } else {
        // The Jinja template rendered for every chat: --chat-template FILE, else the file's own. The native
        // families remain the fallback for a file without a template.
        std::string text, origin;
        if (!template_name.empty()) {
            std::error_code ec;
            if (!std::filesystem::is_regular_file(template_name, ec))
                return "unknown chat template '" + template_name + "' (known: " + template_family_names() +
                       ") and no Jinja template file of that name";
            std::ifstream f(template_name, std::ios::binary);
            std::stringstream ss;
            ss << f.rdbuf();
            if (!f) return "cannot read chat template file '" + template_name + "'";
            text = ss.str();
            origin = template_name;
        } else {
            const char* jinja = nullptr;
            text = basalt_model_meta(model, "tokenizer.chat_template", &jinja) == BASALT_OK ? std::string(jinja) : "";
            origin = "the model's tokenizer.chat_template";
        }
        if (!template_from_jinja(text, out.chat)) out.chat.family = TemplateFamily::Plain;
        out.reasoning = reasoning_markers_for(text);
        template_source = text;
        if (text.find_first_not_of(" \t\r\n") != std::string::npos) {
            try {
                out.chat.jinja = std::make_shared<const JinjaTemplate>(text, origin);
            } catch (const std::invalid_argument& e) {
                return std::string(e.what()) + "; choose another with --chat-template NAME|FILE (" +
                       template_family_names() + ")";
            }
            out.chat.model = model;
        }
    }
    out.chat.kwargs = kwargs;
    // Tools: rendered by a Jinja template that reads them (its convention parsed from the reply), else described
    // by the fallback block in the fallback convention.
    out.tools = ToolSupport{};
    out.tools.template_renders_tools = out.chat.jinja != nullptr && template_source.find("tools") != std::string::npos;
    out.tools.convention =
        out.tools.template_renders_tools ? tool_convention_for(template_source) : &fallback_tool_convention();
    if (out.tools.convention != nullptr) {
        for (const std::string& marker : convention_markers(*out.tools.convention)) {
            int32_t ids[8];
            size_t n = 0;
            char piece[8];
            size_t len = 0;
            if (basalt_tokenize(model, marker.c_str(), marker.size(), BASALT_TOKENIZE_PARSE_SPECIAL, ids, 8, &n) ==
                    BASALT_OK &&
                n == 1 && basalt_token_to_piece(model, ids[0], 0, piece, sizeof(piece), &len) == BASALT_OK && len == 0)
                out.tools.marker_tokens.emplace_back(ids[0], marker);
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

nlohmann::ordered_json parse_template_kwargs(const std::string& text) {
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object())
        throw std::invalid_argument(
            "--chat-template-kwargs must be a JSON object, e.g. '{\"enable_thinking\": false}'");
    return j;
}

}  // namespace basalt::serve
