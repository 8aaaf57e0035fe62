// Byte-level BPE as llama.cpp runs it: pre-tokenize with the vocabulary's regex patterns, map every byte of a
// word to its GPT-2 character (gemma4: keep the raw UTF-8), then repeatedly apply the lowest-ranked merge among
// adjacent symbols (ties: the leftmost pair). A final symbol that is not a token is emitted byte by byte where single
// bytes are tokens.
#include <queue>
#include <string>

#include "tokenizer/pre-tokenizer.hpp"
#include "tokenizer/tokenizer-models.hpp"
#include "tokenizer/unicode.hpp"

namespace basalt::detail {

namespace {

struct Symbol {
    int prev;
    int next;
    size_t begin;
    size_t n;
};

struct Bigram {
    int left;
    int right;
    int32_t rank;
    std::string text;
};

// top() is the lowest rank, then the smallest left index.
struct BigramOrder {
    bool operator()(const Bigram& a, const Bigram& b) const {
        return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
    }
};

class BpeModel final : public TokenizerModel {
  public:
    explicit BpeModel(const Vocab& vocab)
        : vocab_(vocab), pre_(vocab.pre_type), raw_utf8_(vocab.pre_type == PreType::GEMMA4) {}

    void encode(std::string_view text, std::vector<int32_t>& out) const override {
        for (const std::string& raw : pre_.split(text)) {
            if (raw_utf8_) {
                encode_word(raw, out);
                continue;
            }
            std::string word;
            word.reserve(raw.size() * 2);
            for (const char c : raw) word += unicode::byte_to_bpe_char(static_cast<uint8_t>(c));
            encode_word(word, out);
        }
    }

  private:
    const Vocab& vocab_;
    PreTokenizer pre_;
    bool raw_utf8_;  // gemma4: merges over the text's own UTF-8, unknown bytes as <0xXX> tokens

    void encode_word(const std::string& word, std::vector<int32_t>& out) const {
        std::vector<Symbol> symbols;
        // A run of newlines that is a token stays whole (gemma4, as llama.cpp: its merges would split it).
        const bool whole_newlines = raw_utf8_ && word.find_first_not_of('\n') == std::string::npos;
        if ((vocab_.ignore_merges || whole_newlines) && vocab_.find(word) != kTokenNull) {
            symbols.push_back({-1, -1, 0, word.size()});
        } else {
            for (size_t offset = 0; offset < word.size();) {
                const size_t len =
                    std::min(unicode::utf8_len(static_cast<uint8_t>(word[offset])), word.size() - offset);
                const int index = static_cast<int>(symbols.size());
                symbols.push_back({index - 1, offset + len == word.size() ? -1 : index + 1, offset, len});
                offset += len;
            }
        }
        const auto text_of = [&](const Symbol& s) { return std::string_view(word).substr(s.begin, s.n); };

        std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue;
        const auto try_add = [&](int left, int right) {
            if (left == -1 || right == -1) return;
            const std::string_view l = text_of(symbols[static_cast<size_t>(left)]);
            const std::string_view r = text_of(symbols[static_cast<size_t>(right)]);
            const int32_t rank = vocab_.bpe_rank(l, r);
            if (rank < 0) return;
            std::string joined;
            joined.reserve(l.size() + r.size());
            joined.append(l).append(r);
            queue.push({left, right, rank, std::move(joined)});
        };
        for (int i = 1; i < static_cast<int>(symbols.size()); ++i) try_add(i - 1, i);

        while (!queue.empty()) {
            const Bigram b = queue.top();
            queue.pop();
            auto& left = symbols[static_cast<size_t>(b.left)];
            auto& right = symbols[static_cast<size_t>(b.right)];
            if (left.n == 0 || right.n == 0) continue;
            // Stale: the pair's text changed since it was queued.
            const std::string_view l = text_of(left);
            const std::string_view r = text_of(right);
            if (l.size() + r.size() != b.text.size() || b.text.compare(0, l.size(), l) != 0 ||
                b.text.compare(l.size(), r.size(), r) != 0) {
                continue;
            }
            left.n += right.n;
            right.n = 0;
            left.next = right.next;
            if (right.next >= 0) symbols[static_cast<size_t>(right.next)].prev = b.left;
            try_add(left.prev, b.left);
            try_add(b.left, left.next);
        }

        for (const Symbol& s : symbols) {
            if (s.n == 0) continue;
            const std::string_view piece = text_of(s);
            const int32_t id = vocab_.find(piece);
            if (id != kTokenNull) {
                out.push_back(id);
                continue;
            }
            // As llama.cpp: look each byte of the (encoded) piece up as a one-byte token, or as its <0xXX> token on
            // raw UTF-8; skip it when absent.
            for (const char c : piece) {
                const int32_t byte_id =
                    raw_utf8_ ? vocab_.byte_to_token(static_cast<uint8_t>(c)) : vocab_.find(std::string_view(&c, 1));
                if (byte_id != kTokenNull) out.push_back(byte_id);
            }
        }
    }
};

}  // namespace

std::unique_ptr<TokenizerModel> make_bpe_model(const Vocab& vocab) {
    return std::make_unique<BpeModel>(vocab);
}

}  // namespace basalt::detail
