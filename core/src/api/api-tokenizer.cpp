// C API: tokenization, detokenization and special tokens of a model's vocabulary.
#include <basalt/basalt.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "api/out-struct.hpp"
#include "model/model.hpp"
#include "support/error.hpp"

using basalt::fail;
using basalt::guard;

namespace {

const basalt::Tokenizer& tokenizer_of(const basalt_model* model) {
    if (model == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "model is NULL");
    return model->tok();
}

// Copies text with a NUL into out when it fits; else reports the length needed.
void emit_text(const std::string& text, char* out, size_t capacity, size_t* out_len) {
    if (out_len == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "out_len is NULL");
    if (out == nullptr && capacity != 0) fail(BASALT_ERR_INVALID_ARGUMENT, "out is NULL but capacity is {}", capacity);
    if (capacity < text.size() + 1 || out == nullptr) {
        *out_len = text.size();
        fail(BASALT_ERR_CAPACITY, "output buffer of {} bytes is too small: {} bytes + NUL needed", capacity,
             text.size());
    }
    std::memcpy(out, text.data(), text.size());
    out[text.size()] = '\0';
    *out_len = text.size();
}

}  // namespace

extern "C" {

basalt_status basalt_tokenize(const basalt_model* model, const char* text, size_t text_len, uint32_t flags,
                              int32_t* out_tokens, size_t capacity, size_t* out_count) {
    return guard([&] {
        if (out_count == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_tokenize: out_count is NULL");
        if (text == nullptr && text_len != 0) fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_tokenize: text is NULL");
        if (out_tokens == nullptr && capacity != 0) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_tokenize: out_tokens is NULL but capacity is {}", capacity);
        }
        if (text_len == SIZE_MAX) {
            text_len = text == nullptr ? 0 : std::strlen(text);  // NUL-terminated
        } else if (text_len > static_cast<size_t>(PTRDIFF_MAX)) {
            fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_tokenize: text_len {} is not a length (SIZE_MAX: NUL-terminated)",
                 text_len);
        }
        const auto ids = tokenizer_of(model).tokenize(std::string_view(text == nullptr ? "" : text, text_len),
                                                      (flags & BASALT_TOKENIZE_ADD_SPECIAL) != 0,
                                                      (flags & BASALT_TOKENIZE_PARSE_SPECIAL) != 0);
        if (ids.size() > capacity || (out_tokens == nullptr && !ids.empty())) {
            *out_count = ids.size();
            fail(BASALT_ERR_CAPACITY, "token buffer of {} entries is too small: {} tokens", capacity, ids.size());
        }
        if (!ids.empty()) std::memcpy(out_tokens, ids.data(), ids.size() * sizeof(int32_t));
        *out_count = ids.size();
    });
}

basalt_status basalt_detokenize(const basalt_model* model, const int32_t* tokens, size_t n_tokens, uint32_t flags,
                                char* out, size_t capacity, size_t* out_len) {
    return guard([&] {
        if (tokens == nullptr && n_tokens != 0) fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_detokenize: tokens is NULL");
        const std::vector<int32_t> ids(tokens, tokens + n_tokens);
        const std::string text = tokenizer_of(model).detokenize(ids, (flags & BASALT_DETOKENIZE_REMOVE_SPECIAL) != 0,
                                                                (flags & BASALT_DETOKENIZE_UNPARSE_SPECIAL) != 0);
        emit_text(text, out, capacity, out_len);
    });
}

basalt_status basalt_token_to_piece(const basalt_model* model, int32_t token, int32_t special, char* out,
                                    size_t capacity, size_t* out_len) {
    return guard([&] { emit_text(tokenizer_of(model).token_to_piece(token, special != 0), out, capacity, out_len); });
}

basalt_status basalt_model_special_tokens(const basalt_model* model, basalt_special_tokens* out) {
    return guard([&] {
        if (out == nullptr) fail(BASALT_ERR_INVALID_ARGUMENT, "basalt_model_special_tokens: out is NULL");
        const basalt::Tokenizer& t = tokenizer_of(model);
        basalt_special_tokens s{};
        s.struct_size = sizeof(s);
        s.bos = t.bos();
        s.eos = t.eos();
        s.eot = t.eot();
        s.unk = t.unk();
        s.pad = t.pad();
        s.sep = t.sep();
        s.nl = t.nl();
        s.add_bos = t.add_bos() ? 1 : 0;
        s.add_eos = t.add_eos() ? 1 : 0;
        basalt::api::write_sized(out, s);
    });
}

int32_t basalt_token_is_eog(const basalt_model* model, int32_t token) {
    try {
        return tokenizer_of(model).is_eog(token) ? 1 : 0;
    } catch (...) {
        return 0;
    }
}

}  // extern "C"
