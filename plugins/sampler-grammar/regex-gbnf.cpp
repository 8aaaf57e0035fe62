// Regex -> GBNF (regex-gbnf.hpp): a recursive-descent parser that writes the GBNF expression as it goes.
#include "regex-gbnf.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "grammar.hpp"

namespace basalt::grammar {
namespace {

std::string class_char(uint32_t cp) {
    static const char* hex = "0123456789ABCDEF";
    if ((cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')) {
        return std::string(1, static_cast<char>(cp));
    }
    std::string out;
    if (cp < 0x100) {
        out = "\\x";
        out += hex[(cp >> 4) & 15];
        out += hex[cp & 15];
    } else if (cp < 0x10000) {
        out = "\\u";
        for (int s = 12; s >= 0; s -= 4) out += hex[(cp >> s) & 15];
    } else {
        out = "\\U";
        for (int s = 28; s >= 0; s -= 4) out += hex[(cp >> s) & 15];
    }
    return out;
}

std::string utf8(uint32_t cp) {
    std::string s;
    if (cp < 0x80) {
        s += static_cast<char>(cp);
    } else if (cp < 0x800) {
        s += static_cast<char>(0xC0 | (cp >> 6));
        s += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        s += static_cast<char>(0xE0 | (cp >> 12));
        s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        s += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        s += static_cast<char>(0xF0 | (cp >> 18));
        s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        s += static_cast<char>(0x80 | (cp & 0x3F));
    }
    return s;
}

using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;

class RegexParser {
  public:
    RegexParser(std::string_view p, bool json) : p_(p), json_(json) {}

    std::string run() {
        if (pos_ < p_.size() && p_[pos_] == '^') ++pos_;
        std::string e = alternation();
        if (pos_ < p_.size()) fail("unexpected '" + std::string(1, p_[pos_]) + "'");
        return e;
    }

  private:
    std::string_view p_;
    bool json_;
    size_t pos_ = 0;

    [[noreturn]] void fail(const std::string& what) const {
        throw GrammarError("regex: " + what + " at offset " + std::to_string(pos_));
    }

    uint32_t next_cp() {
        const auto b0 = static_cast<unsigned char>(p_[pos_]);
        int n = b0 < 0x80 ? 0 : b0 >= 0xF0 ? 3 : b0 >= 0xE0 ? 2 : b0 >= 0xC0 ? 1 : 0;
        uint32_t cp = n == 0 ? b0 : n == 1 ? (b0 & 0x1F) : n == 2 ? (b0 & 0x0F) : (b0 & 0x07);
        ++pos_;
        for (; n > 0; --n) {
            if (pos_ >= p_.size()) fail("invalid UTF-8");
            cp = (cp << 6) | (static_cast<unsigned char>(p_[pos_++]) & 0x3F);
        }
        return cp;
    }

    uint32_t hex(int n) {
        uint32_t v = 0;
        for (int i = 0; i < n; ++i) {
            if (pos_ >= p_.size()) fail("a truncated escape");
            const char c = p_[pos_++];
            const int d = (c >= '0' && c <= '9')   ? c - '0'
                          : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                          : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                                   : -1;
            if (d < 0) fail("a bad hex digit");
            v = v * 16 + static_cast<uint32_t>(d);
        }
        return v;
    }

    // The code points JSON strings cannot hold raw (excluded from . and negated classes in json mode).
    static void json_forbidden(Ranges& r) {
        r.emplace_back(0, 0x1F);
        r.emplace_back('"', '"');
        r.emplace_back('\\', '\\');
        r.emplace_back(0x7F, 0x7F);
    }

    static std::string class_text(const Ranges& r, bool negated) {
        std::string out = negated ? "[^" : "[";
        for (const auto& [lo, hi] : r) {
            out += class_char(lo);
            if (hi != lo) out += "-" + class_char(hi);
        }
        return out + "]";
    }

    // An escape after '\' (pos_ at the letter): a class (\d ...) into r/negated, or a single code point.
    bool escape(Ranges& r, bool& negated, uint32_t& cp) {
        const char c = p_[pos_++];
        negated = false;
        switch (c) {
            case 'd':
            case 'D':
                r = {{'0', '9'}};
                negated = c == 'D';
                return true;
            case 'w':
            case 'W':
                r = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
                negated = c == 'W';
                return true;
            case 's':
            case 'S':
                r = {{'\t', '\r'}, {' ', ' '}};
                negated = c == 'S';
                return true;
            case 'n':
                cp = '\n';
                return false;
            case 't':
                cp = '\t';
                return false;
            case 'r':
                cp = '\r';
                return false;
            case 'f':
                cp = '\f';
                return false;
            case 'v':
                cp = '\v';
                return false;
            case 'x':
                cp = hex(2);
                return false;
            case 'u':
                cp = hex(4);
                return false;
            default:
                if ((c >= '0' && c <= '9') || c == 'b' || c == 'B' || c == 'k')
                    fail("back-references and word boundaries are not supported");
                if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
                    fail("unknown escape '\\" + std::string(1, c) + "'");
                cp = static_cast<unsigned char>(c);
                return false;
        }
    }

    // A literal code point as GBNF (json mode writes '"' and '\\' escaped, as they appear inside a JSON string).
    std::string literal(uint32_t cp) const {
        if (json_ && (cp == '"' || cp == '\\')) return gbnf_literal(std::string("\\") + static_cast<char>(cp));
        if (json_ && cp < 0x20) {
            static const char* hex = "0123456789abcdef";
            std::string esc = "\\u00";
            esc += hex[cp >> 4];
            esc += hex[cp & 15];
            return gbnf_literal(esc);
        }
        return gbnf_literal(utf8(cp));
    }

    std::string set(Ranges r, bool negated) const {
        if (json_) {
            if (negated) {
                json_forbidden(r);
            } else {
                // subtract the forbidden code points from each range
                Ranges forbidden;
                json_forbidden(forbidden);
                Ranges kept;
                for (auto [lo, hi] : r) {
                    for (const auto& [flo, fhi] : forbidden) {
                        if (fhi < lo || flo > hi) continue;
                        if (flo > lo) kept.emplace_back(lo, flo - 1);
                        lo = fhi + 1;
                        if (lo > hi) break;
                    }
                    if (lo <= hi) kept.emplace_back(lo, hi);
                }
                if (kept.empty()) fail("a character class that a JSON string cannot hold raw");
                r = std::move(kept);
            }
        }
        return class_text(r, negated);
    }

    std::string alternation() {
        std::vector<std::string> alts = {sequence()};
        while (pos_ < p_.size() && p_[pos_] == '|') {
            ++pos_;
            alts.push_back(sequence());
        }
        if (alts.size() == 1) return alts[0];
        std::string out = "(";
        for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + (alts[i].empty() ? "\"\"" : alts[i]);
        return out + ")";
    }

    std::string sequence() {
        std::string out;
        while (pos_ < p_.size() && p_[pos_] != '|' && p_[pos_] != ')') {
            if (p_[pos_] == '$' && pos_ + 1 == p_.size()) {
                ++pos_;
                break;
            }
            std::string a = atom();
            a += quantifier();
            out += (out.empty() ? "" : " ") + a;
        }
        return out;
    }

    std::string quantifier() {
        if (pos_ >= p_.size()) return "";
        const char c = p_[pos_];
        std::string q;
        if (c == '*' || c == '+' || c == '?') {
            ++pos_;
            q = std::string(1, c);
        } else if (c == '{') {
            const size_t close = p_.find('}', pos_);
            if (close == std::string_view::npos) fail("an unterminated {m,n}");
            const std::string body(p_.substr(pos_ + 1, close - pos_ - 1));
            for (const char ch : body) {
                if (!((ch >= '0' && ch <= '9') || ch == ',' || ch == ' ')) fail("a bad repetition {" + body + "}");
            }
            pos_ = close + 1;
            q = "{" + body + "}";
        } else {
            return "";
        }
        if (pos_ < p_.size() && (p_[pos_] == '?' || p_[pos_] == '+')) ++pos_;  // lazy / possessive: same language
        return q;
    }

    std::string atom() {
        const char c = p_[pos_];
        if (c == '(') {
            ++pos_;
            if (p_.substr(pos_, 2) == "?:") {
                pos_ += 2;
            } else if (pos_ < p_.size() && p_[pos_] == '?') {
                fail("look-around and named groups are not supported");
            }
            std::string inner = alternation();
            if (pos_ >= p_.size() || p_[pos_] != ')') fail("expected ')'");
            ++pos_;
            return "(" + (inner.empty() ? std::string("\"\"") : inner) + ")";
        }
        if (c == '[') return char_class();
        if (c == '.') {
            ++pos_;
            Ranges r = {{'\n', '\n'}};
            return set(r, true);
        }
        if (c == '\\') {
            ++pos_;
            if (pos_ >= p_.size()) fail("a trailing '\\'");
            Ranges r;
            bool neg = false;
            uint32_t cp = 0;
            if (escape(r, neg, cp)) return set(r, neg);
            return literal(cp);
        }
        if (c == '*' || c == '+' || c == '?' || c == '{') fail("a quantifier without an item");
        if (c == '^' || c == '$') fail("anchors are supported only at the ends");
        return literal(next_cp());
    }

    std::string char_class() {
        ++pos_;
        bool negated = false;
        if (pos_ < p_.size() && p_[pos_] == '^') {
            negated = true;
            ++pos_;
        }
        Ranges r;
        bool first = true;
        while (pos_ < p_.size() && (p_[pos_] != ']' || first)) {
            first = false;
            uint32_t lo = 0;
            if (p_[pos_] == '\\') {
                ++pos_;
                if (pos_ >= p_.size()) fail("a trailing '\\'");
                Ranges sub;
                bool neg = false;
                if (escape(sub, neg, lo)) {
                    if (neg) fail("a negated class escape inside [...]");
                    r.insert(r.end(), sub.begin(), sub.end());
                    continue;
                }
            } else {
                lo = next_cp();
            }
            uint32_t hi = lo;
            if (pos_ + 1 < p_.size() && p_[pos_] == '-' && p_[pos_ + 1] != ']') {
                ++pos_;
                if (p_[pos_] == '\\') {
                    ++pos_;
                    Ranges sub;
                    bool neg = false;
                    if (escape(sub, neg, hi)) fail("a class escape as a range end");
                } else {
                    hi = next_cp();
                }
                if (hi < lo) fail("a range whose end is before its start");
            }
            r.emplace_back(lo, hi);
        }
        if (pos_ >= p_.size()) fail("an unterminated [...]");
        ++pos_;
        return set(r, negated);
    }
};

}  // namespace

std::string regex_to_gbnf(std::string_view pattern, bool json_string) {
    std::string e = RegexParser(pattern, json_string).run();
    return e.empty() ? "\"\"" : e;
}

std::string regex_grammar(std::string_view pattern) {
    return "root ::= " + regex_to_gbnf(pattern) + "\n";
}

}  // namespace basalt::grammar
