// Tool calls parsed out of a streamed reply (tool-call-parser.hpp).
#include "tool-call-parser.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <iterator>
#include <string_view>

namespace basalt::serve {

namespace {

using json = nlohmann::json;

enum class St { Ok, Partial, Bad };

bool is_space(char c) {
    return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

size_t skip_ws(std::string_view s, size_t p) {
    while (p < s.size() && is_space(s[p])) ++p;
    return p;
}

// Whether s at p starts with marker (Partial: the text ends inside it).
St match(std::string_view s, size_t p, std::string_view marker) {
    const std::string_view rest = s.substr(std::min(p, s.size()));
    if (rest.size() >= marker.size()) return rest.substr(0, marker.size()) == marker ? St::Ok : St::Bad;
    return marker.substr(0, rest.size()) == rest ? St::Partial : St::Bad;
}

// Length of the longest proper suffix of text that is a prefix of marker.
size_t partial_marker(std::string_view text, std::string_view marker) {
    if (marker.empty()) return 0;
    for (size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n)
        if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
    return 0;
}

// A JSON string starting at s[p] == '"'; end: after its closing quote.
St scan_string(std::string_view s, size_t p, size_t& end) {
    for (size_t i = p + 1; i < s.size(); ++i) {
        if (s[i] == '\\') {
            ++i;
        } else if (s[i] == '"') {
            end = i + 1;
            return St::Ok;
        } else if (static_cast<unsigned char>(s[i]) < 0x20) {
            return St::Bad;
        }
    }
    return St::Partial;
}

// One JSON value starting at s[p] (brackets balanced, strings closed; its grammar is checked once it is whole).
St scan_value(std::string_view s, size_t p, size_t& end) {
    if (p >= s.size()) return St::Partial;
    const char c = s[p];
    if (c == '"') return scan_string(s, p, end);
    if (c == '{' || c == '[') {
        std::string stack;
        for (size_t i = p; i < s.size(); ++i) {
            const char d = s[i];
            if (d == '"') {
                size_t e = 0;
                const St st = scan_string(s, i, e);
                if (st != St::Ok) return st;
                i = e - 1;
            } else if (d == '{' || d == '[') {
                stack += d == '{' ? '}' : ']';
            } else if (d == '}' || d == ']') {
                if (stack.empty() || stack.back() != d) return St::Bad;
                stack.pop_back();
                if (stack.empty()) {
                    end = i + 1;
                    return St::Ok;
                }
            }
        }
        return St::Partial;
    }
    if (c == '-' || (c >= '0' && c <= '9') || c == 't' || c == 'f' || c == 'n') {
        size_t i = p;
        while (i < s.size() &&
               (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '-' || s[i] == '+' || s[i] == '.'))
            ++i;
        if (i == s.size()) return St::Partial;
        end = i;
        return St::Ok;
    }
    return St::Bad;
}

// The decoded text of a JSON string token.
bool decode_string(std::string_view token, std::string& out) {
    const json j = json::parse(token, nullptr, false);
    if (j.is_discarded() || !j.is_string()) return false;
    out = j.get<std::string>();
    return true;
}

// A word of a harmony header (a channel, a recipient, a content type) at s[p]; end: after it.
St read_word(std::string_view s, size_t p, std::string& word, size_t& end) {
    size_t i = p;
    while (i < s.size() &&
           (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_' || s[i] == '.' || s[i] == '-' || s[i] == ':'))
        ++i;
    if (i == s.size()) return St::Partial;
    if (i == p) return St::Bad;
    word = std::string(s.substr(p, i - p));
    end = i;
    return St::Ok;
}

// Text up to the tag `close` from s[p] (a name or key: one line, at most 256 bytes); end: after the tag.
St read_until(std::string_view s, size_t p, std::string_view close, std::string& text, size_t& end) {
    const size_t k = s.find(close, p);
    const std::string_view t = s.substr(p, k == std::string_view::npos ? std::string_view::npos : k - p);
    if (t.size() > 256 || t.find('\n') != std::string_view::npos) return St::Bad;
    if (k == std::string_view::npos) return St::Partial;
    text = std::string(t);
    end = k + close.size();
    return St::Ok;
}

constexpr std::string_view kHarmonyOpeners[] = {"<|start|>", "<|channel|>", "to=functions."};
constexpr std::string_view kHarmonyMarkers[] = {"<|message|>", "<|channel|>", "<|constrain|>"};

}  // namespace

struct ToolCallParser::Parsed {
    std::string name;       // empty until read
    std::string arguments;  // the arguments' JSON text so far
    bool complete = false;
};

namespace {

struct Region {
    St state = St::Partial;
    size_t at = 0;  // Ok: bytes the region took; Bad: where the bad call starts
};

}  // namespace

ToolCallParser::ToolCallParser(const ToolConvention& convention, std::set<std::string> tools, std::string id_prefix,
                               bool opened, StringParams string_params)
    : c_(convention),
      tools_(std::move(tools)),
      id_prefix_(std::move(id_prefix)),
      string_params_(std::move(string_params)) {
    if (opened) {
        // The grammar's reply starts after the control-token marker: read it as if the marker were there.
        held_ = std::string(*c_.section_begin != '\0' ? c_.section_begin : c_.call_begin);
        in_region_ = true;
    }
}

// A JSON call object {"name": ..., "<args>": {...}, ...} at s[p]; end: after it.
static St parse_call_object(std::string_view s, size_t p, const char* args_key, std::string& name,
                            std::string& arguments, bool& has_args, size_t& end) {
    if (p >= s.size()) return St::Partial;
    if (s[p] != '{') return St::Bad;
    p = skip_ws(s, p + 1);
    for (bool first = true;; first = false) {
        if (p >= s.size()) return St::Partial;
        if (s[p] == '}' && first) break;
        if (s[p] != '"') return St::Bad;
        size_t e = 0;
        St st = scan_string(s, p, e);
        if (st != St::Ok) return st;
        std::string key;
        if (!decode_string(s.substr(p, e - p), key)) return St::Bad;
        p = skip_ws(s, e);
        if (p >= s.size()) return St::Partial;
        if (s[p] != ':') return St::Bad;
        p = skip_ws(s, p + 1);
        if (p >= s.size()) return St::Partial;
        const size_t v = p;
        st = scan_value(s, p, e);
        if (key == "name") {
            if (st != St::Ok) return st;
            if (s[v] != '"' || !decode_string(s.substr(v, e - v), name)) return St::Bad;
        } else if (key == args_key || key == "arguments" || key == "parameters") {
            if (s[v] != '{' && s[v] != '"') return St::Bad;
            if (st == St::Bad) return st;
            has_args = true;
            if (st == St::Partial) {
                if (s[v] == '{') arguments = std::string(s.substr(v));
                return St::Partial;
            }
            if (s[v] == '"') {  // arguments as a JSON string holding the object
                std::string text;
                if (!decode_string(s.substr(v, e - v), text)) return St::Bad;
                const json a = json::parse(text, nullptr, false);
                if (a.is_discarded() || !a.is_object()) return St::Bad;
                arguments = text;
            } else {
                const json a = json::parse(s.substr(v, e - v), nullptr, false);
                if (a.is_discarded() || !a.is_object()) return St::Bad;
                arguments = std::string(s.substr(v, e - v));
            }
        } else if (st != St::Ok) {
            return st;
        }
        p = skip_ws(s, e);
        if (p >= s.size()) return St::Partial;
        if (s[p] == '}') break;
        if (s[p] != ',') return St::Bad;
        p = skip_ws(s, p + 1);
    }
    end = p + 1;
    return name.empty() ? St::Bad : St::Ok;
}

int ToolCallParser::parse_region(bool final, std::vector<Parsed>& calls, size_t& consumed) const {
    const std::string_view s = held_;
    Region r;
    auto done = [&](St st, size_t at) {
        r.state = st;
        r.at = at;
    };
    // The text ends inside a call or marker at q: wait for more; when the reply ended, the calls so far count
    // (the rest is dropped) or, with none, the region is no call.
    auto cut = [&](size_t q) {
        if (!final)
            done(St::Partial, q);
        else if (calls.empty())
            done(St::Bad, q);
        else
            done(St::Ok, s.size());
    };
    // The call's name must be a declared tool; a cut call counts when the reply ended.
    auto allowed = [&](const Parsed& p) { return tools_.count(p.name) != 0; };
    size_t p = 0;
    const std::string_view section_begin = c_.section_begin, section_end = c_.section_end, begin = c_.call_begin,
                           end = c_.call_end, name_end = c_.name_end, alt = c_.alt_begin;
    const bool in_section = !section_begin.empty();
    if (in_section) {
        const St st = match(s, 0, section_begin);
        if (st != St::Ok) {
            done(st, 0);
            goto out;
        }
        p = section_begin.size();
    }
    for (;;) {
        const size_t q = skip_ws(s, p);
        if (q >= s.size()) {  // more calls may follow until the reply ends
            cut(q);
            break;
        }
        if (in_section) {
            const St st = match(s, q, section_end);
            if (st == St::Ok) {
                done(St::Ok, q + section_end.size());
                break;
            }
            if (st == St::Partial) {
                cut(q);
                break;
            }
        }
        if (c_.shape == ToolShape::Harmony || is_xml_shape(c_.shape)) {
            const auto os = static_cast<St>(opens_tagged_call(q));
            if (os == St::Partial) {
                cut(q);
                break;
            }
            if (os == St::Bad) {  // other text: inside a section it is not a call; after calls the region ends
                done(in_section || calls.empty() ? St::Bad : St::Ok, q);
                break;
            }
            Parsed call;
            size_t e = 0;
            const auto cs = static_cast<St>(parse_tagged_call(q, call, e));
            if (cs == St::Bad || (!call.name.empty() && !allowed(call))) {
                done(St::Bad, q);
                break;
            }
            if (cs == St::Partial) {
                if (!call.name.empty() && !call.arguments.empty()) calls.push_back(std::move(call));
                cut(q);
                break;
            }
            call.complete = true;
            calls.push_back(std::move(call));
            p = e;
            if (!end.empty()) {  // the call's closing marker (tolerated when missing)
                const size_t q2 = skip_ws(s, p);
                const St es = match(s, q2, end);
                if (es == St::Ok) {
                    p = q2 + end.size();
                } else if (es == St::Partial && q2 < s.size()) {
                    cut(p);
                    break;
                }
            }
            continue;
        }
        // The call's opening: call_begin, alt_begin, or a bare '{' (Llama 3).
        size_t after = q;
        St st = St::Bad;
        if (!begin.empty()) {
            st = match(s, q, begin);
            if (st == St::Ok) after = q + begin.size();
        }
        if (st != St::Ok && !alt.empty()) {
            const St a = match(s, q, alt);
            if (a == St::Ok) after = q + alt.size();
            if (a != St::Bad) st = a;
        }
        if (st != St::Ok && begin.empty() && s[q] == '{' && c_.shape == ToolShape::JsonObject) st = St::Ok;
        if (st == St::Partial) {
            cut(q);
            break;
        }
        if (st == St::Bad) {
            if (begin.empty() && s[q] == ';' && !calls.empty()) {  // Llama 3's parallel calls: a;b
                p = q + 1;
                continue;
            }
            // Other text: inside a section it is not a call; after calls the region ends here.
            done(in_section || calls.empty() ? St::Bad : St::Ok, q);
            break;
        }
        size_t a = skip_ws(s, after);
        if (c_.shape == ToolShape::JsonList) {
            if (a >= s.size()) {
                cut(q);
                break;
            }
            if (s[a] != '[') {
                done(St::Bad, q);
                break;
            }
            a = skip_ws(s, a + 1);
            St ls = St::Ok;
            size_t item = a;
            for (;;) {
                item = a;
                Parsed call;
                bool has_args = false;
                size_t e = 0;
                ls = parse_call_object(s, a, c_.args_key, call.name, call.arguments, has_args, e);
                if (ls == St::Bad || (!call.name.empty() && !allowed(call))) {
                    ls = St::Bad;
                    break;
                }
                if (ls == St::Partial) {
                    if (!call.name.empty() && !call.arguments.empty()) calls.push_back(std::move(call));
                    break;
                }
                if (!has_args) call.arguments = "{}";
                call.complete = true;
                calls.push_back(std::move(call));
                a = skip_ws(s, e);
                if (a >= s.size()) {
                    ls = St::Partial;
                    break;
                }
                if (s[a] == ']') {
                    ++a;
                    break;
                }
                if (s[a] != ',') {
                    ls = St::Bad;
                    break;
                }
                a = skip_ws(s, a + 1);
            }
            if (ls == St::Partial) {
                cut(q);
                break;
            }
            if (ls == St::Bad) {  // the items before a bad one count; the text from it on is content
                done(St::Bad, calls.empty() ? q : item);
                break;
            }
            p = a;
        } else {
            Parsed call;
            size_t e = 0;
            St cs = St::Bad;
            if (c_.shape == ToolShape::JsonObject) {
                bool has_args = false;
                cs = parse_call_object(s, a, c_.args_key, call.name, call.arguments, has_args, e);
                if (cs == St::Ok && !has_args) call.arguments = "{}";
            } else {  // NameArgs: NAME name_end {...}
                const size_t k = s.find(name_end, a);
                if (k == std::string_view::npos) {
                    // A name is one line; whitespace and the start of name_end may follow it.
                    const std::string_view rest = s.substr(a);
                    const size_t nl = rest.find('\n');
                    const std::string_view tail = nl == std::string_view::npos ? "" : rest.substr(skip_ws(rest, nl));
                    const bool may_be_name = rest.size() < 256 && name_end.substr(0, tail.size()) == tail;
                    cs = may_be_name ? St::Partial : St::Bad;
                } else {
                    std::string name(s.substr(a, k - a));
                    while (!name.empty() && is_space(name.back())) name.pop_back();
                    const std::string prefix = c_.name_prefix;
                    if (!prefix.empty() && name.rfind(prefix, 0) == 0) name.erase(0, prefix.size());
                    const size_t colon = name.rfind(':');
                    if (colon != std::string::npos && colon + 1 < name.size() &&
                        name.find_first_not_of("0123456789", colon + 1) == std::string::npos)
                        name.erase(colon);
                    call.name = name;
                    const size_t v = skip_ws(s, k + name_end.size());
                    cs = v >= s.size() ? St::Partial : s[v] == '{' ? scan_value(s, v, e) : St::Bad;
                    if (cs == St::Partial && v < s.size()) call.arguments = std::string(s.substr(v));
                    if (cs == St::Ok) {
                        const json args = json::parse(s.substr(v, e - v), nullptr, false);
                        if (args.is_discarded() || !args.is_object()) cs = St::Bad;
                        call.arguments = std::string(s.substr(v, e - v));
                    }
                }
            }
            if (cs == St::Bad || (!call.name.empty() && !allowed(call))) {
                done(St::Bad, q);
                break;
            }
            if (cs == St::Partial) {
                if (!call.name.empty() && !call.arguments.empty()) calls.push_back(std::move(call));
                cut(q);
                break;
            }
            call.complete = true;
            calls.push_back(std::move(call));
            p = e;
        }
        // The call's closing marker (tolerated when missing).
        if (!end.empty()) {
            const size_t q2 = skip_ws(s, p);
            const St es = match(s, q2, end);
            if (es == St::Ok) {
                p = q2 + end.size();
            } else if (es == St::Partial && q2 < s.size()) {
                cut(p);
                break;
            }
        }
    }
out:
    consumed = r.at;
    return static_cast<int>(r.state);
}

std::vector<std::string> ToolCallParser::openers() const {
    if (c_.shape == ToolShape::Harmony) return {std::begin(kHarmonyOpeners), std::end(kHarmonyOpeners)};
    return {*c_.section_begin != '\0' ? c_.section_begin : c_.call_begin, c_.alt_begin};
}

int ToolCallParser::opens_tagged_call(size_t q) const {
    const std::string_view s = held_;
    if (c_.shape != ToolShape::Harmony) return static_cast<int>(match(s, q, c_.call_begin));
    St st = St::Bad;
    for (const std::string_view m : kHarmonyOpeners) {
        const St o = match(s, q, m);
        if (o == St::Ok) return static_cast<int>(o);
        if (o == St::Partial) st = o;
    }
    return static_cast<int>(st);
}

std::string ToolCallParser::typed_value(const std::string& tool, const std::string& key, const std::string& raw) const {
    const auto it = string_params_.find(tool);
    json v = raw;
    if (it == string_params_.end() || it->second.count(key) == 0) {
        const size_t a = skip_ws(raw, 0);
        size_t b = raw.size();
        while (b > a && is_space(raw[b - 1])) --b;
        json parsed = json::parse(std::string_view(raw).substr(a, b - a), nullptr, false);
        if (!parsed.is_discarded()) v = std::move(parsed);
    }
    return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

int ToolCallParser::parse_tagged_call(size_t q, Parsed& call, size_t& end) const {
    const std::string_view s = held_;
    size_t p = q;
    if (c_.shape == ToolShape::Harmony) {
        St st = match(s, p, "<|start|>");
        if (st == St::Partial) return static_cast<int>(st);
        if (st == St::Ok) {
            st = match(s, p + 9, "assistant");
            if (st != St::Ok) return static_cast<int>(st);
            p += 18;
        }
        // The header: the recipient, the channel and the content type in either order, up to <|message|>.
        std::string channel, recipient, word;
        for (;;) {
            if (p - q > 512) return static_cast<int>(St::Bad);
            if (p >= s.size()) return static_cast<int>(St::Partial);
            if (is_space(s[p])) {
                ++p;
                continue;
            }
            if (match(s, p, "<|message|>") == St::Ok) {
                p += 11;
                break;
            }
            std::string* into = &word;  // a bare word is the content type
            size_t after = p;
            if (match(s, p, "<|channel|>") == St::Ok) {
                into = &channel;
                after = p + 11;
            } else if (match(s, p, "<|constrain|>") == St::Ok) {
                after = p + 13;
            } else if (match(s, p, "to=") == St::Ok) {
                into = &recipient;
                after = p + 3;
            } else if (s[p] == '<') {
                bool partial = false;
                for (const std::string_view m : kHarmonyMarkers) partial = partial || match(s, p, m) == St::Partial;
                return static_cast<int>(partial ? St::Partial : St::Bad);
            }
            const St ws = read_word(s, after, *into, p);
            if (ws != St::Ok) return static_cast<int>(ws);
        }
        static constexpr std::string_view kFunctions = "functions.";
        if ((channel != "commentary" && channel != "analysis") || recipient.rfind(kFunctions, 0) != 0 ||
            recipient.size() == kFunctions.size())
            return static_cast<int>(St::Bad);
        call.name = recipient.substr(kFunctions.size());
        const size_t v = skip_ws(s, p);
        if (v >= s.size()) return static_cast<int>(St::Partial);
        if (s[v] != '{') return static_cast<int>(St::Bad);
        size_t e = 0;
        const St cs = scan_value(s, v, e);
        if (cs == St::Partial) call.arguments = std::string(s.substr(v));
        if (cs != St::Ok) return static_cast<int>(cs);
        const json args = json::parse(s.substr(v, e - v), nullptr, false);
        if (args.is_discarded() || !args.is_object()) return static_cast<int>(St::Bad);
        call.arguments = std::string(s.substr(v, e - v));
        end = e;
        return static_cast<int>(St::Ok);
    }
    // XML arguments: the name, then each key and value, up to the function's (or the call's) closing tag.
    const XmlTags& t = xml_tags(c_.shape);
    p = skip_ws(s, p + std::string_view(c_.call_begin).size());
    St st = match(s, p, t.name_open);
    if (st != St::Ok) return static_cast<int>(st);
    p += std::string_view(t.name_open).size();
    std::string name;
    if (*t.name_close != '\0') {
        st = read_until(s, p, t.name_close, name, p);
        if (st != St::Ok) return static_cast<int>(st);
    } else {
        size_t i = p;
        while (i < s.size() && !is_space(s[i]) && s[i] != '<') ++i;
        if (i - p > 256) return static_cast<int>(St::Bad);
        if (i == s.size()) return static_cast<int>(St::Partial);
        name = std::string(s.substr(p, i - p));
        p = i;
    }
    if (name.empty()) return static_cast<int>(St::Bad);
    call.name = name;
    std::string args = "{";
    const std::string_view close = *t.function_close != '\0' ? t.function_close : c_.call_end;
    const std::string gap = c_.gap;
    for (bool first = true;; first = false) {
        call.arguments = first ? "" : args;  // reported once a parameter begins (or the call closes)
        p = skip_ws(s, p);
        if (p >= s.size()) return static_cast<int>(St::Partial);
        st = match(s, p, close);
        if (st == St::Partial) return static_cast<int>(st);
        if (st == St::Ok) {  // a closing call_end is left for the region's loop
            call.arguments = args + "}";
            end = *t.function_close != '\0' ? p + close.size() : p;
            return static_cast<int>(St::Ok);
        }
        st = match(s, p, t.key_open);
        if (st != St::Ok) return static_cast<int>(st);
        call.arguments = args;  // a parameter has begun: the call is reported
        std::string key, raw;
        st = read_until(s, p + std::string_view(t.key_open).size(), t.key_close, key, p);
        if (st != St::Ok) return static_cast<int>(st);
        if (*t.value_open != '\0') {
            p = skip_ws(s, p);
            st = match(s, p, t.value_open);
            if (st != St::Ok) return static_cast<int>(st);
            p += std::string_view(t.value_open).size();
        }
        const size_t k = s.find(t.value_close, p);
        if (k == std::string_view::npos) return static_cast<int>(St::Partial);
        raw = std::string(s.substr(p, k - p));
        p = k + std::string_view(t.value_close).size();
        if (!gap.empty() && raw.rfind(gap, 0) == 0) raw.erase(0, gap.size());
        if (!gap.empty() && raw.size() >= gap.size() && raw.compare(raw.size() - gap.size(), gap.size(), gap) == 0)
            raw.erase(raw.size() - gap.size());
        args += (first ? "" : ", ") + json(key).dump(-1, ' ', false, json::error_handler_t::replace) + ": " +
                typed_value(name, key, raw);
    }
}

void ToolCallParser::report(const std::vector<Parsed>& parsed, std::vector<ToolCallDelta>& deltas) {
    for (size_t i = 0; i < parsed.size(); ++i) {
        const Parsed& p = parsed[i];
        const size_t index = region_first_ + i;
        if (p.name.empty()) continue;
        if (index >= calls_.size()) {
            ToolCall call{id_prefix_ + std::to_string(index), p.name, ""};
            deltas.push_back(ToolCallDelta{index, call.id, call.name, ""});
            calls_.push_back(std::move(call));
            args_sent_.push_back(0);
        }
        if (p.arguments.size() > args_sent_[index] &&
            p.arguments.compare(0, args_sent_[index], calls_[index].arguments) == 0) {
            const std::string piece = p.arguments.substr(args_sent_[index]);
            calls_[index].arguments += piece;
            args_sent_[index] = p.arguments.size();
            if (!deltas.empty() && deltas.back().index == index)
                deltas.back().arguments += piece;
            else
                deltas.push_back(ToolCallDelta{index, "", "", piece});
        }
    }
}

void ToolCallParser::step(bool final, std::string& content, std::vector<ToolCallDelta>& deltas) {
    const std::string open = *c_.section_begin != '\0' ? c_.section_begin : c_.call_begin;
    const std::vector<std::string> opens = openers();
    for (;;) {
        if (!in_region_) {
            size_t at = std::string::npos;
            for (const std::string& m : opens)
                if (!m.empty()) at = std::min(at, held_.find(m));
            const size_t first = held_.find_first_not_of(" \n\t\r");
            const bool bare = open.empty() && c_.shape == ToolShape::JsonObject;
            if (bare && at_start_ && first != std::string::npos && held_[first] == '{') at = std::min(at, first);
            if (at != std::string::npos) {
                content.append(held_, 0, at);
                if (held_.find_first_not_of(" \n\t\r") < at) at_start_ = false;
                held_.erase(0, at);
                in_region_ = true;
                region_first_ = calls_.size();
                continue;
            }
            size_t keep = 0;
            if (!final) {
                for (const std::string& m : opens) keep = std::max(keep, partial_marker(held_, m));
                if (bare && at_start_ && first == std::string::npos) keep = held_.size();  // undecided whitespace
            }
            const size_t n = held_.size() - keep;
            if (held_.find_first_not_of(" \n\t\r") < n) at_start_ = false;
            content.append(held_, 0, n);
            held_.erase(0, n);
            return;
        }
        std::vector<Parsed> parsed;
        size_t consumed = 0;
        const auto st = static_cast<St>(parse_region(final, parsed, consumed));
        report(parsed, deltas);
        if (st == St::Partial) return;
        if (st == St::Ok) {
            held_.erase(0, consumed);
            in_region_ = false;
            at_start_ = false;
            // Whitespace after the calls is no content.
            const size_t next = held_.find_first_not_of(" \n\t\r");
            held_.erase(0, next == std::string::npos ? held_.size() : next);
            if (held_.empty()) return;
            continue;
        }
        // Not a call: the text stays content (one byte now, so its marker does not open a region again). A call
        // already reported keeps what it had; its text is not repeated as content.
        in_region_ = false;
        const size_t bad_index = region_first_ + parsed.size();
        if (bad_index < calls_.size()) {
            held_.clear();
            return;
        }
        if (!parsed.empty()) held_.erase(0, consumed);  // the calls before the bad one were reported
        content += held_.substr(0, 1);
        held_.erase(0, 1);
        at_start_ = false;
    }
}

void ToolCallParser::feed(const std::string& text, std::string& content, std::vector<ToolCallDelta>& deltas) {
    held_ += text;
    step(false, content, deltas);
}

void ToolCallParser::finish(std::string& content, std::vector<ToolCallDelta>& deltas) {
    step(true, content, deltas);
    content += held_;
    held_.clear();
}

}  // namespace basalt::serve
