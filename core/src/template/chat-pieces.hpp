// A rendered chat prompt as pieces for tokenization: the data the caller passed (message content, tool
// definitions) is text; the template's own text is markup, cut where it spells a special token of the model's
// vocabulary (control, user-defined or unknown, longest first, as the tokenizer's special-token parsing cuts), so
// that only the template's markup can become control tokens.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "template/value.hpp"

namespace basalt {
class Vocab;
}

namespace basalt::tmpl {

struct ChatPiece {
    enum Kind : int32_t { Text = 0, Markup = 1, Control = 2 };
    size_t offset = 0;
    size_t length = 0;
    Kind kind = Text;
};

// Pieces covering rendered.text in order. vocab may be null: markup is then never cut into control pieces.
// Pure function.
std::vector<ChatPiece> chat_pieces(const Str& rendered, const Vocab* vocab);

}  // namespace basalt::tmpl
