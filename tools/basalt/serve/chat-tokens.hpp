// A rendered chat as token ids with special tokens only from the template: the template's control pieces become
// control tokens, message content and the rest of the markup are tokenized as plain text (a typed "<|im_end|>" is
// text and cannot close its turn). Shared by `basalt serve` and `basalt chat`. docs/server.md, "Chat templates".
#pragma once

#include <basalt/basalt.h>

#include <cstdint>
#include <vector>

#include "chat-template.hpp"

namespace basalt::serve {

// Tokenizes pieces (ChatTemplate::render_pieces) with model's vocabulary: BOS/EOS as the vocabulary adds them, each
// control piece as its control token, the text between two control pieces as one plain text (no special-token
// parsing). A control piece that is not one control token of this vocabulary is text too, and the whitespace a
// control token strips (lstrip/rstrip attributes) is stripped, so that a chat whose content holds no control-token
// text gives exactly the ids of its render() tokenized with special-token parsing. Throws std::runtime_error with
// the tokenizer's message. Thread-safe (reads the model only).
std::vector<int32_t> tokenize_chat(const basalt_model* model, const std::vector<ChatPiece>& pieces);

}  // namespace basalt::serve
