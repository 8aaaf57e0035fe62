#include <algorithm>
#include <cmath>
#include <optional>

#include "error.hpp"
#include "interpreter.hpp"
#include "parser.hpp"
#include "template.hpp"

namespace basalt::tmpl {
namespace {

[[noreturn]] void type_error(const char* op, const Value& a, const Value& b) {
    throw EvalError(std::string("unsupported operand type(s) for ") + op + ": '" + a.type_name() + "' and '" +
                    b.type_name() + "'");
}

void require_defined(const Value& v) {
    if (v.is_undefined())
        throw EvalError(v.undefined_name.empty() ? std::string("an undefined value is used")
                                                 : "'" + v.undefined_name + "' is undefined");
}

// Python's % on numbers (the result takes the divisor's sign).
Value modulo(const Value& a, const Value& b) {
    if (a.kind == Value::Kind::Float || b.kind == Value::Kind::Float) {
        const double d = b.as_double();
        if (d == 0.0) throw EvalError("float modulo by zero");
        double r = std::fmod(a.as_double(), d);
        if (r != 0.0 && ((r < 0) != (d < 0))) r += d;
        return Value::of(r);
    }
    if (b.integer == 0) throw EvalError("integer modulo by zero");
    int64_t r = a.integer % b.integer;
    if (r != 0 && ((r < 0) != (b.integer < 0))) r += b.integer;
    return Value::of(r);
}

// "fmt" % args with %s, %d, %i, %r, %f and %% (printf-style formatting as templates use it).
Value percent_format(Interpreter& in, const Value& fmt, const Value& args) {
    List values = args.is_list() && args.tuple ? *args.list : List{args};
    const std::string& f = fmt.text();
    Str out;
    size_t next = 0;
    for (size_t i = 0; i < f.size(); ++i) {
        if (f[i] != '%') {
            out.text += f[i];
            continue;
        }
        if (++i >= f.size()) throw EvalError("incomplete format");
        const char c = f[i];
        if (c == '%') {
            out.text += '%';
            continue;
        }
        if (next >= values.size()) throw EvalError("not enough arguments for format string");
        const Value& v = values[next++];
        if (c == 's') {
            out.append(v.to_str());
        } else if (c == 'r') {
            out.append(Str::derived(v.repr(), v.to_str()));
        } else if (c == 'd' || c == 'i') {
            if (!v.is_number()) throw EvalError("%d format: a number is required");
            out.text += std::to_string(v.kind == Value::Kind::Float ? static_cast<int64_t>(v.number) : v.integer);
        } else {
            throw EvalError(std::string("unsupported format character '") + c + "'");
        }
    }
    if (next < values.size()) throw EvalError("not all arguments converted during string formatting");
    in.check_size(out.text.size());
    return Value::of(std::move(out));
}

bool holds_namespace(const Value& v, int depth) {
    if (depth > 512) throw EvalError("a value nested deeper than 512 levels");
    if (v.kind == Value::Kind::Namespace) return true;
    if (v.is_list())
        for (const auto& x : *v.list)
            if (holds_namespace(x, depth + 1)) return true;
    if (v.kind == Value::Kind::Map)
        for (const auto& [k, x] : v.dict->items)
            if (holds_namespace(x, depth + 1)) return true;
    return false;
}

}  // namespace

Interpreter::Interpreter(const Dict& ctx, const RenderOptions& opts)
    : context(ctx), options(opts), started(std::chrono::steady_clock::now()) {
    frame = new_frame();
    add_globals(*this);
}

Interpreter::~Interpreter() {
    frame.reset();
    for (const auto& weak : frames_made) {
        if (const auto f = weak.lock()) {
            f->vars.clear();
            f->parent.reset();
        }
    }
}

std::shared_ptr<Frame> Interpreter::new_frame() {
    auto f = std::make_shared<Frame>();
    if (frames_made.size() >= compact_at) {  // forget the frames already gone, so that loops do not grow this
        std::erase_if(frames_made, [](const std::weak_ptr<Frame>& w) { return w.expired(); });
        compact_at = std::max<size_t>(64, 2 * frames_made.size());
    }
    frames_made.push_back(f);
    return f;
}

void Interpreter::tick() {
    if (++steps > options.limits.max_steps)
        throw LimitError("the template ran more than " + std::to_string(options.limits.max_steps) +
                         " steps (an endless loop?)");
    if ((steps & 1023) == 0) {
        const auto ms =
            std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
        if (ms > static_cast<int64_t>(options.limits.max_ms))
            throw LimitError("rendering took longer than " + std::to_string(options.limits.max_ms) + " ms");
    }
}

void Interpreter::check_items(size_t n) const {
    // a value costs some 100 bytes: lists are bounded by the output limit / 64 items
    if (n > options.limits.max_output / 64)
        throw LimitError("a list grew past " + std::to_string(options.limits.max_output / 64) + " items");
}

void Interpreter::check_size(size_t bytes) const {
    if (bytes > options.limits.max_output)
        throw LimitError("the rendering grew past " + std::to_string(options.limits.max_output) + " bytes");
}

Value Interpreter::lookup(const std::string& name) const {
    for (const Frame* f = frame.get(); f != nullptr; f = f->parent.get()) {
        const auto it = f->vars.find(name);
        if (it != f->vars.end()) return it->second;
    }
    if (const Value* v = context.find(name)) return *v;
    const auto g = globals.find(name);
    if (g != globals.end()) return g->second;
    return Value::undefined(name);
}

void Interpreter::assign(const std::string& name, Value v) {
    frame->vars[name] = std::move(v);
}

Value Interpreter::call(const Value& fn, const Args& args) {
    require_defined(fn);
    if (fn.kind != Value::Kind::Function)
        throw EvalError(std::string("'") + fn.type_name() + "' object is not callable");
    return fn.fn->call(*this, args);
}

Str Interpreter::render_body(const Body& body) {
    Str buffer;
    Str* saved = out;
    out = &buffer;
    try {
        exec(body);
    } catch (...) {
        out = saved;
        throw;
    }
    out = saved;
    return buffer;
}

Interpreter::Flow Interpreter::exec(const Body& body) {
    for (const auto& n : body) {
        const Flow f = exec_node(*n);
        if (f != Flow::Normal) return f;
    }
    return Flow::Normal;
}

Interpreter::Flow Interpreter::exec_node(const Node& n) {
    try {
        tick();
        switch (n.kind) {
            case Node::Kind::Text:
                check_size(out->text.size() + n.value.text().size());
                out->append_markup(n.value.text());
                return Flow::Normal;
            case Node::Kind::Output: {
                const Value v = eval(*n.a);
                const Str s = v.to_str();
                check_size(out->text.size() + s.text.size());
                out->append(s);
                return Flow::Normal;
            }
            case Node::Kind::If:
                for (size_t i = 0; i < n.conds.size(); ++i)
                    if (eval(*n.conds[i]).truthy()) return exec(n.bodies[i]);
                if (n.bodies.size() > n.conds.size()) return exec(n.bodies.back());
                return Flow::Normal;
            case Node::Kind::For:
                return exec_for(n);
            case Node::Kind::Set: {
                Value v = eval(*n.a);
                if (!n.name.empty()) {
                    const Value ns = lookup(n.name);
                    if (ns.kind != Value::Kind::Namespace)
                        throw EvalError("cannot assign attribute '" + n.targets[0] + "' of '" + n.name +
                                        "': only a namespace() takes attributes");
                    // A namespace is the one mutable value: one inside another could make a cycle.
                    if (holds_namespace(v, 0))
                        throw EvalError("a namespace cannot hold a namespace (or the loop object)");
                    ns.dict->set(Str::markup(n.targets[0]), std::move(v));
                    return Flow::Normal;
                }
                if (n.targets.size() == 1) {
                    assign(n.targets[0], std::move(v));
                    return Flow::Normal;
                }
                const List parts = iterate(v);
                if (parts.size() != n.targets.size())
                    throw EvalError("cannot unpack " + std::to_string(parts.size()) + " values into " +
                                    std::to_string(n.targets.size()) + " names");
                for (size_t i = 0; i < parts.size(); ++i) assign(n.targets[i], parts[i]);
                return Flow::Normal;
            }
            case Node::Kind::SetBlock: {
                Value v = Value::of(render_body(n.bodies[0]));
                if (n.a) {
                    // the chain's innermost filter takes the block's text
                    std::vector<const Node*> chain;
                    for (const Node* f = n.a.get(); f != nullptr; f = f->a.get()) chain.push_back(f);
                    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
                        Args args;
                        for (const auto& x : (*it)->items) args.positional.push_back(eval(*x));
                        for (const auto& [k, x] : (*it)->kwargs) args.keywords.emplace_back(k, eval(*x));
                        v = apply_filter(*this, (*it)->name, v, args);
                    }
                }
                assign(n.targets[0], std::move(v));
                return Flow::Normal;
            }
            case Node::Kind::FilterBlock: {
                Value v = Value::of(render_body(n.bodies[0]));
                std::vector<const Node*> chain;
                for (const Node* f = n.a.get(); f != nullptr; f = f->a.get()) chain.push_back(f);
                for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
                    Args args;
                    for (const auto& x : (*it)->items) args.positional.push_back(eval(*x));
                    for (const auto& [k, x] : (*it)->kwargs) args.keywords.emplace_back(k, eval(*x));
                    v = apply_filter(*this, (*it)->name, v, args);
                }
                const Str s = v.to_str();
                check_size(out->text.size() + s.text.size());
                out->append(s);
                return Flow::Normal;
            }
            case Node::Kind::Macro:
                assign(n.name, make_macro(n, nullptr));
                return Flow::Normal;
            case Node::Kind::CallBlock: {
                const Node& call_node = *n.a;
                const Value fn = eval(*call_node.a);
                Args args;
                for (const auto& x : call_node.items) args.positional.push_back(eval(*x));
                for (const auto& [k, x] : call_node.kwargs) args.keywords.emplace_back(k, eval(*x));
                args.keywords.emplace_back("caller", make_macro(n, &n));
                const Str s = call(fn, args).to_str();
                check_size(out->text.size() + s.text.size());
                out->append(s);
                return Flow::Normal;
            }
            case Node::Kind::Break:
                return Flow::Break;
            case Node::Kind::Continue:
                return Flow::Continue;
            case Node::Kind::Scope:
                return exec(n.bodies[0]);
            default: {
                // an expression statement cannot occur: the parser makes only statements here
                throw EvalError("internal: expression node in statement position");
            }
        }
    } catch (const LimitError& e) {
        throw TemplateError(n.line, n.column, e.what(), true);
    } catch (const EvalError& e) {
        throw TemplateError(n.line, n.column, e.what());
    } catch (const std::invalid_argument& e) {
        throw TemplateError(n.line, n.column, e.what());
    }
}

Interpreter::Flow Interpreter::exec_for(const Node& n) {
    List items = iterate(eval(*n.a));
    const auto saved = frame;
    auto loop_frame = new_frame();
    loop_frame->parent = saved;
    // The loop's `if` filters before counting (loop.length counts the kept items).
    if (n.b) {
        List kept;
        frame = loop_frame;
        for (auto& item : items) {
            tick();
            frame->vars.clear();
            if (n.targets.size() == 1) {
                frame->vars[n.targets[0]] = item;
            } else {
                const List parts = iterate(item);
                for (size_t k = 0; k < n.targets.size() && k < parts.size(); ++k) frame->vars[n.targets[k]] = parts[k];
            }
            if (eval(*n.b).truthy()) kept.push_back(std::move(item));
        }
        frame = saved;
        items = std::move(kept);
    }
    if (items.empty()) {
        if (n.bodies.size() > 1) return exec(n.bodies[1]);
        return Flow::Normal;
    }
    const int64_t len = static_cast<int64_t>(items.size());
    try {
        for (int64_t i = 0; i < len; ++i) {
            tick();
            auto iter_frame = new_frame();  // each iteration starts from the outer variables
            iter_frame->parent = saved;
            frame = iter_frame;
            const Value& item = items[static_cast<size_t>(i)];
            if (n.targets.size() == 1) {
                frame->vars[n.targets[0]] = item;
            } else {
                const List parts = iterate(item);
                if (parts.size() != n.targets.size())
                    throw EvalError("cannot unpack " + std::to_string(parts.size()) + " values into " +
                                    std::to_string(n.targets.size()) + " names");
                for (size_t k = 0; k < parts.size(); ++k) frame->vars[n.targets[k]] = parts[k];
            }
            auto loop = std::make_shared<Dict>();
            loop->set(Str::markup("index0"), Value::of(i));
            loop->set(Str::markup("index"), Value::of(i + 1));
            loop->set(Str::markup("revindex0"), Value::of(len - i - 1));
            loop->set(Str::markup("revindex"), Value::of(len - i));
            loop->set(Str::markup("first"), Value::of(i == 0));
            loop->set(Str::markup("last"), Value::of(i == len - 1));
            loop->set(Str::markup("length"), Value::of(len));
            loop->set(Str::markup("depth"), Value::of(int64_t{1}));
            loop->set(Str::markup("depth0"), Value::of(int64_t{0}));
            loop->set(Str::markup("previtem"),
                      i > 0 ? items[static_cast<size_t>(i - 1)] : Value::undefined("previtem"));
            loop->set(Str::markup("nextitem"),
                      i + 1 < len ? items[static_cast<size_t>(i + 1)] : Value::undefined("nextitem"));
            loop->set(Str::markup("cycle"), Value::callable("cycle", [i](Interpreter&, const Args& a) {
                          if (a.positional.empty()) throw EvalError("loop.cycle() needs at least one value");
                          return a.positional[static_cast<size_t>(i) % a.positional.size()];
                      }));
            Value lv = Value::of(loop);
            lv.kind = Value::Kind::Namespace;  // attribute access only; prints as a loop object would not matter
            frame->vars["loop"] = std::move(lv);
            const Flow f = exec(n.bodies[0]);
            if (f == Flow::Break) break;
        }
    } catch (...) {
        frame = saved;
        throw;
    }
    frame = saved;
    return Flow::Normal;
}

Value Interpreter::make_macro(const Node& n, const Node* caller_of) {
    const Node* def = &n;
    const auto closure = frame;
    const std::string name = caller_of != nullptr ? "caller" : n.name;
    return Value::callable(name, [def, closure, name](Interpreter& in, const Args& args) {
        if (++in.depth > in.options.limits.max_depth) {
            --in.depth;
            throw LimitError("macro calls nested deeper than " + std::to_string(in.options.limits.max_depth) +
                             " (endless recursion?)");
        }
        const auto saved = in.frame;
        auto f = in.new_frame();
        f->parent = closure;
        in.frame = f;
        try {
            List varargs;
            for (size_t i = 0; i < args.positional.size(); ++i) {
                if (i < def->targets.size())
                    f->vars[def->targets[i]] = args.positional[i];
                else
                    varargs.push_back(args.positional[i]);
            }
            auto kwargs = std::make_shared<Dict>();
            for (const auto& [k, v] : args.keywords) {
                if (k == "caller") {
                    f->vars["caller"] = v;
                    continue;
                }
                bool param = false;
                for (const auto& t : def->targets) param = param || t == k;
                if (param)
                    f->vars[k] = v;
                else
                    kwargs->set(Str::markup(k), v);
            }
            for (size_t i = 0; i < def->targets.size(); ++i) {
                if (f->vars.count(def->targets[i])) continue;
                f->vars[def->targets[i]] =
                    def->defaults[i] ? in.eval(*def->defaults[i]) : Value::undefined(def->targets[i]);
            }
            f->vars["varargs"] = Value::of(std::move(varargs));
            f->vars["kwargs"] = Value::of(kwargs);
            Str result = in.render_body(def->bodies[0]);
            in.frame = saved;
            --in.depth;
            return Value::of(std::move(result));
        } catch (...) {
            in.frame = saved;
            --in.depth;
            throw;
        }
    });
}

Value Interpreter::eval(const Node& n) {
    try {
        tick();
        return eval_node(n);
    } catch (const LimitError& e) {
        throw TemplateError(n.line, n.column, e.what(), true);
    } catch (const EvalError& e) {
        throw TemplateError(n.line, n.column, e.what());
    } catch (const std::invalid_argument& e) {
        throw TemplateError(n.line, n.column, e.what());
    }
}

Value Interpreter::eval_node(const Node& n) {
    switch (n.kind) {
        case Node::Kind::Const:
            return n.value;
        case Node::Kind::Name:
            return lookup(n.name);
        case Node::Kind::Attr: {
            const Value obj = eval(*n.a);
            require_defined(obj);
            return get_attr(*this, obj, n.name);
        }
        case Node::Kind::Item: {
            const Value obj = eval(*n.a);
            require_defined(obj);
            const Value key = eval(*n.b);
            Value v = get_item(obj, key);
            if (v.is_undefined() && key.is_string()) return get_attr(*this, obj, key.text());
            return v;
        }
        case Node::Kind::Slice: {
            const Value obj = eval(*n.a);
            require_defined(obj);
            const auto bound = [&](const NodeP& p) -> std::optional<int64_t> {
                if (!p) return std::nullopt;
                const Value v = eval(*p);
                if (v.is_none()) return std::nullopt;
                if (v.kind != Value::Kind::Int && v.kind != Value::Kind::Bool)
                    throw EvalError("slice indices must be integers or None");
                return v.integer;
            };
            const auto start = bound(n.items[0]), stop = bound(n.items[1]);
            const int64_t step = bound(n.items[2]).value_or(1);
            if (step == 0) throw EvalError("slice step cannot be zero");
            const auto indices = [&](int64_t len) {
                const auto clamp = [&](std::optional<int64_t> v, int64_t dflt) {
                    if (!v) return dflt;
                    int64_t x = *v < 0 ? *v + len : *v;
                    if (step > 0) return std::clamp<int64_t>(x, 0, len);
                    return std::clamp<int64_t>(x, -1, len - 1);
                };
                std::vector<int64_t> idx;
                const int64_t b = clamp(start, step > 0 ? 0 : len - 1), e = clamp(stop, step > 0 ? len : -1);
                for (int64_t i = b; step > 0 ? i < e : i > e; i += step) idx.push_back(i);
                return idx;
            };
            if (obj.is_string()) {
                // Python slices code points; positions of each code point's first byte
                const std::string& s = obj.text();
                std::vector<size_t> starts;
                for (size_t i = 0; i < s.size(); ++i)
                    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) starts.push_back(i);
                starts.push_back(s.size());
                Str sliced;
                const auto idx = indices(static_cast<int64_t>(starts.size()) - 1);
                if (step == 1 && !idx.empty()) {
                    const size_t b = starts[static_cast<size_t>(idx.front())];
                    const size_t e = starts[static_cast<size_t>(idx.back()) + 1];
                    return Value::of(obj.str->sub(b, e - b));
                }
                for (int64_t i : idx) {
                    const size_t b = starts[static_cast<size_t>(i)];
                    sliced.append(obj.str->sub(b, starts[static_cast<size_t>(i) + 1] - b));
                }
                return Value::of(std::move(sliced));
            }
            if (obj.is_list()) {
                List picked;
                for (int64_t i : indices(static_cast<int64_t>(obj.list->size())))
                    picked.push_back((*obj.list)[static_cast<size_t>(i)]);
                return Value::of(std::move(picked), obj.tuple);
            }
            throw EvalError(std::string("'") + obj.type_name() + "' object is not subscriptable");
        }
        case Node::Kind::Call: {
            Args args;
            for (const auto& x : n.items) args.positional.push_back(eval(*x));
            for (const auto& [k, x] : n.kwargs) args.keywords.emplace_back(k, eval(*x));
            const Value fn = eval(*n.a);
            return call(fn, args);
        }
        case Node::Kind::Filter: {
            const Value v = eval(*n.a);
            Args args;
            for (const auto& x : n.items) args.positional.push_back(eval(*x));
            for (const auto& [k, x] : n.kwargs) args.keywords.emplace_back(k, eval(*x));
            return apply_filter(*this, n.name, v, args);
        }
        case Node::Kind::Test: {
            const Value v = eval(*n.a);
            Args args;
            for (const auto& x : n.items) args.positional.push_back(eval(*x));
            for (const auto& [k, x] : n.kwargs) args.keywords.emplace_back(k, eval(*x));
            return Value::of(apply_test(*this, n.name, v, args) != n.negated);
        }
        case Node::Kind::Unary: {
            const Value v = eval(*n.a);
            if (n.name == "not") return Value::of(!v.truthy());
            if (!v.is_number())
                throw EvalError(std::string("bad operand type for unary ") + n.name + ": '" + v.type_name() + "'");
            if (n.name == "+") return v.kind == Value::Kind::Bool ? Value::of(v.integer) : v;
            if (v.kind == Value::Kind::Float) return Value::of(-v.number);
            return Value::of(-v.integer);
        }
        case Node::Kind::Binary:
            return binary(n);
        case Node::Kind::Cond:
            if (eval(*n.a).truthy()) return eval(*n.b);
            return n.c ? eval(*n.c) : Value::undefined();
        case Node::Kind::Array:
        case Node::Kind::Tuple: {
            List l;
            for (const auto& x : n.items) l.push_back(eval(*x));
            return Value::of(std::move(l), n.kind == Node::Kind::Tuple);
        }
        case Node::Kind::Map: {
            auto d = std::make_shared<Dict>();
            for (size_t i = 0; i + 1 < n.items.size(); i += 2) {
                const Value k = eval(*n.items[i]);
                d->set(k, eval(*n.items[i + 1]));
            }
            return Value::of(d);
        }
        default:
            throw EvalError("internal: statement node in expression position");
    }
}

Value Interpreter::binary(const Node& n) {
    const std::string& op = n.name;
    if (op == "and") {
        Value a = eval(*n.a);
        return a.truthy() ? eval(*n.b) : a;
    }
    if (op == "or") {
        Value a = eval(*n.a);
        return a.truthy() ? a : eval(*n.b);
    }
    const Value a = eval(*n.a);
    const Value b = eval(*n.b);
    if (op == "==") return Value::of(equal(a, b));
    if (op == "!=") return Value::of(!equal(a, b));
    if (op == "<") return Value::of(less(a, b));
    if (op == ">") return Value::of(less(b, a));
    if (op == "<=") return Value::of(!less(b, a));
    if (op == ">=") return Value::of(!less(a, b));
    if (op == "in" || op == "not in") {
        bool found = false;
        if (b.is_string()) {
            if (!a.is_string())
                throw EvalError(std::string("'in <string>' requires string as left operand, not ") + a.type_name());
            found = b.text().find(a.text()) != std::string::npos;
        } else if (b.is_list()) {
            for (const auto& x : *b.list) found = found || equal(a, x);
        } else if (b.is_mapping()) {
            found = b.dict->find(a) != nullptr;
        } else if (!b.is_undefined()) {
            throw EvalError(std::string("argument of type '") + b.type_name() + "' is not iterable");
        }
        return Value::of(op == "in" ? found : !found);
    }
    if (op == "~") {
        Str s = a.to_str();
        s.append(b.to_str());
        check_size(s.text.size());
        return Value::of(std::move(s));
    }
    if (op == "+") {
        if (a.is_string() && b.is_string()) {
            check_size(a.text().size() + b.text().size());
            if (a.safe != b.safe) {
                // Markup + str escapes the plain operand (markupsafe), and the result stays Markup
                const auto escaped = [](const Value& x) {
                    return x.safe ? *x.str : Str::derived(html_escape(x.text()), *x.str);
                };
                Str s = escaped(a);
                s.append(escaped(b));
                Value m = Value::of(std::move(s));
                m.safe = true;
                return m;
            }
            Str s = *a.str;
            s.append(*b.str);
            Value r = Value::of(std::move(s));
            r.safe = a.safe;
            return r;
        }
        if (a.is_list() && b.is_list() && !a.generator && !b.generator) {
            check_items(a.list->size() + b.list->size());
            List l = *a.list;
            l.insert(l.end(), b.list->begin(), b.list->end());
            return Value::of(std::move(l), a.tuple);
        }
        if (a.is_number() && b.is_number()) {
            if (a.kind == Value::Kind::Float || b.kind == Value::Kind::Float)
                return Value::of(a.as_double() + b.as_double());
            return Value::of(a.integer + b.integer);
        }
        require_defined(a);
        require_defined(b);
        type_error("+", a, b);
    }
    if (op == "*") {
        const Value* seq = a.is_string() || a.is_list() ? &a : b.is_string() || b.is_list() ? &b : nullptr;
        if (seq != nullptr) {
            const Value& count = seq == &a ? b : a;
            if (count.kind != Value::Kind::Int && count.kind != Value::Kind::Bool) type_error("*", a, b);
            const int64_t k = std::max<int64_t>(0, count.integer);
            if (seq->is_string()) {
                check_size(seq->text().size() * static_cast<size_t>(k));
                Str s;
                for (int64_t i = 0; i < k; ++i) s.append(*seq->str);
                return Value::of(std::move(s));
            }
            check_items(seq->list->size() * static_cast<size_t>(k));
            List l;
            for (int64_t i = 0; i < k; ++i) l.insert(l.end(), seq->list->begin(), seq->list->end());
            return Value::of(std::move(l));
        }
        if (!a.is_number() || !b.is_number()) type_error("*", a, b);
        if (a.kind == Value::Kind::Float || b.kind == Value::Kind::Float)
            return Value::of(a.as_double() * b.as_double());
        return Value::of(a.integer * b.integer);
    }
    if (op == "%" && a.is_string()) return percent_format(*this, a, b);
    if (!a.is_number() || !b.is_number()) type_error(op.c_str(), a, b);
    const bool fl = a.kind == Value::Kind::Float || b.kind == Value::Kind::Float;
    if (op == "-") return fl ? Value::of(a.as_double() - b.as_double()) : Value::of(a.integer - b.integer);
    if (op == "/") {
        if (b.as_double() == 0.0) throw EvalError("division by zero");
        return Value::of(a.as_double() / b.as_double());
    }
    if (op == "//") {
        if (b.as_double() == 0.0) throw EvalError("integer division or modulo by zero");
        if (fl) return Value::of(std::floor(a.as_double() / b.as_double()));
        int64_t q = a.integer / b.integer;
        if ((a.integer % b.integer != 0) && ((a.integer < 0) != (b.integer < 0))) --q;
        return Value::of(q);
    }
    if (op == "%") return modulo(a, b);
    if (op == "**") {
        if (!fl && b.integer >= 0) {
            int64_t r = 1;
            for (int64_t i = 0; i < b.integer && i < 64; ++i) r *= a.integer;
            return Value::of(r);
        }
        return Value::of(std::pow(a.as_double(), b.as_double()));
    }
    throw EvalError("unknown operator '" + op + "'");
}

Template Template::parse(std::string_view source) {
    Template t;
    t.body_ = std::make_shared<const Body>(tmpl::parse(source));
    return t;
}

Str Template::render(const Dict& context, const RenderOptions& options) const {
    struct LimitScope {
        size_t saved;
        explicit LimitScope(size_t limit) : saved(string_limit()) { string_limit() = limit; }
        ~LimitScope() { string_limit() = saved; }
    } scope(options.limits.max_output);
    Interpreter in(context, options);
    Str out;
    in.out = &out;
    in.exec(*body_);
    return out;
}

}  // namespace basalt::tmpl
