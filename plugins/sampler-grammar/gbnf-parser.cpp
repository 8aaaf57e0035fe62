// GBNF text -> Grammar (grammar.hpp): a recursive-descent parser of llama.cpp's dialect, then the checks that make
// a grammar usable by the matcher (every rule defined, no left recursion, something to match).
#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "grammar.hpp"

namespace basalt::grammar {

bool CharSet::matches(uint32_t cp) const {
    bool in = false;
    for (const auto& [lo, hi] : ranges) {
        if (cp < lo) break;
        if (cp <= hi) {
            in = true;
            break;
        }
    }
    return in != negated;
}

bool CharSet::matches_any(uint32_t lo, uint32_t hi) const {
    if (!negated) {
        for (const auto& [a, b] : ranges) {
            if (a <= hi && lo <= b) return true;
        }
        return false;
    }
    // Complement: some point of [lo, hi] escapes the (merged, sorted) ranges.
    uint32_t next = lo;
    for (const auto& [a, b] : ranges) {
        if (b < next) continue;
        if (a > next) return true;
        if (b >= hi) return false;
        next = b + 1;
    }
    return next <= hi;
}

bool CharSet::matches_all(uint32_t lo, uint32_t hi) const {
    CharSet complement = *this;
    complement.negated = !negated;
    return !complement.matches_any(lo, hi);
}

void CharSet::normalise() {
    std::sort(ranges.begin(), ranges.end());
    std::vector<std::pair<uint32_t, uint32_t>> merged;
    for (const auto& r : ranges) {
        if (!merged.empty() && r.first <= merged.back().second + 1) {
            merged.back().second = std::max(merged.back().second, r.second);
        } else {
            merged.push_back(r);
        }
    }
    ranges = std::move(merged);
}

uint32_t Grammar::find(std::string_view name) const {
    for (size_t i = 0; i < rule_names.size(); ++i) {
        if (rule_names[i] == name) return static_cast<uint32_t>(i);
    }
    return UINT32_MAX;
}

namespace {

// A rule while parsing: alternatives of element sequences.
using Seq = std::vector<Elem>;

class Parser {
  public:
    explicit Parser(std::string_view text) : s_(text) {}

    Grammar run() {
        space(true);
        while (pos_ < s_.size()) {
            const size_t at = pos_;
            const std::string name = parse_name();
            const uint32_t id = rule_id(name);
            if (defined_[id]) fail_at(at, "rule '" + name + "' is defined twice");
            space(false);
            if (s_.substr(pos_, 3) != "::=") fail("expected '::=' after rule name '" + name + "'");
            pos_ += 3;
            space(true);
            bodies_[id] = parse_alternates(name, false);
            defined_[id] = true;
            if (pos_ < s_.size() && s_[pos_] != '\n' && s_[pos_] != '\r') fail("expected a new line after the rule");
            space(true);
        }
        return finish();
    }

  private:
    std::string_view s_;
    size_t pos_ = 0;
    std::vector<std::string> names_;
    std::unordered_map<std::string, uint32_t> ids_;
    std::vector<std::vector<Seq>> bodies_;
    std::vector<bool> defined_;
    std::vector<size_t> first_use_;  // where each rule was first referenced (for "undefined rule" messages)
    std::vector<CharSet> sets_;
    std::map<std::pair<bool, std::vector<std::pair<uint32_t, uint32_t>>>, uint32_t> set_ids_;

    [[noreturn]] void fail_at(size_t at, const std::string& what) const {
        size_t line = 1, col = 1;
        for (size_t i = 0; i < at && i < s_.size(); ++i) {
            if (s_[i] == '\n') {
                ++line;
                col = 1;
            } else {
                ++col;
            }
        }
        throw GrammarError("grammar: " + what + " at " + std::to_string(line) + ":" + std::to_string(col));
    }
    [[noreturn]] void fail(const std::string& what) const { fail_at(pos_, what); }

    uint32_t rule_id(const std::string& name) {
        auto it = ids_.find(name);
        if (it != ids_.end()) return it->second;
        const auto id = static_cast<uint32_t>(names_.size());
        names_.push_back(name);
        ids_.emplace(name, id);
        bodies_.emplace_back();
        defined_.push_back(false);
        first_use_.push_back(pos_);
        return id;
    }

    uint32_t helper_rule(const std::string& base, std::vector<Seq> alts) {
        std::string name = base + "-" + std::to_string(names_.size());
        const uint32_t id = rule_id(name);
        bodies_[id] = std::move(alts);
        defined_[id] = true;
        return id;
    }

    uint32_t set_id(CharSet cs) {
        cs.normalise();
        auto key = std::make_pair(cs.negated, cs.ranges);
        auto it = set_ids_.find(key);
        if (it != set_ids_.end()) return it->second;
        const auto id = static_cast<uint32_t>(sets_.size());
        sets_.push_back(std::move(cs));
        set_ids_.emplace(std::move(key), id);
        return id;
    }

    Elem chars(CharSet cs) { return Elem{ElemType::Chars, set_id(std::move(cs))}; }

    static bool name_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
    }

    // Skips blanks and # comments; new lines only when newline_ok.
    void space(bool newline_ok) {
        while (pos_ < s_.size()) {
            const char c = s_[pos_];
            if (c == ' ' || c == '\t') {
                ++pos_;
            } else if (c == '#') {
                while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
            } else if ((c == '\n' || c == '\r') && newline_ok) {
                ++pos_;
            } else {
                break;
            }
        }
    }

    std::string parse_name() {
        const size_t start = pos_;
        while (pos_ < s_.size() && name_char(s_[pos_])) ++pos_;
        if (pos_ == start) fail("expected a rule name");
        return std::string(s_.substr(start, pos_ - start));
    }

    // One UTF-8 encoded code point (invalid bytes are taken as themselves).
    uint32_t utf8() {
        const auto b0 = static_cast<unsigned char>(s_[pos_]);
        int n = b0 < 0x80 ? 0 : b0 >= 0xF0 ? 3 : b0 >= 0xE0 ? 2 : b0 >= 0xC0 ? 1 : 0;
        uint32_t cp = n == 0 ? b0 : n == 1 ? (b0 & 0x1F) : n == 2 ? (b0 & 0x0F) : (b0 & 0x07);
        ++pos_;
        for (; n > 0; --n) {
            if (pos_ >= s_.size() || (static_cast<unsigned char>(s_[pos_]) & 0xC0) != 0x80)
                fail("invalid UTF-8 in the grammar");
            cp = (cp << 6) | (static_cast<unsigned char>(s_[pos_]) & 0x3F);
            ++pos_;
        }
        return cp;
    }

    uint32_t hex_digits(int n) {
        uint32_t v = 0;
        for (int i = 0; i < n; ++i) {
            if (pos_ >= s_.size()) fail("a truncated hex escape");
            const char c = s_[pos_];
            int d = (c >= '0' && c <= '9')   ? c - '0'
                    : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                    : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                             : -1;
            if (d < 0) fail("a bad hex digit '" + std::string(1, c) + "' in an escape");
            v = v * 16 + static_cast<uint32_t>(d);
            ++pos_;
        }
        return v;
    }

    // A character inside a literal or class: an escape or a UTF-8 code point.
    uint32_t parse_char() {
        if (pos_ >= s_.size()) fail("unexpected end of the grammar");
        if (s_[pos_] != '\\') return utf8();
        ++pos_;
        if (pos_ >= s_.size()) fail("unexpected end of the grammar after '\\'");
        const char c = s_[pos_++];
        switch (c) {
            case 'n':
                return '\n';
            case 'r':
                return '\r';
            case 't':
                return '\t';
            case 'x':
                return hex_digits(2);
            case 'u':
                return hex_digits(4);
            case 'U':
                return hex_digits(8);
            case '\\':
            case '"':
            case '[':
            case ']':
            case '-':
            case '^':
            case '/':
                return static_cast<uint32_t>(c);
            default:
                --pos_;
                fail("unknown escape '\\" + std::string(1, c) + "'");
        }
    }

    std::vector<Seq> parse_alternates(const std::string& rule, bool nested) {
        std::vector<Seq> alts;
        alts.push_back(parse_sequence(rule, nested));
        while (pos_ < s_.size() && s_[pos_] == '|') {
            ++pos_;
            space(true);
            alts.push_back(parse_sequence(rule, nested));
        }
        return alts;
    }

    Seq parse_sequence(const std::string& rule, bool nested) {
        Seq seq;
        size_t last = SIZE_MAX;  // where the last item starts in seq (for a repetition after it)
        while (pos_ < s_.size()) {
            const char c = s_[pos_];
            const size_t item_start = seq.size();
            if (c == '"') {
                ++pos_;
                while (pos_ < s_.size() && s_[pos_] != '"') {
                    CharSet cs;
                    const uint32_t cp = parse_char();
                    cs.ranges.emplace_back(cp, cp);
                    seq.push_back(chars(std::move(cs)));
                }
                if (pos_ >= s_.size()) fail("an unterminated string literal");
                ++pos_;
                last = item_start;
            } else if (c == '[') {
                ++pos_;
                CharSet cs;
                if (pos_ < s_.size() && s_[pos_] == '^') {
                    cs.negated = true;
                    ++pos_;
                }
                while (pos_ < s_.size() && s_[pos_] != ']') {
                    const uint32_t lo = parse_char();
                    uint32_t hi = lo;
                    if (pos_ + 1 < s_.size() && s_[pos_] == '-' && s_[pos_ + 1] != ']') {
                        ++pos_;
                        hi = parse_char();
                        if (hi < lo) fail("a character range whose end is before its start");
                    }
                    cs.ranges.emplace_back(lo, hi);
                }
                if (pos_ >= s_.size()) fail("an unterminated character class");
                ++pos_;
                seq.push_back(chars(std::move(cs)));
                last = item_start;
            } else if (c == '.') {
                ++pos_;
                CharSet any;
                any.negated = true;
                seq.push_back(chars(std::move(any)));
                last = item_start;
            } else if (name_char(c)) {
                const std::string name = parse_name();
                seq.push_back(Elem{ElemType::Ref, rule_id(name)});
                last = item_start;
            } else if (c == '(') {
                ++pos_;
                space(true);
                std::vector<Seq> alts = parse_alternates(rule, true);
                if (pos_ >= s_.size() || s_[pos_] != ')') fail("expected ')'");
                ++pos_;
                seq.push_back(Elem{ElemType::Ref, helper_rule(rule, std::move(alts))});
                last = item_start;
            } else if (c == '*' || c == '+' || c == '?' || c == '{') {
                if (last == SIZE_MAX) fail("a repetition '" + std::string(1, c) + "' without an item before it");
                uint32_t min = 0, max = UINT32_MAX;
                ++pos_;
                if (c == '+') {
                    min = 1;
                } else if (c == '?') {
                    max = 1;
                } else if (c == '{') {
                    space(false);
                    min = parse_count();
                    space(false);
                    max = min;
                    if (pos_ < s_.size() && s_[pos_] == ',') {
                        ++pos_;
                        space(false);
                        max = (pos_ < s_.size() && s_[pos_] == '}') ? UINT32_MAX : parse_count();
                        space(false);
                    }
                    if (pos_ >= s_.size() || s_[pos_] != '}') fail("expected '}' closing a repetition");
                    ++pos_;
                    if (max < min) fail("a repetition {m,n} with n < m");
                }
                repeat(rule, seq, last, min, max);
                last = SIZE_MAX;
            } else {
                break;
            }
            space(nested);
        }
        return seq;
    }

    uint32_t parse_count() {
        const size_t start = pos_;
        uint64_t v = 0;
        while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
            v = v * 10 + static_cast<uint64_t>(s_[pos_] - '0');
            if (v > 100000) fail("a repetition count above 100000");
            ++pos_;
        }
        if (pos_ == start) fail("expected a repetition count");
        return static_cast<uint32_t>(v);
    }

    // Replaces seq[last..] (one item) by min copies of it and then up to max - min optional ones.
    void repeat(const std::string& rule, Seq& seq, size_t last, uint32_t min, uint32_t max) {
        Seq item(seq.begin() + static_cast<std::ptrdiff_t>(last), seq.end());
        seq.resize(last);
        if (item.size() > 1) {  // a literal of several characters: one rule, so the repetition applies to all of it
            item = Seq{Elem{ElemType::Ref, helper_rule(rule, {item})}};
        }
        for (uint32_t i = 0; i < min; ++i) seq.insert(seq.end(), item.begin(), item.end());
        if (max == UINT32_MAX) {
            // R ::= item R | ""   (right recursion: the matcher keeps it flat)
            const uint32_t id = helper_rule(rule, {});
            Seq again = item;
            again.push_back(Elem{ElemType::Ref, id});
            bodies_[id] = {again, Seq{}};
            seq.push_back(Elem{ElemType::Ref, id});
        } else if (max > min) {
            // opt_1 ::= item opt_2 | "" ... opt_k ::= item | ""
            uint32_t inner = UINT32_MAX;
            for (uint32_t k = max - min; k > 0; --k) {
                Seq body = item;
                if (inner != UINT32_MAX) body.push_back(Elem{ElemType::Ref, inner});
                inner = helper_rule(rule, {body, Seq{}});
            }
            seq.push_back(Elem{ElemType::Ref, inner});
        }
    }

    Grammar finish() {
        for (size_t i = 0; i < names_.size(); ++i) {
            if (!defined_[i]) fail_at(first_use_[i], "undefined rule '" + names_[i] + "'");
        }
        auto root_it = ids_.find("root");
        if (root_it == ids_.end()) throw GrammarError("grammar: no 'root' rule");
        const size_t n = names_.size();
        // nullable and productive, to a fixed point
        std::vector<bool> nullable(n, false), productive(n, false);
        for (bool changed = true; changed;) {
            changed = false;
            for (size_t r = 0; r < n; ++r) {
                for (const Seq& alt : bodies_[r]) {
                    bool all_null = true, all_prod = true;
                    for (const Elem& e : alt) {
                        if (e.type == ElemType::Ref) {
                            all_null = all_null && nullable[e.value];
                            all_prod = all_prod && productive[e.value];
                        } else {
                            all_null = false;
                            const CharSet& cs = sets_[e.value];
                            if (!cs.negated && cs.ranges.empty()) all_prod = false;
                        }
                    }
                    if (all_null && !nullable[r]) nullable[r] = changed = true;
                    if (all_prod && !productive[r]) productive[r] = changed = true;
                }
            }
        }
        if (!productive[root_it->second]) throw GrammarError("grammar: rule 'root' can match nothing");
        // left recursion: a rule reachable from itself through leading nullable positions
        std::vector<std::vector<uint32_t>> lead(n);
        for (size_t r = 0; r < n; ++r) {
            for (const Seq& alt : bodies_[r]) {
                for (const Elem& e : alt) {
                    if (e.type != ElemType::Ref) break;
                    lead[r].push_back(e.value);
                    if (!nullable[e.value]) break;
                }
            }
        }
        std::vector<int> mark(n, 0);  // 0 new, 1 on the path, 2 done
        std::function<void(uint32_t)> visit = [&](uint32_t r) {
            mark[r] = 1;
            for (const uint32_t t : lead[r]) {
                if (mark[t] == 1) throw GrammarError("grammar: rule '" + names_[t] + "' is left-recursive");
                if (mark[t] == 0) visit(t);
            }
            mark[r] = 2;
        };
        for (size_t r = 0; r < n; ++r) {
            if (mark[r] == 0) visit(static_cast<uint32_t>(r));
        }
        Grammar g;
        g.rule_names = names_;
        g.sets = sets_;
        g.root = root_it->second;
        g.rule_alts.resize(n);
        for (size_t r = 0; r < n; ++r) {
            for (const Seq& alt : bodies_[r]) {
                g.rule_alts[r].push_back(static_cast<uint32_t>(g.elems.size()));
                g.elems.insert(g.elems.end(), alt.begin(), alt.end());
                g.elems.push_back(Elem{ElemType::End, 0});
            }
        }
        return g;
    }
};

}  // namespace

Grammar parse_gbnf(std::string_view text) {
    return Parser(text).run();
}

}  // namespace basalt::grammar
