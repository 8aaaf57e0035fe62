// SentencePiece BPE as llama.cpp runs it: start from UTF-8 characters and repeatedly merge the adjacent pair
// whose concatenation is the vocabulary token with the highest score (ties: the leftmost pair); characters that
// are not tokens fall back to their bytes (`<0xXX>`).
#include <queue>
#include <string>

#include "tokenizer/tokenizer-models.hpp"
#include "tokenizer/unicode.hpp"

namespace basalt::detail {

namespace {

struct Symbol {
    int prev;
    int next;
    size_t begin;  // byte offset into the text
    size_t n;      // bytes; 0 once merged into its left neighbour
};

struct Bigram {
    int left;
    int right;
    float score;
    size_t size;
};

// Orders the queue so that top() is the highest score, then the smallest left index.
struct BigramOrder {
    bool operator()(const Bigram& a, const Bigram& b) const {
        return a.score < b.score || (a.score == b.score && a.left > b.left);
    }
};

class SpmModel final : public TokenizerModel {
  public:
    explicit SpmModel(const Vocab& vocab) : vocab_(vocab) {}

    void encode(std::string_view text, std::vector<int32_t>& out) const override {
        std::vector<Symbol> symbols;
        for (size_t offset = 0; offset < text.size();) {
            const size_t len = std::min(unicode::utf8_len(static_cast<uint8_t>(text[offset])), text.size() - offset);
            const int index = static_cast<int>(symbols.size());
            symbols.push_back({index - 1, offset + len == text.size() ? -1 : index + 1, offset, len});
            offset += len;
        }

        std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue;
        const auto try_add = [&](int left, int right) {
            if (left == -1 || right == -1) return;
            const auto& l = symbols[static_cast<size_t>(left)];
            const auto& r = symbols[static_cast<size_t>(right)];
            const std::string_view joined = text.substr(l.begin, l.n + r.n);
            const int32_t id = vocab_.find(joined);
            if (id == kTokenNull) return;
            queue.push({left, right, vocab_.tokens[static_cast<size_t>(id)].score, joined.size()});
        };
        for (int i = 1; i < static_cast<int>(symbols.size()); ++i) try_add(i - 1, i);

        while (!queue.empty()) {
            const Bigram b = queue.top();
            queue.pop();
            auto& left = symbols[static_cast<size_t>(b.left)];
            auto& right = symbols[static_cast<size_t>(b.right)];
            // Stale: one side was merged since the pair was queued.
            if (left.n == 0 || right.n == 0 || left.n + right.n != b.size) continue;
            left.n += right.n;
            right.n = 0;
            left.next = right.next;
            if (right.next >= 0) symbols[static_cast<size_t>(right.next)].prev = b.left;
            try_add(left.prev, b.left);
            try_add(b.left, left.next);
        }

        // Every merged symbol is a token by construction; single characters may not be and become bytes.
        for (int i = symbols.empty() ? -1 : 0; i != -1; i = symbols[static_cast<size_t>(i)].next) {
            const auto& s = symbols[static_cast<size_t>(i)];
            const std::string_view piece = text.substr(s.begin, s.n);
            const int32_t id = vocab_.find(piece);
            if (id != kTokenNull) {
                out.push_back(id);
                continue;
            }
            for (const char c : piece) {
                const int32_t byte_id = vocab_.byte_to_token(static_cast<uint8_t>(c));
                // llama.cpp aborts when a vocabulary has no byte tokens; the unknown token is used instead.
                const int32_t use = byte_id != kTokenNull ? byte_id : vocab_.unk;
                if (use != kTokenNull) out.push_back(use);
            }
        }
    }

  private:
    const Vocab& vocab_;
};

}  // namespace

std::unique_ptr<TokenizerModel> make_spm_model(const Vocab& vocab) {
    return std::make_unique<SpmModel>(vocab);
}

}  // namespace basalt::detail
