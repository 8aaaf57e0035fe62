// Attribute and item access, iteration, and the methods of strings, lists and dicts that templates call (the
// non-mutating ones: the sandbox refuses append/pop/update as Jinja's ImmutableSandboxedEnvironment does).
#include <algorithm>
#include <cctype>

#include "interpreter.hpp"

namespace basalt::tmpl {
namespace {

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// Python's str.strip family on bytes: strips whitespace, or the characters of chars.
Value strip(const Value& s, const Value* chars, bool left, bool right) {
    const std::string& t = s.text();
    const auto drop = [&](char c) {
        if (chars == nullptr || chars->is_none()) return is_space(c);
        return chars->text().find(c) != std::string::npos;
    };
    size_t b = 0, e = t.size();
    if (left)
        while (b < e && drop(t[b])) ++b;
    if (right)
        while (e > b && drop(t[e - 1])) --e;
    return Value::of(s.str->sub(b, e - b));
}

List split(const Value& s, const Value* sep, int64_t maxsplit, bool from_right) {
    const Str& str = *s.str;
    const std::string& t = str.text;
    List out;
    if (sep == nullptr || sep->is_none()) {
        // runs of whitespace separate; leading/trailing whitespace gives no empty strings
        std::vector<std::pair<size_t, size_t>> words;
        size_t i = 0;
        while (i < t.size()) {
            while (i < t.size() && is_space(t[i])) ++i;
            if (i >= t.size()) break;
            size_t j = i;
            while (j < t.size() && !is_space(t[j])) ++j;
            words.emplace_back(i, j);
            i = j;
        }
        if (maxsplit >= 0 && static_cast<int64_t>(words.size()) > maxsplit + 1) {
            if (!from_right) {
                size_t keep = static_cast<size_t>(maxsplit);
                size_t rest = words[keep].first;
                size_t end = t.size();
                while (end > rest && is_space(t[end - 1])) --end;
                words.resize(keep);
                words.emplace_back(rest, end);
            } else {
                const size_t first_kept = words.size() - static_cast<size_t>(maxsplit);
                size_t begin = 0;
                while (begin < t.size() && is_space(t[begin])) ++begin;
                std::vector<std::pair<size_t, size_t>> w{{begin, words[first_kept - 1].second}};
                w.insert(w.end(), words.begin() + static_cast<std::ptrdiff_t>(first_kept), words.end());
                words = std::move(w);
            }
        }
        for (const auto& [b, e] : words) out.push_back(Value::of(str.sub(b, e - b)));
        return out;
    }
    const std::string& d = sep->text();
    if (d.empty()) throw EvalError("empty separator");
    std::vector<std::pair<size_t, size_t>> parts;
    if (!from_right) {
        size_t start = 0;
        int64_t n = 0;
        while (maxsplit < 0 || n < maxsplit) {
            const size_t k = t.find(d, start);
            if (k == std::string::npos) break;
            parts.emplace_back(start, k);
            start = k + d.size();
            ++n;
        }
        parts.emplace_back(start, t.size());
    } else {
        size_t end = t.size();
        int64_t n = 0;
        std::vector<std::pair<size_t, size_t>> rev;
        while (maxsplit < 0 || n < maxsplit) {
            if (end < d.size()) break;
            const size_t k = t.rfind(d, end - d.size());
            if (k == std::string::npos) break;
            rev.emplace_back(k + d.size(), end);
            end = k;
            ++n;
        }
        rev.emplace_back(0, end);
        parts.assign(rev.rbegin(), rev.rend());
    }
    for (const auto& [b, e] : parts) out.push_back(Value::of(str.sub(b, e - b)));
    return out;
}

std::string ascii_case(std::string s, int (*f)(int)) {
    for (char& c : s) c = static_cast<char>(f(static_cast<unsigned char>(c)));
    return s;
}

std::string title_case(const std::string& s) {
    std::string out = s;
    bool prev_alpha = false;
    for (char& c : out) {
        const bool alpha = std::isalpha(static_cast<unsigned char>(c)) != 0;
        c = static_cast<char>(prev_alpha ? std::tolower(static_cast<unsigned char>(c))
                                         : std::toupper(static_cast<unsigned char>(c)));
        prev_alpha = alpha;
    }
    return out;
}

const Value& arg(const Args& a, size_t i, const char* name, const char* method) {
    const Value* v = a.get(i, name);
    if (v == nullptr) throw EvalError(std::string(method) + "() missing argument '" + name + "'");
    return *v;
}

bool affix(const Value& s, const Value& what, bool prefix) {
    const std::string& t = s.text();
    const auto one = [&](const Value& x) {
        if (!x.is_string()) throw EvalError(std::string(prefix ? "startswith" : "endswith") + " first arg must be str");
        const std::string& p = x.text();
        if (p.size() > t.size()) return false;
        return prefix ? t.compare(0, p.size(), p) == 0 : t.compare(t.size() - p.size(), p.size(), p) == 0;
    };
    if (what.is_list()) {
        for (const auto& x : *what.list)
            if (one(x)) return true;
        return false;
    }
    return one(what);
}

// str.format with {} / {N} / {name} fields (no format specs beyond an empty one), {{ and }} escapes.
Value str_format(const Value& fmt, const Args& a) {
    const std::string& f = fmt.text();
    Str out;
    size_t auto_index = 0;
    for (size_t i = 0; i < f.size(); ++i) {
        const char c = f[i];
        if (c == '{' && i + 1 < f.size() && f[i + 1] == '{') {
            out.text += '{';
            ++i;
            continue;
        }
        if (c == '}' && i + 1 < f.size() && f[i + 1] == '}') {
            out.text += '}';
            ++i;
            continue;
        }
        if (c != '{') {
            out.text += c;
            continue;
        }
        const size_t close = f.find('}', i);
        if (close == std::string::npos) throw EvalError("Single '{' encountered in format string");
        std::string field = f.substr(i + 1, close - i - 1);
        if (field.find(':') != std::string::npos || field.find('!') != std::string::npos)
            throw EvalError("format specs are not supported in str.format: '{" + field + "}'");
        const Value* v = nullptr;
        if (field.empty()) {
            v = a.get(auto_index++, nullptr);
        } else if (std::all_of(field.begin(), field.end(),
                               [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); })) {
            v = a.get(static_cast<size_t>(std::stoul(field)), nullptr);
        } else {
            for (const auto& [k, x] : a.keywords)
                if (k == field) v = &x;
        }
        if (v == nullptr) throw EvalError("str.format: no argument for '{" + field + "}'");
        out.append(v->to_str());
        i = close;
    }
    if (fmt.str->has_data()) return Value::of(Str::from_data(std::move(out.text)));
    return Value::of(std::move(out));
}

Value string_method(Interpreter& in, const Value& s, const std::string& name, const Args& a) {
    const std::string& t = s.text();
    if (name == "strip") return strip(s, a.get(0, "chars"), true, true);
    if (name == "lstrip") return strip(s, a.get(0, "chars"), true, false);
    if (name == "rstrip") return strip(s, a.get(0, "chars"), false, true);
    if (name == "split" || name == "rsplit") {
        const Value* mx = a.get(1, "maxsplit");
        return Value::of(split(s, a.get(0, "sep"), mx ? mx->integer : -1, name == "rsplit"));
    }
    if (name == "startswith") return Value::of(affix(s, arg(a, 0, "prefix", "startswith"), true));
    if (name == "endswith") return Value::of(affix(s, arg(a, 0, "suffix", "endswith"), false));
    if (name == "upper") return Value::of(Str::derived(ascii_case(t, ::toupper), *s.str));
    if (name == "lower") return Value::of(Str::derived(ascii_case(t, ::tolower), *s.str));
    if (name == "title") return Value::of(Str::derived(title_case(t), *s.str));
    if (name == "capitalize") {
        std::string r = ascii_case(t, ::tolower);
        if (!r.empty()) r[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(r[0])));
        return Value::of(Str::derived(r, *s.str));
    }
    if (name == "replace") {
        const std::string& from = arg(a, 0, "old", "replace").text();
        const Value& to = arg(a, 1, "new", "replace");
        const Value* cnt = a.get(2, "count");
        int64_t left = cnt ? cnt->integer : -1;
        Str out;
        size_t pos = 0;
        if (from.empty()) return s;
        size_t hits = 0;
        for (size_t k = t.find(from); k != std::string::npos && (left < 0 || static_cast<int64_t>(hits) < left);
             k = t.find(from, k + from.size()))
            ++hits;
        if (to.str->text.size() > from.size()) in.check_size(t.size() + hits * (to.str->text.size() - from.size()));
        while (left != 0) {
            const size_t k = t.find(from, pos);
            if (k == std::string::npos) break;
            out.append(s.str->sub(pos, k - pos));
            out.append(*to.str);
            pos = k + from.size();
            if (left > 0) --left;
        }
        out.append(s.str->sub(pos, t.size() - pos));
        return Value::of(std::move(out));
    }
    if (name == "find" || name == "index" || name == "rfind" || name == "rindex") {
        const std::string& sub = arg(a, 0, "sub", name.c_str()).text();
        const size_t k = name[0] == 'r' ? t.rfind(sub) : t.find(sub);
        if (k == std::string::npos) {
            if (name == "index" || name == "rindex") throw EvalError("substring not found");
            return Value::of(int64_t{-1});
        }
        return Value::of(static_cast<int64_t>(k));
    }
    if (name == "count") {
        const std::string& sub = arg(a, 0, "sub", "count").text();
        int64_t n = 0;
        if (sub.empty()) return Value::of(static_cast<int64_t>(t.size() + 1));
        for (size_t k = t.find(sub); k != std::string::npos; k = t.find(sub, k + sub.size())) ++n;
        return Value::of(n);
    }
    if (name == "join") {
        Str out;
        const List items = iterate(arg(a, 0, "iterable", "join"));
        for (size_t i = 0; i < items.size(); ++i) {
            if (i) out.append(*s.str);
            if (!items[i].is_string())
                throw EvalError("sequence item " + std::to_string(i) + ": expected str instance");
            out.append(*items[i].str);
            in.check_size(out.text.size());
        }
        return Value::of(std::move(out));
    }
    if (name == "format") {
        Value v = str_format(s, a);
        in.check_size(v.text().size());
        return v;
    }
    const auto all = [&](int (*f)(int)) {
        return Value::of(!t.empty() && std::all_of(t.begin(), t.end(),
                                                   [&](char c) { return f(static_cast<unsigned char>(c)) != 0; }));
    };
    if (name == "isdigit" || name == "isnumeric" || name == "isdecimal") return all(::isdigit);
    if (name == "isalpha") return all(::isalpha);
    if (name == "isalnum") return all(::isalnum);
    if (name == "isspace") return all(::isspace);
    if (name == "isupper")
        return Value::of(
            std::any_of(t.begin(), t.end(), [](char c) { return std::isupper(static_cast<unsigned char>(c)); }) &&
            !std::any_of(t.begin(), t.end(), [](char c) { return std::islower(static_cast<unsigned char>(c)); }));
    if (name == "islower")
        return Value::of(
            std::any_of(t.begin(), t.end(), [](char c) { return std::islower(static_cast<unsigned char>(c)); }) &&
            !std::any_of(t.begin(), t.end(), [](char c) { return std::isupper(static_cast<unsigned char>(c)); }));
    if (name == "splitlines") {
        List out;
        size_t start = 0;
        for (size_t i = 0; i < t.size(); ++i) {
            if (t[i] == '\n' || t[i] == '\r') {
                out.push_back(Value::of(s.str->sub(start, i - start)));
                if (t[i] == '\r' && i + 1 < t.size() && t[i + 1] == '\n') ++i;
                start = i + 1;
            }
        }
        if (start < t.size()) out.push_back(Value::of(s.str->sub(start, t.size() - start)));
        return Value::of(std::move(out));
    }
    throw EvalError("'str' object has no attribute '" + name + "'");
}

const char* const kStringMethods[] = {"strip",    "lstrip",  "rstrip",    "split",     "rsplit",     "startswith",
                                      "endswith", "upper",   "lower",     "title",     "capitalize", "replace",
                                      "find",     "index",   "rfind",     "rindex",    "count",      "join",
                                      "format",   "isdigit", "isnumeric", "isdecimal", "isalpha",    "isalnum",
                                      "isspace",  "isupper", "islower",   "splitlines"};
const char* const kDictMethods[] = {"items", "keys", "values", "get"};
const char* const kMutators[] = {"append", "extend", "insert",  "pop",        "remove",  "clear",
                                 "update", "sort",   "reverse", "setdefault", "popitem", "copy"};

template <size_t N>
bool in_list(const char* const (&list)[N], const std::string& name) {
    for (const char* m : list)
        if (name == m) return true;
    return false;
}

}  // namespace

List iterate(const Value& v) {
    switch (v.kind) {
        case Value::Kind::Undefined:
            return {};
        case Value::Kind::Array:
            return *v.list;
        case Value::Kind::Map: {
            List keys;
            for (const auto& [k, x] : v.dict->items) keys.push_back(k);
            return keys;
        }
        case Value::Kind::String: {
            List chars;
            const std::string& s = v.text();
            size_t i = 0;
            while (i < s.size()) {
                size_t j = i + 1;
                while (j < s.size() && (static_cast<unsigned char>(s[j]) & 0xC0) == 0x80) ++j;
                chars.push_back(Value::of(v.str->sub(i, j - i)));
                i = j;
            }
            return chars;
        }
        default:
            throw EvalError(std::string("'") + v.type_name() + "' object is not iterable");
    }
}

Value bound_method(const Value& obj, const std::string& name) {
    if (obj.is_string() && in_list(kStringMethods, name))
        return Value::callable(name,
                               [obj, name](Interpreter& in, const Args& a) { return string_method(in, obj, name, a); });
    if (obj.kind == Value::Kind::Map && in_list(kDictMethods, name)) {
        return Value::callable(name, [obj, name](Interpreter&, const Args& a) -> Value {
            if (name == "get") {
                const Value& key = arg(a, 0, "key", "get");
                const Value* v = key.is_string() ? obj.dict->find(key.text()) : nullptr;
                if (v != nullptr) return *v;
                const Value* d = a.get(1, "default");
                return d ? *d : Value::none();
            }
            List out;
            for (const auto& [k, v] : obj.dict->items) {
                if (name == "items")
                    out.push_back(Value::of(List{k, v}, true));
                else if (name == "keys")
                    out.push_back(k);
                else
                    out.push_back(v);
            }
            return Value::of(std::move(out));
        });
    }
    if (obj.is_list() && (name == "index" || name == "count")) {
        return Value::callable(name, [obj, name](Interpreter&, const Args& a) -> Value {
            const Value& x = arg(a, 0, "value", name.c_str());
            int64_t n = 0;
            for (size_t i = 0; i < obj.list->size(); ++i) {
                if (!equal((*obj.list)[i], x)) continue;
                if (name == "index") return Value::of(static_cast<int64_t>(i));
                ++n;
            }
            if (name == "index") throw EvalError("value is not in list");
            return Value::of(n);
        });
    }
    if ((obj.is_list() || obj.kind == Value::Kind::Map) && in_list(kMutators, name)) {
        const std::string type = obj.type_name();
        return Value::callable(name, [type, name](Interpreter&, const Args&) -> Value {
            throw EvalError("access to attribute '" + name + "' of '" + type +
                            "' object is unsafe (templates cannot modify their data)");
        });
    }
    return Value::undefined(name);
}

Value get_attr(Interpreter&, const Value& obj, const std::string& name) {
    if (obj.kind == Value::Kind::Namespace) {
        const Value* v = obj.dict->find(name);
        return v ? *v : Value::undefined(name);
    }
    Value m = bound_method(obj, name);
    if (!m.is_undefined()) return m;
    if (obj.kind == Value::Kind::Map) {
        const Value* v = obj.dict->find(name);
        return v ? *v : Value::undefined(name);
    }
    return Value::undefined(name);
}

Value get_item(const Value& obj, const Value& key) {
    if (obj.is_mapping()) {
        if (!key.is_string()) {
            const Value* v = obj.dict->find(key);
            return v ? *v : Value::undefined();
        }
        const Value* v = obj.dict->find(key.text());
        return v ? *v : Value::undefined(key.text());
    }
    if ((obj.is_list() || obj.is_string()) && (key.kind == Value::Kind::Int || key.kind == Value::Kind::Bool)) {
        if (obj.is_list()) {
            const int64_t n = static_cast<int64_t>(obj.list->size());
            const int64_t i = key.integer < 0 ? key.integer + n : key.integer;
            if (i < 0 || i >= n) return Value::undefined();
            return (*obj.list)[static_cast<size_t>(i)];
        }
        const List chars = iterate(obj);
        const int64_t n = static_cast<int64_t>(chars.size());
        const int64_t i = key.integer < 0 ? key.integer + n : key.integer;
        if (i < 0 || i >= n) return Value::undefined();
        return chars[static_cast<size_t>(i)];
    }
    return Value::undefined();
}

}  // namespace basalt::tmpl
