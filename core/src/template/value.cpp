#include "value.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "error.hpp"

namespace basalt::tmpl {

size_t& string_limit() {
    thread_local size_t limit = SIZE_MAX;
    return limit;
}

void check_string_limit(size_t bytes) {
    if (bytes > string_limit())
        throw LimitError("the rendering grew past " + std::to_string(string_limit()) + " bytes");
}

Str Str::from_data(std::string s) {
    Str out{std::move(s), {}};
    if (!out.text.empty()) out.data.emplace_back(0, out.text.size());
    return out;
}

Str Str::derived(std::string s, const Str& source) {
    return source.has_data() ? from_data(std::move(s)) : markup(std::move(s));
}

void Str::append(const Str& other) {
    const size_t base = text.size();
    text += other.text;
    for (const auto& [b, e] : other.data) {
        if (!data.empty() && data.back().second == base + b)
            data.back().second = base + e;
        else
            data.emplace_back(base + b, base + e);
    }
}

Str Str::sub(size_t begin, size_t n) const {
    Str out;
    if (begin >= text.size()) return out;
    n = std::min(n, text.size() - begin);
    out.text = text.substr(begin, n);
    const size_t end = begin + n;
    for (const auto& [b, e] : data) {
        const size_t lo = std::max(b, begin), hi = std::min(e, end);
        if (lo < hi) out.data.emplace_back(lo - begin, hi - begin);
    }
    return out;
}

const Value* Args::get(size_t i, const char* name) const {
    if (i < positional.size()) return &positional[i];
    if (name != nullptr)
        for (const auto& [k, v] : keywords)
            if (k == name) return &v;
    return nullptr;
}

Value Value::undefined(std::string name) {
    Value v;
    v.undefined_name = std::move(name);
    return v;
}

Value Value::none() {
    Value v;
    v.kind = Kind::None;
    return v;
}

Value Value::of(bool b) {
    Value v;
    v.kind = Kind::Bool;
    v.boolean = b;
    v.integer = b ? 1 : 0;
    return v;
}

Value Value::of(int64_t i) {
    Value v;
    v.kind = Kind::Int;
    v.integer = i;
    return v;
}

Value Value::of(double d) {
    Value v;
    v.kind = Kind::Float;
    v.number = d;
    return v;
}

Value Value::of(Str s) {
    Value v;
    v.kind = Kind::String;
    v.str = std::make_shared<const Str>(std::move(s));
    return v;
}

Value Value::of(List l, bool tuple) {
    Value v;
    v.kind = Kind::Array;
    v.tuple = tuple;
    v.list = std::make_shared<const List>(std::move(l));
    return v;
}

Value Value::of(std::shared_ptr<Dict> d) {
    Value v;
    v.kind = Kind::Map;
    v.dict = std::move(d);
    return v;
}

Value Value::callable(std::string name, Native f) {
    Value v;
    v.kind = Kind::Function;
    v.fn = std::make_shared<const Callable>(Callable{std::move(name), std::move(f)});
    return v;
}

bool Value::truthy() const {
    switch (kind) {
        case Kind::Undefined:
        case Kind::None:
            return false;
        case Kind::Bool:
            return boolean;
        case Kind::Int:
            return integer != 0;
        case Kind::Float:
            return number != 0.0;
        case Kind::String:
            return !str->text.empty();
        case Kind::Array:
            return generator || !list->empty();
        case Kind::Map:
            return !dict->items.empty();
        case Kind::Function:
        case Kind::Namespace:
            return true;
    }
    return false;
}

const char* Value::type_name() const {
    switch (kind) {
        case Kind::Undefined:
            return "Undefined";
        case Kind::None:
            return "NoneType";
        case Kind::Bool:
            return "bool";
        case Kind::Int:
            return "int";
        case Kind::Float:
            return "float";
        case Kind::String:
            return "str";
        case Kind::Array:
            return tuple ? "tuple" : "list";
        case Kind::Map:
            return "dict";
        case Kind::Function:
            return "function";
        case Kind::Namespace:
            return "Namespace";
    }
    return "object";
}

std::string float_repr(double d) {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
    if (d == 0.0) return std::signbit(d) ? "-0.0" : "0.0";
    // Shortest round-trip digits in scientific form, then laid out as Python's repr does: positional for
    // exponents -4 <= exp < 16, else d.ddde+XX.
    char buf[64];
    const auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
    std::string sci(buf, res.ptr);
    const bool neg = sci[0] == '-';
    if (neg) sci.erase(0, 1);
    const size_t epos = sci.find('e');
    std::string digits = sci.substr(0, epos);
    const int exp = std::stoi(sci.substr(epos + 1));
    digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
    std::string out;
    if (exp >= -4 && exp < 16) {
        if (exp >= 0) {
            if (static_cast<int>(digits.size()) <= exp + 1) {
                out = digits + std::string(static_cast<size_t>(exp + 1) - digits.size(), '0') + ".0";
            } else {
                out =
                    digits.substr(0, static_cast<size_t>(exp + 1)) + "." + digits.substr(static_cast<size_t>(exp + 1));
            }
        } else {
            out = "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
        }
    } else {
        out = digits.substr(0, 1);
        if (digits.size() > 1) out += "." + digits.substr(1);
        char e[16];
        std::snprintf(e, sizeof e, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
        out += e;
    }
    return neg ? "-" + out : out;
}

std::string html_escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&#34;";
                break;
            case '\'':
                out += "&#39;";
                break;
            default:
                out += c;
        }
    }
    return out;
}

std::string string_repr(const std::string& s) {
    const bool has_single = s.find('\'') != std::string::npos;
    const bool has_double = s.find('"') != std::string::npos;
    const char q = has_single && !has_double ? '"' : '\'';
    std::string out(1, q);
    for (unsigned char c : s) {
        if (c == q || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c < 0x20 || c == 0x7f) {
            char e[8];
            std::snprintf(e, sizeof e, "\\x%02x", c);
            out += e;
        } else {
            out += static_cast<char>(c);
        }
    }
    out += q;
    return out;
}

namespace {

constexpr int kMaxNesting = 512;  // values nested deeper (a list built into itself in a loop) are refused

void check_nesting(int depth) {
    if (depth > kMaxNesting)
        throw std::invalid_argument("a value nested deeper than " + std::to_string(kMaxNesting) + " levels");
}

std::string repr_at(const Value& v, int depth);
bool less_at(const Value& a, const Value& b, int depth);

}  // namespace

std::string Value::repr() const {
    return repr_at(*this, 0);
}

namespace {

std::string repr_at(const Value& self, int depth) {
    check_nesting(depth);
    using Kind = Value::Kind;
    const auto& kind = self.kind;
    const auto& str = self.str;
    const auto& list = self.list;
    const auto& dict = self.dict;
    const bool tuple = self.tuple;
    switch (kind) {
        case Kind::String:
            return string_repr(str->text);
        case Kind::Array: {
            std::string out = tuple ? "(" : "[";
            for (size_t i = 0; i < list->size(); ++i) {
                if (i) out += ", ";
                out += repr_at((*list)[i], depth + 1);
                check_string_limit(out.size());
            }
            if (tuple && list->size() == 1) out += ",";
            return out + (tuple ? ")" : "]");
        }
        case Kind::Map: {
            std::string out = "{";
            for (size_t i = 0; i < dict->items.size(); ++i) {
                if (i) out += ", ";
                out += repr_at(dict->items[i].first, depth + 1) + ": " + repr_at(dict->items[i].second, depth + 1);
                check_string_limit(out.size());
            }
            return out + "}";
        }
        case Kind::Namespace: {
            std::string out = "<Namespace {";
            for (size_t i = 0; i < dict->items.size(); ++i) {
                if (i) out += ", ";
                out += repr_at(dict->items[i].first, depth + 1) + ": " + repr_at(dict->items[i].second, depth + 1);
                check_string_limit(out.size());
            }
            return out + "}>";
        }
        default:
            return self.to_str().text;
    }
}

}  // namespace

Str Value::to_str() const {
    switch (kind) {
        case Kind::Undefined:
            return {};
        case Kind::None:
            return Str::markup("None");
        case Kind::Bool:
            return Str::markup(boolean ? "True" : "False");
        case Kind::Int:
            return Str::markup(std::to_string(integer));
        case Kind::Float:
            return Str::markup(float_repr(number));
        case Kind::String:
            return *str;
        case Kind::Function:
            return Str::markup("<function " + fn->name + ">");
        case Kind::Array:
        case Kind::Map:
        case Kind::Namespace: {
            // Reprs of containers print the data they hold: all of it is data when any of it is.
            bool data = false;
            std::function<void(const Value&, int)> scan = [&](const Value& v, int depth) {
                check_nesting(depth);
                if (data) return;
                if (v.kind == Kind::String && v.str->has_data()) data = true;
                if (v.kind == Kind::Array)
                    for (const auto& x : *v.list) scan(x, depth + 1);
                if (v.kind == Kind::Map || v.kind == Kind::Namespace)
                    for (const auto& [k, x] : v.dict->items) {
                        scan(k, depth + 1);
                        scan(x, depth + 1);
                    }
            };
            scan(*this, 0);
            return data ? Str::from_data(repr()) : Str::markup(repr());
        }
    }
    return {};
}

const Value* Dict::find(const std::string& key) const {
    for (const auto& [k, v] : items)
        if (k.kind == Value::Kind::String && k.str->text == key) return &v;
    return nullptr;
}

const Value* Dict::find(const Value& key) const {
    for (const auto& [k, v] : items)
        if (equal(k, key)) return &v;
    return nullptr;
}

void Dict::set(Str key, Value v) {
    set(Value::of(std::move(key)), std::move(v));
}

void Dict::set(Value key, Value v) {
    for (auto& [k, x] : items)
        if (equal(k, key)) {
            x = std::move(v);
            return;
        }
    items.emplace_back(std::move(key), std::move(v));
}

namespace {

bool equal_at(const Value& a, const Value& b, int depth);

}  // namespace

bool equal(const Value& a, const Value& b) {
    return equal_at(a, b, 0);
}

namespace {

bool equal_at(const Value& a, const Value& b, int depth) {
    check_nesting(depth);
    if (a.is_number() && b.is_number()) {
        if (a.kind == Value::Kind::Float || b.kind == Value::Kind::Float) return a.as_double() == b.as_double();
        return a.integer == b.integer;
    }
    if (a.kind != b.kind) return false;
    switch (a.kind) {
        case Value::Kind::Undefined:
        case Value::Kind::None:
            return true;
        case Value::Kind::String:
            return a.str->text == b.str->text;
        case Value::Kind::Array: {
            if (a.list->size() != b.list->size()) return false;
            for (size_t i = 0; i < a.list->size(); ++i)
                if (!equal_at((*a.list)[i], (*b.list)[i], depth + 1)) return false;
            return true;
        }
        case Value::Kind::Map: {
            if (a.dict->items.size() != b.dict->items.size()) return false;
            for (const auto& [k, v] : a.dict->items) {
                const Value* w = b.dict->find(k);
                if (w == nullptr || !equal_at(v, *w, depth + 1)) return false;
            }
            return true;
        }
        default:
            return a.dict == b.dict && a.fn == b.fn;
    }
}

}  // namespace

bool less(const Value& a, const Value& b) {
    return less_at(a, b, 0);
}

namespace {

bool less_at(const Value& a, const Value& b, int depth) {
    check_nesting(depth);
    if (a.is_number() && b.is_number()) {
        if (a.kind == Value::Kind::Float || b.kind == Value::Kind::Float) return a.as_double() < b.as_double();
        return a.integer < b.integer;
    }
    if (a.is_string() && b.is_string()) return a.text() < b.text();
    if (a.is_list() && b.is_list()) {
        const size_t n = std::min(a.list->size(), b.list->size());
        for (size_t i = 0; i < n; ++i) {
            if (less_at((*a.list)[i], (*b.list)[i], depth + 1)) return true;
            if (less_at((*b.list)[i], (*a.list)[i], depth + 1)) return false;
        }
        return a.list->size() < b.list->size();
    }
    throw std::invalid_argument(std::string("'<' not supported between instances of '") + a.type_name() + "' and '" +
                                b.type_name() + "'");
}

}  // namespace

}  // namespace basalt::tmpl
