// The filters chat templates use, with Jinja's semantics (and Hugging Face's tojson).
#include <algorithm>
#include <cctype>
#include <cmath>

#include "interpreter.hpp"
#include "json.hpp"

namespace basalt::tmpl {
namespace {

size_t code_points(const std::string& s) {
    size_t n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
}

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

// The attribute path "a.b" of a value (map/selectattr/sort/join attribute=...).
Value attribute_of(Interpreter& in, const Value& v, const std::string& path) {
    Value cur = v;
    size_t start = 0;
    while (true) {
        const size_t dot = path.find('.', start);
        const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        if (cur.is_undefined()) return cur;
        Value next = !part.empty() && std::isdigit(static_cast<unsigned char>(part[0]))
                         ? get_item(cur, Value::of(static_cast<int64_t>(std::stoll(part))))
                         : get_item(cur, Value::markup(part));
        if (next.is_undefined()) next = get_attr(in, cur, part);
        cur = std::move(next);
        if (dot == std::string::npos) return cur;
        start = dot + 1;
    }
}

Args rest_args(const Args& a, size_t from) {
    Args r;
    for (size_t i = from; i < a.positional.size(); ++i) r.positional.push_back(a.positional[i]);
    r.keywords = a.keywords;
    return r;
}

// select/reject/selectattr/rejectattr
Value filter_items(Interpreter& in, const Value& v, const Args& a, bool by_attr, bool keep_if) {
    List out;
    const List items = v.truthy() ? iterate(v) : List{};  // Jinja tests `if seq` first: none selects nothing
    std::string attr;
    size_t next = 0;
    if (by_attr) {
        if (a.positional.empty()) throw EvalError("selectattr/rejectattr need an attribute name");
        attr = a.positional[0].to_str().text;
        next = 1;
    }
    const bool has_test = a.positional.size() > next;
    const std::string test = has_test ? a.positional[next].to_str().text : "";
    const Args test_args = rest_args(a, next + 1);
    for (const auto& item : items) {
        const Value x = by_attr ? attribute_of(in, item, attr) : item;
        const bool ok = has_test ? apply_test(in, test, x, test_args) : x.truthy();
        if (ok == keep_if) out.push_back(item);
    }
    Value g = Value::of(std::move(out));
    g.generator = true;
    return g;
}

Value sort_key(Interpreter& in, const Value& v, const std::string& attr, bool case_sensitive) {
    Value k = attr.empty() ? v : attribute_of(in, v, attr);
    if (!case_sensitive && k.is_string()) return Value::markup(lower(k.text()));
    return k;
}

const Value* kw(const Args& a, size_t i, const char* name) {
    return a.get(i, name);
}

}  // namespace

Value apply_filter(Interpreter& in, const std::string& name, const Value& v, const Args& a) {
    if (name == "safe") {
        if (!v.is_string()) return v;
        Value m = v;
        m.safe = true;
        return m;
    }
    if (name == "default" || name == "d") {
        const Value* dflt = kw(a, 0, "default_value");
        const Value* boolean = kw(a, 1, "boolean");
        const bool use = v.is_undefined() || (boolean != nullptr && boolean->truthy() && !v.truthy());
        return use ? (dflt ? *dflt : Value::markup("")) : v;
    }
    if (name == "length" || name == "count") {
        if (v.is_string()) return Value::of(static_cast<int64_t>(code_points(v.text())));
        if (v.is_list() && v.generator) throw EvalError("object of type 'generator' has no len()");
        if (v.is_list()) return Value::of(static_cast<int64_t>(v.list->size()));
        if (v.is_mapping()) return Value::of(static_cast<int64_t>(v.dict->items.size()));
        if (v.is_undefined()) return Value::of(int64_t{0});
        throw EvalError(std::string("object of type '") + v.type_name() + "' has no len()");
    }
    if (name == "string") return Value::of(v.to_str());
    if (name == "trim") {
        Args b;
        if (const Value* chars = kw(a, 0, "chars")) b.positional.push_back(*chars);
        return in.call(bound_method(Value::of(v.to_str()), "strip"), b);
    }
    if (name == "upper" || name == "lower" || name == "title" || name == "capitalize")
        return in.call(bound_method(Value::of(v.to_str()), name), Args{});
    if (name == "replace") {
        Args b = a;
        return in.call(bound_method(Value::of(v.to_str()), "replace"), b);
    }
    if ((name == "escape" || name == "e") && v.safe) return v;
    if (name == "escape" || name == "e" || name == "forceescape")
        return Value::of(Str::derived(html_escape(v.to_str().text), v.to_str()));
    if (name == "tojson") {
        if (v.generator) throw EvalError("Object of type generator is not JSON serializable");
        JsonStyle st;
        // transformers' tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)
        if (const Value* ea = kw(a, 0, "ensure_ascii")) st.ensure_ascii = ea->truthy();
        if (const Value* indent = kw(a, 1, "indent"); indent != nullptr && !indent->is_none())
            st.indent = static_cast<int>(indent->integer);
        if (const Value* sk = kw(a, 3, "sort_keys")) st.sort_keys = sk->truthy();
        if (const Value* sep = kw(a, 2, "separators"); sep != nullptr && sep->is_list() && sep->list->size() == 2) {
            st.item_separator = (*sep->list)[0].to_str().text;
            st.key_separator = (*sep->list)[1].to_str().text;
        }
        std::string text = to_json(v, st);
        in.check_size(text.size());
        // JSON of data is data; JSON of the template's own literals is markup.
        return Value::of(Str::derived(std::move(text), v.to_str()));
    }
    if (name == "join") {
        const Value* sep = kw(a, 0, "d");
        const Value* attr = kw(a, 1, "attribute");
        Str out;
        const List items = iterate(v);
        for (size_t i = 0; i < items.size(); ++i) {
            if (i && sep) out.append(sep->to_str());
            out.append((attr ? attribute_of(in, items[i], attr->to_str().text) : items[i]).to_str());
            in.check_size(out.text.size());
        }
        return Value::of(std::move(out));
    }
    if (name == "last" && v.generator) throw EvalError("'generator' object is not reversible");
    if (name == "first" || name == "last") {
        const List items = iterate(v);
        if (items.empty()) return Value::undefined(name);
        return name == "first" ? items.front() : items.back();
    }
    if (name == "list") return Value::of(iterate(v));
    if (name == "items") {
        if (v.is_undefined()) return Value::of(List{});
        if (!v.is_mapping())
            throw EvalError(std::string("can only get item pairs from a mapping, not ") + v.type_name());
        List out;
        for (const auto& [k, x] : v.dict->items) out.push_back(Value::of(List{k, x}, true));
        return Value::of(std::move(out));
    }
    if (name == "dictsort") {
        if (!v.is_mapping()) throw EvalError("dictsort needs a mapping");
        const Value* cs = kw(a, 0, "case_sensitive");
        const Value* by = kw(a, 1, "by");
        const Value* rev = kw(a, 2, "reverse");
        const bool by_value = by != nullptr && by->to_str().text == "value";
        List out;
        for (const auto& [k, x] : v.dict->items) out.push_back(Value::of(List{k, x}, true));
        const bool sensitive = cs != nullptr && cs->truthy();
        std::stable_sort(out.begin(), out.end(), [&](const Value& p, const Value& q) {
            return less(sort_key(in, (*p.list)[by_value ? 1 : 0], "", sensitive),
                        sort_key(in, (*q.list)[by_value ? 1 : 0], "", sensitive));
        });
        if (rev != nullptr && rev->truthy()) std::reverse(out.begin(), out.end());
        return Value::of(std::move(out));
    }
    if (name == "map") {
        List out;
        const List items = v.truthy() ? iterate(v) : List{};
        if (const Value* attr = kw(a, 99, "attribute")) {
            const Value* dflt = kw(a, 99, "default");
            for (const auto& x : items) {
                Value y = attribute_of(in, x, attr->to_str().text);
                out.push_back(y.is_undefined() && dflt ? *dflt : y);
            }
            Value g = Value::of(std::move(out));
            g.generator = true;
            return g;
        }
        if (a.positional.empty()) throw EvalError("map needs a filter name or attribute=");
        const std::string f = a.positional[0].to_str().text;
        const Args fargs = rest_args(a, 1);
        for (const auto& x : items) out.push_back(apply_filter(in, f, x, fargs));
        Value g = Value::of(std::move(out));
        g.generator = true;
        return g;
    }
    if (name == "select") return filter_items(in, v, a, false, true);
    if (name == "reject") return filter_items(in, v, a, false, false);
    if (name == "selectattr") return filter_items(in, v, a, true, true);
    if (name == "rejectattr") return filter_items(in, v, a, true, false);
    if (name == "sort") {
        const Value* rev = kw(a, 0, "reverse");
        const Value* cs = kw(a, 1, "case_sensitive");
        const Value* attr = kw(a, 2, "attribute");
        List items = iterate(v);
        const std::string path = attr ? attr->to_str().text : "";
        const bool sensitive = cs != nullptr && cs->truthy();
        std::stable_sort(items.begin(), items.end(), [&](const Value& p, const Value& q) {
            return less(sort_key(in, p, path, sensitive), sort_key(in, q, path, sensitive));
        });
        if (rev != nullptr && rev->truthy()) std::reverse(items.begin(), items.end());
        return Value::of(std::move(items));
    }
    if (name == "unique") {
        const Value* cs = kw(a, 0, "case_sensitive");
        const Value* attr = kw(a, 1, "attribute");
        const bool sensitive = cs != nullptr && cs->truthy();
        List out, seen;
        for (const auto& x : iterate(v)) {
            const Value k = sort_key(in, x, attr ? attr->to_str().text : "", sensitive);
            if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return equal(s, k); })) continue;
            seen.push_back(k);
            out.push_back(x);
        }
        return Value::of(std::move(out));
    }
    if (name == "reverse") {
        if (v.is_string()) {
            List chars = iterate(v);
            Str out;
            for (auto it = chars.rbegin(); it != chars.rend(); ++it) out.append(*it->str);
            return Value::of(std::move(out));
        }
        List items = iterate(v);
        std::reverse(items.begin(), items.end());
        return Value::of(std::move(items));
    }
    if (name == "min" || name == "max") {
        const Value* cs = kw(a, 0, "case_sensitive");
        const Value* attr = kw(a, 1, "attribute");
        const List items = iterate(v);
        if (items.empty()) return Value::undefined(name);
        const bool sensitive = cs != nullptr && cs->truthy();
        const std::string path = attr ? attr->to_str().text : "";
        size_t best = 0;
        for (size_t i = 1; i < items.size(); ++i) {
            const bool better =
                name == "min"
                    ? less(sort_key(in, items[i], path, sensitive), sort_key(in, items[best], path, sensitive))
                    : less(sort_key(in, items[best], path, sensitive), sort_key(in, items[i], path, sensitive));
            if (better) best = i;
        }
        return items[best];
    }
    if (name == "sum") {
        const Value* attr = kw(a, 0, "attribute");
        const Value* start = kw(a, 1, "start");
        Value total = start ? *start : Value::of(int64_t{0});
        for (const auto& x : iterate(v)) {
            const Value y = attr ? attribute_of(in, x, attr->to_str().text) : x;
            if (!y.is_number() || !total.is_number()) throw EvalError("sum needs numbers");
            total = total.kind == Value::Kind::Float || y.kind == Value::Kind::Float
                        ? Value::of(total.as_double() + y.as_double())
                        : Value::of(total.integer + y.integer);
        }
        return total;
    }
    if (name == "int") {
        const Value* dflt = kw(a, 0, "default");
        if (v.kind == Value::Kind::Float) return Value::of(static_cast<int64_t>(v.number));
        if (v.is_number()) return Value::of(v.integer);
        if (v.is_string()) {
            try {
                size_t used = 0;
                std::string t = v.text();
                t.erase(0, t.find_first_not_of(" \t\n\r"));
                const long long x = std::stoll(t, &used, 10);
                if (t.find_first_not_of(" \t\n\r", used) == std::string::npos)
                    return Value::of(static_cast<int64_t>(x));
                return Value::of(static_cast<int64_t>(std::stod(t)));
            } catch (const std::exception&) {
            }
        }
        return dflt ? *dflt : Value::of(int64_t{0});
    }
    if (name == "float") {
        const Value* dflt = kw(a, 0, "default");
        if (v.is_number()) return Value::of(v.as_double());
        if (v.is_string()) {
            try {
                return Value::of(std::stod(v.text()));
            } catch (const std::exception&) {
            }
        }
        return dflt ? *dflt : Value::of(0.0);
    }
    if (name == "abs") {
        if (v.kind == Value::Kind::Float) return Value::of(std::fabs(v.number));
        if (v.is_number()) return Value::of(v.integer < 0 ? -v.integer : v.integer);
        throw EvalError(std::string("bad operand type for abs(): '") + v.type_name() + "'");
    }
    if (name == "round") {
        const Value* prec = kw(a, 0, "precision");
        const Value* method = kw(a, 1, "method");
        const double scale = std::pow(10.0, prec ? static_cast<double>(prec->integer) : 0.0);
        const std::string m = method ? method->to_str().text : "common";
        double x = v.as_double() * scale;
        x = m == "ceil" ? std::ceil(x) : m == "floor" ? std::floor(x) : std::round(x);
        return Value::of(x / scale);
    }
    if (name == "attr") return get_attr(in, v, a.positional.empty() ? "" : a.positional[0].to_str().text);
    if (name == "format") {
        // "fmt" | format(args) is "fmt" % args
        std::string f = v.to_str().text;
        Str out;
        size_t next = 0;
        for (size_t i = 0; i < f.size(); ++i) {
            if (f[i] != '%' || i + 1 >= f.size()) {
                out.text += f[i];
                continue;
            }
            const char c = f[++i];
            if (c == '%') {
                out.text += '%';
            } else {
                if (next >= a.positional.size()) throw EvalError("not enough arguments for format string");
                out.append(a.positional[next++].to_str());
            }
        }
        return Value::of(std::move(out));
    }
    if (name == "indent") {
        const Value* width = kw(a, 0, "width");
        const Value* first = kw(a, 1, "first");
        const Value* blank = kw(a, 2, "blank");
        const std::string pad = width == nullptr ? "    "
                                : width->is_string()
                                    ? width->text()
                                    : std::string(static_cast<size_t>(std::max<int64_t>(0, width->integer)), ' ');
        const Str s = v.to_str();
        Str text = s;
        text.append_markup("\n");
        // lines as splitlines() gives them (the added newline ends the last one)
        std::vector<Str> lines;
        size_t start = 0;
        for (size_t i = 0; i < text.text.size(); ++i) {
            if (text.text[i] == '\n' || text.text[i] == '\r') {
                lines.push_back(text.sub(start, i - start));
                if (text.text[i] == '\r' && i + 1 < text.text.size() && text.text[i + 1] == '\n') ++i;
                start = i + 1;
            }
        }
        Str out;
        for (size_t i = 0; i < lines.size(); ++i) {
            if (i) out.append_markup("\n");
            const bool pad_line = i == 0 ? (first != nullptr && first->truthy())
                                         : (blank != nullptr && blank->truthy()) || !lines[i].text.empty();
            if (pad_line) out.append_markup(pad);
            out.append(lines[i]);
            in.check_size(out.text.size());
        }
        return Value::of(std::move(out));
    }
    if (name == "wordcount") {
        Args none;
        return Value::of(
            static_cast<int64_t>(in.call(bound_method(Value::of(v.to_str()), "split"), none).list->size()));
    }
    if (name == "batch" || name == "slice" || name == "groupby" || name == "truncate" || name == "urlencode" ||
        name == "wordwrap" || name == "center" || name == "filesizeformat" || name == "pprint" || name == "striptags" ||
        name == "xmlattr" || name == "urlize")
        throw EvalError("filter '" + name + "' is not supported in chat templates (docs/chat-templates.md)");
    throw EvalError("no filter named '" + name + "'");
}

bool apply_test(Interpreter& in, const std::string& name, const Value& v, const Args& a) {
    const auto operand = [&]() -> const Value& {
        const Value* x = a.get(0, nullptr);
        if (x == nullptr) throw EvalError("test '" + name + "' needs an argument");
        return *x;
    };
    if (name == "defined") return !v.is_undefined();
    if (name == "undefined") return v.is_undefined();
    if (name == "none") return v.is_none();
    if (name == "boolean") return v.kind == Value::Kind::Bool;
    if (name == "true") return v.kind == Value::Kind::Bool && v.boolean;
    if (name == "false") return v.kind == Value::Kind::Bool && !v.boolean;
    if (name == "integer") return v.kind == Value::Kind::Int;
    if (name == "float") return v.kind == Value::Kind::Float;
    if (name == "number") return v.is_number();
    if (name == "string") return v.is_string();
    if (name == "mapping") return v.kind == Value::Kind::Map;
    if (name == "iterable") return v.is_undefined() || v.is_string() || v.is_list() || v.kind == Value::Kind::Map;
    if (name == "sequence") return v.is_undefined() || v.is_string() || v.is_list() || v.kind == Value::Kind::Map;
    if (name == "callable") return v.kind == Value::Kind::Function;
    if (name == "sameas") {
        const Value& o = operand();
        if (v.kind != o.kind) return false;
        if (v.is_none() || v.is_undefined()) return true;
        if (v.kind == Value::Kind::Bool) return v.boolean == o.boolean;
        return equal(v, o) && (v.str == o.str && v.list == o.list && v.dict == o.dict);
    }
    if (name == "eq" || name == "equalto" || name == "==") return equal(v, operand());
    if (name == "ne" || name == "!=") return !equal(v, operand());
    if (name == "lt" || name == "lessthan" || name == "<") return less(v, operand());
    if (name == "gt" || name == "greaterthan" || name == ">") return less(operand(), v);
    if (name == "le" || name == "<=") return !less(operand(), v);
    if (name == "ge" || name == ">=") return !less(v, operand());
    if (name == "in") {
        const Value& c = operand();
        if (c.is_string()) return v.is_string() && c.text().find(v.text()) != std::string::npos;
        if (c.is_mapping()) return c.dict->find(v) != nullptr;
        for (const auto& x : iterate(c))
            if (equal(v, x)) return true;
        return false;
    }
    if (name == "divisibleby") {
        const Value& d = operand();
        if (d.integer == 0) throw EvalError("integer modulo by zero");
        return v.integer % d.integer == 0;
    }
    if (name == "even") return v.is_number() && v.integer % 2 == 0;
    if (name == "odd") return v.is_number() && v.integer % 2 != 0;
    if (name == "lower" || name == "upper") {
        const std::string s = v.to_str().text;
        const bool any_cased =
            std::any_of(s.begin(), s.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)); });
        const bool ok = std::none_of(s.begin(), s.end(), [&](char c) {
            return name == "lower" ? std::isupper(static_cast<unsigned char>(c))
                                   : std::islower(static_cast<unsigned char>(c));
        });
        return any_cased && ok;
    }
    if (name == "escaped") return false;
    (void)in;
    throw EvalError("no test named '" + name + "'");
}

}  // namespace basalt::tmpl
