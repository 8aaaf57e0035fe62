// C API: chat templates (parse, render with a context given as JSON, the rendered prompt's text and pieces).
#include <basalt/basalt.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "model/model.hpp"
#include "support/error.hpp"
#include "template/chat-pieces.hpp"
#include "template/error.hpp"
#include "template/json.hpp"
#include "template/template.hpp"

using basalt::fail;
using basalt::guard;

struct basalt_chat_template {
    basalt::tmpl::Template parsed;
};

struct basalt_chat_prompt {
    std::string text;
    std::vector<basalt::tmpl::ChatPiece> pieces;
};

namespace {

// A vocabulary token's text as the template's markup ("" when the vocabulary has no such token).
std::string token_text(const basalt::Vocab& vocab, int32_t id) {
    return vocab.valid(id) ? vocab.tokens[static_cast<size_t>(id)].text : std::string();
}

}  // namespace

extern "C" {

basalt_status basalt_chat_template_create(const char* source, size_t source_len, basalt_chat_template** out_template) {
    return guard([&] {
        if (out_template == nullptr)
            fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_chat_template_create: out_template is NULL");
        if (source == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_chat_template_create: source is NULL");
        if (source_len == SIZE_MAX) source_len = std::strlen(source);
        try {
            auto t = std::make_unique<basalt_chat_template>(
                basalt_chat_template{basalt::tmpl::Template::parse(std::string_view(source, source_len))});
            *out_template = t.release();
        } catch (const basalt::tmpl::TemplateError& e) {
            fail(BASALT_ERR_FORMAT, "{}", e.what());
        }
    });
}

void basalt_chat_template_destroy(basalt_chat_template* chat_template) {
    delete chat_template;
}

basalt_status basalt_chat_template_render(const basalt_chat_template* chat_template,
                                          const basalt_chat_render_params* params, basalt_chat_prompt** out_prompt) {
    return guard([&] {
        if (chat_template == nullptr || out_prompt == nullptr)
            fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_chat_template_render: chat_template and out_prompt are required");
        basalt_chat_render_params p{};
        p.struct_size = sizeof(p);
        if (params != nullptr) {
            if (params->struct_size < offsetof(basalt_chat_render_params, reserved0))
                fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_chat_template_render: params->struct_size {} is too small",
                     params->struct_size);
            std::memcpy(&p, params, std::min<size_t>(params->struct_size, sizeof(p)));
        }
        basalt::tmpl::Dict context;
        if (p.context_json != nullptr) {
            basalt::tmpl::Value v;
            try {
                v = basalt::tmpl::parse_json(p.context_json);
            } catch (const std::invalid_argument& e) {
                fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_chat_template_render: context_json: {}", e.what());
            }
            if (!v.is_mapping())
                fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_chat_template_render: context_json must be a JSON object");
            context = *v.dict;
        }
        const basalt::Vocab* vocab = p.model != nullptr ? &p.model->tok().vocab() : nullptr;
        const auto set_token = [&](const char* key, const char* given, int32_t id) {
            if (given != nullptr)
                context.set(basalt::tmpl::Str::markup(key), basalt::tmpl::Value::markup(given));
            else if (vocab != nullptr && context.find(key) == nullptr)
                context.set(basalt::tmpl::Str::markup(key), basalt::tmpl::Value::markup(token_text(*vocab, id)));
        };
        set_token("bos_token", p.bos_token, vocab ? vocab->bos : -1);
        set_token("eos_token", p.eos_token, vocab ? vocab->eos : -1);
        basalt::tmpl::RenderOptions o;
        o.now_unix = p.now_unix > 0 ? p.now_unix : -1;
        if (p.max_steps != 0) o.limits.max_steps = p.max_steps;
        if (p.max_output_bytes != 0) o.limits.max_output = p.max_output_bytes;
        if (p.max_depth != 0) o.limits.max_depth = p.max_depth;
        if (p.max_ms != 0) o.limits.max_ms = p.max_ms;
        auto prompt = std::make_unique<basalt_chat_prompt>();
        try {
            const basalt::tmpl::Str out = chat_template->parsed.render(context, o);
            prompt->pieces = basalt::tmpl::chat_pieces(out, vocab);
            prompt->text = out.text;
        } catch (const basalt::tmpl::TemplateError& e) {
            fail(e.limit() ? BASALT_ERR_CAPACITY : BASALT_ERR_FORMAT, "{}", e.what());
        }
        *out_prompt = prompt.release();
    });
}

const char* basalt_chat_prompt_text(const basalt_chat_prompt* prompt, size_t* out_len) {
    if (prompt == nullptr) return nullptr;
    if (out_len != nullptr) *out_len = prompt->text.size();
    return prompt->text.c_str();
}

size_t basalt_chat_prompt_n_pieces(const basalt_chat_prompt* prompt) {
    return prompt == nullptr ? 0 : prompt->pieces.size();
}

basalt_status basalt_chat_prompt_piece(const basalt_chat_prompt* prompt, size_t index, size_t* out_offset,
                                       size_t* out_length, int32_t* out_kind) {
    return guard([&] {
        if (prompt == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_chat_prompt_piece: prompt is NULL");
        if (index >= prompt->pieces.size())
            fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_chat_prompt_piece: index {} is past the {} pieces", index,
                 prompt->pieces.size());
        const auto& piece = prompt->pieces[index];
        if (out_offset != nullptr) *out_offset = piece.offset;
        if (out_length != nullptr) *out_length = piece.length;
        if (out_kind != nullptr) *out_kind = piece.kind;
    });
}

void basalt_chat_prompt_destroy(basalt_chat_prompt* prompt) {
    delete prompt;
}

}  // extern "C"
