// The values a chat template computes with (Jinja's Python-like types: undefined, none, bool, int, float, string,
// list, dict, callable, namespace) and the Python semantics the rendering must reproduce byte for byte: str() and
// repr() of every type, truthiness, equality and ordering. Strings remember which of their bytes came from the
// caller's data (message content, tool definitions) rather than from the template's own text, so that only the
// template's markup can become control tokens (docs/chat-templates.md, "Special tokens").
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace basalt::tmpl {

// A string with the byte ranges [begin, end) that came from data (sorted, disjoint, merged).
struct Str {
    std::string text;
    std::vector<std::pair<size_t, size_t>> data;

    static Str markup(std::string s) { return Str{std::move(s), {}}; }
    static Str from_data(std::string s);
    // A string computed from `source` by an operation that does not keep byte positions: all data when any of
    // source's bytes were data (so content never turns into markup), else markup.
    static Str derived(std::string s, const Str& source);
    bool has_data() const { return !data.empty(); }
    void append(const Str& other);
    void append_markup(const std::string& s) { text += s; }
    // The bytes [begin, begin + n) with their data ranges.
    Str sub(size_t begin, size_t n) const;
};

struct Value;
struct Interpreter;
using List = std::vector<Value>;

// Positional and keyword arguments of a call.
struct Args {
    std::vector<Value> positional;
    std::vector<std::pair<std::string, Value>> keywords;
    // The argument at position i or named `name`, nullptr when absent.
    const Value* get(size_t i, const char* name) const;
};

using Native = std::function<Value(Interpreter&, const Args&)>;

struct Callable {
    std::string name;
    Native call;
};

struct Dict;

struct Value {
    enum class Kind { Undefined, None, Bool, Int, Float, String, Array, Map, Function, Namespace };
    Kind kind = Kind::Undefined;
    bool boolean = false;
    bool tuple = false;      // a list that prints as a tuple ("(a, b)")
    bool generator = false;  // a list that map/select/... give lazily in Jinja: always true, no len(), no JSON
    bool safe = false;       // a string marked safe (Markup): + escapes the other operand's HTML characters
    int64_t integer = 0;
    double number = 0.0;
    std::shared_ptr<const Str> str;
    std::shared_ptr<const List> list;
    std::shared_ptr<Dict> dict;  // Dict and Namespace (a namespace's attributes are assigned by {% set ns.x %})
    std::shared_ptr<const Callable> fn;
    std::string undefined_name;  // what was undefined, for error messages

    static Value undefined(std::string name = {});
    static Value none();
    static Value of(bool b);
    static Value of(int64_t i);
    static Value of(double d);
    static Value of(Str s);
    static Value markup(std::string s) { return of(Str::markup(std::move(s))); }
    static Value of(List l, bool tuple = false);
    static Value of(std::shared_ptr<Dict> d);
    static Value callable(std::string name, Native f);

    bool is_undefined() const { return kind == Kind::Undefined; }
    bool is_none() const { return kind == Kind::None; }
    bool is_string() const { return kind == Kind::String; }
    bool is_number() const { return kind == Kind::Int || kind == Kind::Float || kind == Kind::Bool; }
    bool is_list() const { return kind == Kind::Array; }
    bool is_mapping() const { return kind == Kind::Map || kind == Kind::Namespace; }
    const std::string& text() const { return str->text; }
    double as_double() const { return kind == Kind::Float ? number : static_cast<double>(integer); }

    // Python's bool(x) (undefined is false).
    bool truthy() const;
    // Python's str(x) as Jinja prints it (undefined prints as ""); data ranges kept for strings.
    Str to_str() const;
    // Python's repr(x) (how a list prints its items).
    std::string repr() const;
    // The type's Python name, for error messages.
    const char* type_name() const;
};

// Ordered mapping (JSON objects, dict literals, namespaces); keys are strings or, in dict literals, numbers.
struct Dict {
    std::vector<std::pair<Value, Value>> items;
    // The value of string key `key`, nullptr when absent.
    const Value* find(const std::string& key) const;
    // The value of the key equal to `key` (Python's ==), nullptr when absent.
    const Value* find(const Value& key) const;
    void set(Str key, Value v);
    void set(Value key, Value v);
};

// Python's == (1 == 1.0, lists and dicts element-wise).
bool equal(const Value& a, const Value& b);
// Python's < for numbers, strings and lists; throws std::invalid_argument for other pairs.
bool less(const Value& a, const Value& b);
// The byte bound on text that repr() and tojson build on this thread: the render's output limit while a template
// renders here (Template::render sets and restores it), else unbounded. Exceeding it throws LimitError.
size_t& string_limit();
// Throws LimitError when bytes exceed string_limit().
void check_string_limit(size_t bytes);
// Python's repr of a float (shortest round-trip digits, "1.0", "1e-05", "inf").
std::string float_repr(double d);
// markupsafe's escape: & < > " ' as HTML entities.
std::string html_escape(const std::string& s);
// Python's repr of a string (quotes chosen as Python does).
std::string string_repr(const std::string& s);

}  // namespace basalt::tmpl
