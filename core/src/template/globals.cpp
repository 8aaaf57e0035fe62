// The global functions a chat template may call: Jinja's range, namespace, dict, cycler, joiner and lipsum-free
// rest, and Hugging Face's raise_exception and strftime_now. None touches anything outside the interpreter
// (strftime_now reads the clock, or the fixed time the caller gave).
#include <ctime>

#include "interpreter.hpp"

namespace basalt::tmpl {

void add_globals(Interpreter& in) {
    in.globals["range"] = Value::callable("range", [](Interpreter& it, const Args& a) {
        int64_t start = 0, stop = 0, step = 1;
        const auto num = [](const Value& v) {
            if (v.kind != Value::Kind::Int && v.kind != Value::Kind::Bool)
                throw EvalError(std::string("range() takes integers, not '") + v.type_name() + "'");
            return v.integer;
        };
        if (a.positional.size() == 1) {
            stop = num(a.positional[0]);
        } else if (a.positional.size() >= 2) {
            start = num(a.positional[0]);
            stop = num(a.positional[1]);
            if (a.positional.size() >= 3) step = num(a.positional[2]);
        } else {
            throw EvalError("range expected at least 1 argument");
        }
        if (step == 0) throw EvalError("range() arg 3 must not be zero");
        const int64_t span = step > 0 ? stop - start : start - stop;
        if (span > 0)
            it.check_items(static_cast<size_t>((span + (step > 0 ? step : -step) - 1) / (step > 0 ? step : -step)));
        List out;
        for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
            it.tick();
            out.push_back(Value::of(i));
        }
        return Value::of(std::move(out));
    });
    in.globals["namespace"] = Value::callable("namespace", [](Interpreter&, const Args& a) {
        auto d = std::make_shared<Dict>();
        for (const auto& p : a.positional)
            if (p.is_mapping())
                for (const auto& [k, v] : p.dict->items) d->set(k, v);
        for (const auto& [k, v] : a.keywords) d->set(Str::markup(k), v);
        Value v = Value::of(d);
        v.kind = Value::Kind::Namespace;
        return v;
    });
    in.globals["dict"] = Value::callable("dict", [](Interpreter&, const Args& a) {
        auto d = std::make_shared<Dict>();
        for (const auto& p : a.positional)
            if (p.is_mapping())
                for (const auto& [k, v] : p.dict->items) d->set(k, v);
        for (const auto& [k, v] : a.keywords) d->set(Str::markup(k), v);
        return Value::of(d);
    });
    in.globals["raise_exception"] = Value::callable("raise_exception", [](Interpreter&, const Args& a) -> Value {
        throw EvalError("the template raised an exception: " +
                        (a.positional.empty() ? std::string() : a.positional[0].to_str().text));
    });
    in.globals["strftime_now"] = Value::callable("strftime_now", [](Interpreter& it, const Args& a) {
        if (a.positional.empty() || !a.positional[0].is_string())
            throw EvalError("strftime_now(format) needs a format");
        const std::time_t now =
            it.options.now_unix >= 0 ? static_cast<std::time_t>(it.options.now_unix) : std::time(nullptr);
        std::tm tm{};
        gmtime_r(&now, &tm);
        char buf[256];
        const size_t n = std::strftime(buf, sizeof buf, a.positional[0].text().c_str(), &tm);
        return Value::markup(std::string(buf, n));
    });
    in.globals["cycler"] = Value::callable("cycler", [](Interpreter&, const Args& a) {
        auto items = std::make_shared<List>(a.positional);
        auto pos = std::make_shared<size_t>(0);
        auto d = std::make_shared<Dict>();
        d->set(Str::markup("next"), Value::callable("next", [items, pos](Interpreter&, const Args&) {
                   if (items->empty()) return Value::none();
                   const Value v = (*items)[*pos % items->size()];
                   ++*pos;
                   return v;
               }));
        Value v = Value::of(d);
        v.kind = Value::Kind::Namespace;
        return v;
    });
    in.globals["joiner"] = Value::callable("joiner", [](Interpreter&, const Args& a) {
        const Value sep = a.positional.empty() ? Value::markup(", ") : a.positional[0];
        auto used = std::make_shared<bool>(false);
        return Value::callable("joiner", [sep, used](Interpreter&, const Args&) {
            if (!*used) {
                *used = true;
                return Value::markup("");
            }
            return sep;
        });
    });
}

}  // namespace basalt::tmpl
