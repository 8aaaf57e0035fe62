#include "template/chat-pieces.hpp"

#include <array>
#include <string_view>

#include "tokenizer/vocab.hpp"

namespace basalt::tmpl {
namespace {

void push(std::vector<ChatPiece>& out, size_t offset, size_t length, ChatPiece::Kind kind) {
    if (length == 0) return;
    if (!out.empty() && out.back().kind == kind && kind != ChatPiece::Control &&
        out.back().offset + out.back().length == offset) {
        out.back().length += length;
        return;
    }
    out.push_back({offset, length, kind});
}

// Cuts markup [begin, end) at the vocabulary's special-token texts: the longest token matching at each position.
void cut_markup(std::vector<ChatPiece>& out, const std::string& text, size_t begin, size_t end, const Vocab& vocab,
                const std::array<std::vector<int32_t>, 256>& by_first) {
    size_t run = begin;
    size_t i = begin;
    while (i < end) {
        size_t matched = 0;
        for (int32_t id : by_first[static_cast<unsigned char>(text[i])]) {
            const std::string& t = vocab.tokens[static_cast<size_t>(id)].text;
            if (t.size() <= end - i && std::string_view(text).substr(i, t.size()) == t) {
                matched = t.size();
                break;  // longest first
            }
        }
        if (matched == 0) {
            ++i;
            continue;
        }
        push(out, run, i - run, ChatPiece::Markup);
        push(out, i, matched, ChatPiece::Control);
        i += matched;
        run = i;
    }
    push(out, run, end - run, ChatPiece::Markup);
}

}  // namespace

std::vector<ChatPiece> chat_pieces(const Str& rendered, const Vocab* vocab) {
    std::array<std::vector<int32_t>, 256> by_first;
    if (vocab != nullptr) {
        for (int32_t id : vocab->special_tokens) {  // longest first, kept in that order per first byte
            const std::string& t = vocab->tokens[static_cast<size_t>(id)].text;
            if (!t.empty()) by_first[static_cast<unsigned char>(t[0])].push_back(id);
        }
    }
    std::vector<ChatPiece> out;
    size_t pos = 0;
    const auto markup = [&](size_t b, size_t e) {
        if (vocab != nullptr)
            cut_markup(out, rendered.text, b, e, *vocab, by_first);
        else
            push(out, b, e - b, ChatPiece::Markup);
    };
    for (const auto& [b, e] : rendered.data) {
        markup(pos, b);
        push(out, b, e - b, ChatPiece::Text);
        pos = e;
    }
    markup(pos, rendered.text.size());
    return out;
}

}  // namespace basalt::tmpl
