#include "lexer.hpp"

#include <algorithm>
#include <cctype>

#include "error.hpp"
#include "tokenizer/unicode.hpp"

namespace basalt::tmpl {
namespace {

bool is_ws(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

class Lexer {
  public:
    explicit Lexer(std::string_view source) {
        // Jinja normalises newlines and drops one trailing newline (keep_trailing_newline is off).
        src_.reserve(source.size());
        for (size_t i = 0; i < source.size(); ++i) {
            if (source[i] == '\r') {
                src_ += '\n';
                if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
            } else {
                src_ += source[i];
            }
        }
        if (!src_.empty() && src_.back() == '\n') src_.pop_back();
        line_starts_.push_back(0);
        for (size_t i = 0; i < src_.size(); ++i)
            if (src_[i] == '\n') line_starts_.push_back(i + 1);
    }

    std::vector<Token> run() {
        bool line_starting = true;  // the text that follows begins a line (Jinja's lstrip_blocks condition)
        bool strip_next = false;    // the tag before asked ('-') to strip the whitespace that follows it
        while (pos_ < src_.size()) {
            size_t open = find_tag(pos_);
            std::string text = src_.substr(pos_, open - pos_);
            const size_t text_pos = pos_;
            if (strip_next) {
                size_t k = 0;
                while (k < text.size() && is_ws(text[k])) ++k;
                text.erase(0, k);
                strip_next = false;
            }
            if (open < src_.size()) {
                const char kind = src_[open + 1];
                const char sign = open + 2 < src_.size() ? src_[open + 2] : '\0';
                if (sign == '-') {
                    while (!text.empty() && is_ws(text.back())) text.pop_back();
                } else if (sign != '+' && kind != '{') {
                    // lstrip_blocks: only spaces and tabs between the line's start and the tag.
                    const size_t nl = text.rfind('\n');
                    const size_t from = nl == std::string::npos ? 0 : nl + 1;
                    if ((nl != std::string::npos || line_starting) &&
                        text.find_first_not_of(" \t", from) == std::string::npos)
                        text.erase(from);
                }
            }
            if (!text.empty()) push_text(std::move(text), text_pos);
            if (open >= src_.size()) break;
            pos_ = open;
            const char kind = src_[open + 1];
            if (kind == '#') {
                const size_t close = src_.find("#}", open + 2);
                if (close == std::string::npos) fail(open, "unterminated comment (no '#}')");
                const bool minus = close > open + 2 && src_[close - 1] == '-';
                pos_ = close + 2;
                strip_next = minus;
                if (!minus && pos_ < src_.size() && src_[pos_] == '\n') ++pos_;  // trim_blocks
                line_starting = pos_ > 0 && src_[pos_ - 1] == '\n';
                continue;
            }
            const bool block = kind == '%';
            const size_t tag_pos = open;
            pos_ = open + 2;
            if (pos_ < src_.size() && (src_[pos_] == '-' || src_[pos_] == '+')) ++pos_;
            push(block ? Token::Type::BlockBegin : Token::Type::VarBegin, "", tag_pos);
            const size_t first_token = tokens_.size();
            bool minus = false;
            lex_tag(block ? '%' : '}', tag_pos, minus);
            strip_next = minus;
            if (block && !minus && pos_ < src_.size() && src_[pos_] == '\n') ++pos_;  // trim_blocks
            line_starting = pos_ > 0 && src_[pos_ - 1] == '\n';
            if (block && tokens_.size() == first_token + 2 && tokens_[first_token].type == Token::Type::Name &&
                tokens_[first_token].text == "raw")
                raw_block(tag_pos, strip_next, line_starting);
        }
        push(Token::Type::Eof, "", src_.size());
        return std::move(tokens_);
    }

  private:
    std::string src_;
    std::vector<size_t> line_starts_;
    size_t pos_ = 0;
    std::vector<Token> tokens_;

    void where(size_t offset, int& line, int& column) const {
        const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
        const size_t l = static_cast<size_t>(it - line_starts_.begin());
        line = static_cast<int>(l);
        column = static_cast<int>(offset - line_starts_[l - 1]) + 1;
    }
    [[noreturn]] void fail(size_t offset, const std::string& msg) const {
        int line = 0, column = 0;
        where(offset, line, column);
        throw TemplateError(line, column, msg);
    }
    Token& push(Token::Type type, std::string text, size_t offset) {
        Token t;
        t.type = type;
        t.text = std::move(text);
        where(offset, t.line, t.column);
        tokens_.push_back(std::move(t));
        return tokens_.back();
    }
    void push_text(std::string text, size_t offset) {
        if (!tokens_.empty() && tokens_.back().type == Token::Type::Text)
            tokens_.back().text += text;
        else
            push(Token::Type::Text, std::move(text), offset);
    }
    size_t find_tag(size_t from) const {
        for (size_t i = from; i + 1 < src_.size(); ++i)
            if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
        return src_.size();
    }

    // Lexes the tokens of one tag up to its closing delimiter ('%' for %}, '}' for }}); minus: it was "-%}".
    void lex_tag(char closer, size_t tag_pos, bool& minus) {
        int depth = 0;  // open brackets: "}}" inside a dict literal closes the dict, not the tag
        while (true) {
            while (pos_ < src_.size() && is_ws(src_[pos_])) ++pos_;
            if (pos_ >= src_.size()) fail(tag_pos, closer == '%' ? "unterminated tag (no '%}')" : "unterminated '{{'");
            const char c = src_[pos_];
            const char n = pos_ + 1 < src_.size() ? src_[pos_ + 1] : '\0';
            const char n2 = pos_ + 2 < src_.size() ? src_[pos_ + 2] : '\0';
            if (depth == 0 && c == '-' && n == closer && n2 == '}') {
                minus = true;
                push(closer == '%' ? Token::Type::BlockEnd : Token::Type::VarEnd, "", pos_);
                pos_ += 3;
                return;
            }
            if (depth == 0 && c == closer && n == '}') {
                push(closer == '%' ? Token::Type::BlockEnd : Token::Type::VarEnd, "", pos_);
                pos_ += 2;
                return;
            }
            if (c == '\'' || c == '"') {
                string_literal();
                continue;
            }
            if (std::isdigit(static_cast<unsigned char>(c))) {
                number();
                continue;
            }
            if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
                const size_t start = pos_;
                while (pos_ < src_.size() &&
                       (std::isalnum(static_cast<unsigned char>(src_[pos_])) || src_[pos_] == '_'))
                    ++pos_;
                push(Token::Type::Name, src_.substr(start, pos_ - start), start);
                continue;
            }
            static const char* const two[] = {"//", "**", "==", "!=", "<=", ">="};
            bool matched = false;
            for (const char* op : two) {
                if (c == op[0] && n == op[1]) {
                    push(Token::Type::Op, op, pos_);
                    pos_ += 2;
                    matched = true;
                    break;
                }
            }
            if (matched) continue;
            if (std::string_view("+-*/%~<>()[]{},.:|=").find(c) == std::string_view::npos)
                fail(pos_, std::string("unexpected character '") + c + "'");
            if (c == '(' || c == '[' || c == '{') ++depth;
            if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
            push(Token::Type::Op, std::string(1, c), pos_);
            ++pos_;
        }
    }

    void string_literal() {
        const size_t start = pos_;
        const char q = src_[pos_++];
        std::string out;
        while (true) {
            if (pos_ >= src_.size()) fail(start, "unterminated string");
            const char c = src_[pos_++];
            if (c == q) break;
            if (c != '\\') {
                out += c;
                continue;
            }
            if (pos_ >= src_.size()) fail(start, "unterminated string");
            const char e = src_[pos_++];
            switch (e) {
                case 'n':
                    out += '\n';
                    break;
                case 't':
                    out += '\t';
                    break;
                case 'r':
                    out += '\r';
                    break;
                case 'a':
                    out += '\a';
                    break;
                case 'b':
                    out += '\b';
                    break;
                case 'f':
                    out += '\f';
                    break;
                case 'v':
                    out += '\v';
                    break;
                case '0':
                    out += '\0';
                    break;
                case '\\':
                case '\'':
                case '"':
                    out += e;
                    break;
                case '\n':
                    break;  // a backslash-newline continues the line
                case 'x':
                case 'u':
                case 'U': {
                    const size_t digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
                    if (pos_ + digits > src_.size()) fail(start, "truncated escape in string");
                    uint32_t cp = 0;
                    for (size_t k = 0; k < digits; ++k) {
                        const char h = src_[pos_++];
                        if (!std::isxdigit(static_cast<unsigned char>(h))) fail(start, "bad escape in string");
                        cp = cp * 16 +
                             static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(h))
                                                       ? h - '0'
                                                       : std::tolower(static_cast<unsigned char>(h)) - 'a' + 10);
                    }
                    unicode::append_utf8(out, cp);
                    break;
                }
                default:  // Python keeps unknown escapes as written
                    out += '\\';
                    out += e;
            }
        }
        push(Token::Type::String, std::move(out), start);
    }

    void number() {
        const size_t start = pos_;
        while (pos_ < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[pos_])) || src_[pos_] == '_'))
            ++pos_;
        bool is_float = false;
        if (pos_ + 1 < src_.size() && src_[pos_] == '.' && std::isdigit(static_cast<unsigned char>(src_[pos_ + 1]))) {
            is_float = true;
            ++pos_;
            while (pos_ < src_.size() && std::isdigit(static_cast<unsigned char>(src_[pos_]))) ++pos_;
        }
        if (pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
            size_t k = pos_ + 1;
            if (k < src_.size() && (src_[k] == '+' || src_[k] == '-')) ++k;
            if (k < src_.size() && std::isdigit(static_cast<unsigned char>(src_[k]))) {
                is_float = true;
                pos_ = k;
                while (pos_ < src_.size() && std::isdigit(static_cast<unsigned char>(src_[pos_]))) ++pos_;
            }
        }
        std::string t = src_.substr(start, pos_ - start);
        t.erase(std::remove(t.begin(), t.end(), '_'), t.end());
        Token& tok = push(is_float ? Token::Type::Float : Token::Type::Int, t, start);
        try {
            if (is_float)
                tok.number = std::stod(t);
            else
                tok.integer = std::stoll(t);
        } catch (const std::exception&) {
            fail(start, "number out of range: " + t);
        }
    }

    // {% raw %}: everything up to {% endraw %} is text.
    void raw_block(size_t tag_pos, bool& strip_next, bool& line_starting) {
        tokens_.resize(tokens_.size() - 3);  // BlockBegin, Name raw, BlockEnd
        size_t search = pos_;
        while (true) {
            const size_t open = src_.find("{%", search);
            if (open == std::string::npos) fail(tag_pos, "unterminated raw block (no '{% endraw %}')");
            size_t k = open + 2;
            const bool minus = k < src_.size() && src_[k] == '-';
            if (k < src_.size() && (src_[k] == '-' || src_[k] == '+')) ++k;
            while (k < src_.size() && is_ws(src_[k])) ++k;
            if (src_.compare(k, 6, "endraw") != 0) {
                search = open + 2;
                continue;
            }
            k += 6;
            while (k < src_.size() && is_ws(src_[k])) ++k;
            bool end_minus = false;
            if (k < src_.size() && src_[k] == '-') {
                end_minus = true;
                ++k;
            }
            if (src_.compare(k, 2, "%}") != 0) fail(open, "malformed endraw tag");
            std::string text = src_.substr(pos_, open - pos_);
            if (strip_next) text.erase(0, std::min(text.size(), text.find_first_not_of(" \t\n\r\f\v")));
            if (minus)
                while (!text.empty() && is_ws(text.back())) text.pop_back();
            if (!text.empty()) push_text(std::move(text), pos_);
            pos_ = k + 2;
            strip_next = end_minus;
            if (!end_minus && pos_ < src_.size() && src_[pos_] == '\n') ++pos_;
            line_starting = pos_ > 0 && src_[pos_ - 1] == '\n';
            return;
        }
    }
};

}  // namespace

std::vector<Token> lex(std::string_view source) {
    return Lexer(source).run();
}

}  // namespace basalt::tmpl
