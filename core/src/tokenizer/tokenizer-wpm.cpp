// WordPiece (BERT) as llama.cpp runs it. The GGUF vocabulary marks word-initial pieces with a leading U+2581
// ("▁") instead of marking continuations with "##". Text is normalised (lowercase, accents stripped through
// the first code point of the canonical decomposition), split on whitespace and around punctuation, ASCII
// symbols and CJK ideographs; each word gets the "▁" prefix and is cut greedily into the longest known pieces,
// or becomes the unknown token when a position has no piece.
#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "tokenizer/tokenizer-models.hpp"
#include "tokenizer/unicode.hpp"

namespace basalt::detail {

namespace {

bool is_chinese_char(uint32_t c) {
    // The ranges HF's BertPreTokenizer uses (its 0x2B920 start, not the Unicode block's 0x2B820, is kept).
    return (c >= 0x04E00 && c <= 0x09FFF) || (c >= 0x03400 && c <= 0x04DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0x0F900 && c <= 0x0FAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

class WpmModel final : public TokenizerModel {
  public:
    explicit WpmModel(const Vocab& vocab) : vocab_(vocab) {}

    void encode(std::string_view text, std::vector<int32_t>& out) const override {
        for (const std::string& word : words(text)) {
            if (word.empty()) continue;
            const std::string w = fmt::format("\xE2\x96\x81{}", word);  // the word-start marker
            const size_t n = w.size();
            const size_t before = out.size();
            for (size_t i = 0; i < n; ++i) {
                bool found = false;
                for (size_t j = std::min(n, i + vocab_.max_token_len + 1); j > i; --j) {
                    const int32_t id = vocab_.find(std::string_view(w).substr(i, j - i));
                    if (id != kTokenNull) {
                        out.push_back(id);
                        found = true;
                        i = j - 1;
                        break;
                    }
                }
                if (!found) {  // the whole word is unknown
                    out.resize(before);
                    break;
                }
            }
            if (out.size() == before && vocab_.unk != kTokenNull) out.push_back(vocab_.unk);
        }
    }

  private:
    const Vocab& vocab_;

    std::vector<std::string> words(std::string_view text) const {
        std::vector<uint32_t> cpts = unicode::decode_utf8(text);
        if (vocab_.strip_accents) {
            for (auto& c : cpts) c = unicode::nfd_first(c);
        }
        std::vector<std::string> out(1);
        for (const uint32_t c : cpts) {
            const uint16_t f = unicode::flags(c);
            if (f & unicode::WHITESPACE) {
                if (!out.back().empty()) out.emplace_back();
                continue;
            }
            if (c == 0 || c == unicode::kReplacement || (f & unicode::CONTROL)) continue;
            if (vocab_.strip_accents && (f & unicode::ACCENT_MARK)) continue;
            const std::string s = unicode::to_utf8(vocab_.lowercase ? unicode::to_lower(c) : c);
            if ((f & unicode::PUNCTUATION) || (c < 0x7F && (f & unicode::SYMBOL)) || is_chinese_char(c)) {
                if (!out.back().empty()) out.emplace_back();
                out.back() = s;  // a word of its own
                out.emplace_back();
            } else {
                out.back() += s;
            }
        }
        if (out.back().empty()) out.pop_back();
        return out;
    }
};

}  // namespace

std::unique_ptr<TokenizerModel> make_wpm_model(const Vocab& vocab) {
    return std::make_unique<WpmModel>(vocab);
}

}  // namespace basalt::detail
