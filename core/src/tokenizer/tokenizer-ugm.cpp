// SentencePiece Unigram (T5) as llama.cpp runs it: normalise the text (the optional precompiled character
// map, whitespace escaping to U+2581, space prefix / merging of extra spaces), then find the tokenization with
// the highest total score by dynamic programming over a trie of the vocabulary. A code point no token covers
// costs (lowest normal score - 10) and becomes the unknown token; runs of unknown tokens collapse into one.
#include <algorithm>
#include <cfloat>
#include <string>

#include "support/error.hpp"
#include "support/heap-bytes.hpp"
#include "tokenizer/tokenizer-models.hpp"
#include "tokenizer/unicode.hpp"

namespace basalt::detail {

namespace {

// A byte trie. Each node holds its children (byte, node) and an optional value.
class ByteTrie {
  public:
    ByteTrie() : nodes_(1) {}

    void insert(std::string_view key, int32_t value) {
        int32_t node = 0;
        for (const char ch : key) {
            const auto c = static_cast<uint8_t>(ch);
            int32_t next = child(node, c);
            if (next < 0) {
                next = static_cast<int32_t>(nodes_.size());
                nodes_[static_cast<size_t>(node)].children.emplace_back(c, next);
                nodes_.emplace_back();
            }
            node = next;
        }
        nodes_[static_cast<size_t>(node)].has_value = true;
        nodes_[static_cast<size_t>(node)].value = value;
    }
    // The child of node along byte c, or -1.
    int32_t child(int32_t node, uint8_t c) const {
        for (const auto& [b, n] : nodes_[static_cast<size_t>(node)].children) {
            if (b == c) return n;
        }
        return -1;
    }
    bool has_value(int32_t node) const { return nodes_[static_cast<size_t>(node)].has_value; }
    // Heap bytes of the nodes and their child lists.
    uint64_t host_bytes() const noexcept {
        uint64_t b = heap::of(nodes_);
        for (const Node& n : nodes_) b += heap::of(n.children);
        return b;
    }
    int32_t value(int32_t node) const { return nodes_[static_cast<size_t>(node)].value; }
    // How many bytes of s can be walked from the root, whether or not the walk ends on a key (llama.cpp's
    // user-defined token match works this way).
    size_t walk(std::string_view s) const {
        int32_t node = 0;
        size_t i = 0;
        while (i < s.size() && (node = child(node, static_cast<uint8_t>(s[i]))) >= 0) ++i;
        return i;
    }

  private:
    struct Node {
        std::vector<std::pair<uint8_t, int32_t>> children;
        bool has_value = false;
        int32_t value = 0;
    };
    std::vector<Node> nodes_;
};

uint32_t read_le32(const uint8_t* p) {
    return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

class UgmModel final : public TokenizerModel {
  public:
    explicit UgmModel(const Vocab& vocab) : vocab_(vocab) {
        const auto& pc = vocab.precompiled_charsmap;
        if (!pc.empty()) {  // sizes were checked when the vocabulary was loaded
            const uint32_t blob = read_le32(pc.data());
            xcda_ = pc.data() + 4;
            xcda_size_ = blob / 4;
            replacements_ = reinterpret_cast<const char*>(pc.data() + 4 + blob);
            replacements_size_ = pc.size() - 4 - blob;
        }
        float min_score = FLT_MAX;
        for (size_t id = 0; id < vocab.size(); ++id) {
            const TokenData& t = vocab.tokens[id];
            if (t.attr & ATTR_NORMAL) min_score = std::min(min_score, t.score);
            if (t.attr & (ATTR_NORMAL | ATTR_USER_DEFINED | ATTR_UNUSED)) {
                tokens_.insert(t.text, static_cast<int32_t>(id));
            }
            if (t.attr & ATTR_USER_DEFINED) user_defined_.insert(t.text, 0);
        }
        unknown_score_ = min_score - 10.0f;
    }

    uint64_t host_bytes() const noexcept override { return tokens_.host_bytes() + user_defined_.host_bytes(); }

    void encode(std::string_view text, std::vector<int32_t>& out) const override {
        const std::string norm = normalize(text);
        const size_t n = norm.size();
        if (n == 0) return;

        struct Best {
            int32_t id;
            size_t from;
            double score;
        };
        const int32_t unk = vocab_.unk;
        std::vector<Best> best(n + 1, Best{unk, 0, -DBL_MAX});
        best[0] = {unk, 0, 0.0};
        for (size_t at = 0; at < n;) {
            const size_t char_len = std::min(unicode::utf8_len(static_cast<uint8_t>(norm[at])), n - at);
            const double base = best[at].score;
            bool single_char_token = false;
            int32_t node = 0;
            for (size_t end = at; end < n;) {
                node = tokens_.child(node, static_cast<uint8_t>(norm[end]));
                if (node < 0) break;
                ++end;
                if (!tokens_.has_value(node)) continue;
                if (end - at == char_len) single_char_token = true;
                const int32_t id = tokens_.value(node);
                const TokenData& t = vocab_.tokens[static_cast<size_t>(id)];
                // User-defined tokens score 0 so they win; double keeps sums identical to SentencePiece.
                const double score = base + ((t.attr & ATTR_USER_DEFINED) ? 0.0 : static_cast<double>(t.score));
                if (score > best[end].score) best[end] = {id, at, score};
            }
            if (!single_char_token) {
                const double score = base + static_cast<double>(unknown_score_);
                if (score > best[at + char_len].score) best[at + char_len] = {unk, at, score};
            }
            at += char_len;
        }

        const size_t mark = out.size();
        bool prev_unknown = false;
        for (size_t at = n;;) {
            const Best& b = best[at];
            const bool unknown = b.id == unk;
            if (!(prev_unknown && unknown) && b.id != kTokenNull) out.push_back(b.id);
            if (b.from == 0) break;
            prev_unknown = unknown;
            at = b.from;
        }
        std::reverse(out.begin() + static_cast<std::ptrdiff_t>(mark), out.end());
    }

  private:
    const Vocab& vocab_;
    ByteTrie tokens_;
    ByteTrie user_defined_;
    float unknown_score_ = 0.0f;
    const uint8_t* xcda_ = nullptr;
    size_t xcda_size_ = 0;
    const char* replacements_ = nullptr;
    size_t replacements_size_ = 0;

    uint32_t xcda_node(size_t index) const {
        if (index >= xcda_size_) {
            fail(BASALT_ERR_FORMAT, "{}: precompiled_charsmap: XCDA index {} out of range ({} entries)", vocab_.source,
                 index, xcda_size_);
        }
        return read_le32(xcda_ + 4 * index);
    }
    // XCDA entry fields: BASE in bits 10-30 (shifted by 8 when bit 9 is set), LCHECK in bits 0-7 (and 31),
    // LEAF in bit 8, VALUE in bits 0-30.
    static uint32_t xcda_base(uint32_t node) { return (node >> 10) << ((node & (1u << 9)) >> 6); }
    static uint32_t xcda_lcheck(uint32_t node) { return node & ((1u << 31) | 0xFF); }
    static bool xcda_leaf(uint32_t node) { return ((node >> 8) & 1) != 0; }
    static uint32_t xcda_value(uint32_t node) { return node & ((1u << 31) - 1); }

    // The normalisation of the text at `offset`: (replacement, length) and how many input bytes it consumed.
    struct Prefix {
        std::string_view replacement;
        size_t consumed;
    };
    Prefix normalize_prefix(std::string_view input, size_t offset) const {
        const std::string_view rest = input.substr(offset);
        const size_t user = user_defined_.walk(rest);
        if (user > 0) return {rest.substr(0, user), user};

        size_t longest = 0;
        size_t replacement_at = 0;
        if (xcda_size_ > 0) {
            uint32_t node = xcda_base(xcda_node(0));
            for (size_t i = 0; i < rest.size(); ++i) {
                const auto c = static_cast<uint8_t>(rest[i]);
                if (c == 0) break;
                node ^= c;
                const uint32_t entry = xcda_node(node);
                if (xcda_lcheck(entry) != c) break;
                const bool leaf = xcda_leaf(entry);
                node ^= xcda_base(entry);
                if (leaf) {
                    longest = i + 1;
                    replacement_at = xcda_value(xcda_node(node));
                }
            }
        }
        if (longest > 0) {
            if (replacement_at >= replacements_size_) {
                fail(BASALT_ERR_FORMAT, "{}: precompiled_charsmap: replacement offset {} out of range ({} bytes)",
                     vocab_.source, replacement_at, replacements_size_);
            }
            const std::string_view all(replacements_ + replacement_at, replacements_size_ - replacement_at);
            const size_t end = all.find('\0');
            if (end == std::string_view::npos) {
                fail(BASALT_ERR_FORMAT, "{}: precompiled_charsmap: unterminated replacement at {}", vocab_.source,
                     replacement_at);
            }
            return {all.substr(0, end), longest};
        }
        size_t next = offset;
        uint32_t cpt = 0;
        if (unicode::decode_utf8(input, next, cpt)) return {rest.substr(0, next - offset), next - offset};
        return {"\xEF\xBF\xBD", 1};  // an invalid byte becomes U+FFFD
    }

    std::string normalize(std::string_view input) const {
        std::string out;
        out.reserve(input.size() * 3);
        const std::string_view space = vocab_.escape_whitespaces ? "\xE2\x96\x81" : " ";
        const bool prepend = !vocab_.treat_whitespace_as_suffix && vocab_.add_space_prefix;
        const bool append = vocab_.treat_whitespace_as_suffix && vocab_.add_space_prefix;
        const bool merge = vocab_.remove_extra_whitespaces;
        bool prepended = false;
        bool in_word = false;
        for (size_t offset = 0; offset < input.size();) {
            const Prefix p = normalize_prefix(input, offset);
            for (const char c : p.replacement) {
                if (c != ' ') {
                    if (!in_word) {
                        in_word = true;
                        if ((prepend && !prepended) || merge) {
                            out += space;
                            prepended = true;
                        }
                    }
                    out += c;
                } else {
                    in_word = false;
                    if (!merge) out += space;
                }
            }
            offset += p.consumed;
        }
        if (append) out += space;
        return out;
    }
};

}  // namespace

std::unique_ptr<TokenizerModel> make_ugm_model(const Vocab& vocab) {
    return std::make_unique<UgmModel>(vocab);
}

}  // namespace basalt::detail
