// The tree-walking evaluator behind Template::render, and the built-ins it dispatches to (filters.cpp, tests.cpp,
// methods.cpp, globals.cpp). One Interpreter per render call: not shared between threads.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "ast.hpp"
#include "error.hpp"
#include "template.hpp"
#include "value.hpp"

namespace basalt::tmpl {

struct Frame {
    std::unordered_map<std::string, Value> vars;
    std::shared_ptr<Frame> parent;
};

struct Interpreter {
    enum class Flow { Normal, Break, Continue };

    Interpreter(const Dict& context, const RenderOptions& options);
    // Clears every frame still alive: a macro's closure is the frame that holds the macro, a cycle of shared_ptrs
    // that would otherwise outlive the render.
    ~Interpreter();
    Interpreter(const Interpreter&) = delete;
    Interpreter& operator=(const Interpreter&) = delete;

    const Dict& context;
    const RenderOptions& options;
    std::unordered_map<std::string, Value> globals;
    std::shared_ptr<Frame> frame;
    Str* out = nullptr;
    uint64_t steps = 0;
    uint32_t depth = 0;
    std::chrono::steady_clock::time_point started;

    Flow exec(const Body& body);
    Value eval(const Node& n);
    // Counts one step and checks the step and time limits (throws EvalError).
    void tick();
    // Checks a string about to be built or written against the output limit (throws EvalError).
    void check_size(size_t bytes) const;
    // Checks a list about to be built against the item limit (the output limit / 64; throws LimitError).
    void check_items(size_t n) const;
    Value lookup(const std::string& name) const;
    void assign(const std::string& name, Value v);
    // Calls a callable value (macros, loop.cycle, globals, bound methods).
    Value call(const Value& fn, const Args& args);
    // A new empty frame, remembered (weakly) so that the destructor can break closure cycles through it.
    std::shared_ptr<Frame> new_frame();

  private:
    std::vector<std::weak_ptr<Frame>> frames_made;
    size_t compact_at = 64;
    Flow exec_node(const Node& n);
    Value eval_node(const Node& n);
    Flow exec_for(const Node& n);
    Value make_macro(const Node& n, const Node* caller_of);
    Value binary(const Node& n);
    Str render_body(const Body& body);
};

// Attribute access a.name as Jinja's sandbox does it: methods of strings, lists and dicts, then dict items,
// namespace attributes; undefined when there is none.
Value get_attr(Interpreter& in, const Value& obj, const std::string& name);
// Subscript a[key]: list/string index (negative from the end), dict item; undefined when absent.
Value get_item(const Value& obj, const Value& key);
// A method of obj (strings: strip, split, startswith...; lists: index, count; dicts: items, keys, values, get) bound
// to it, or undefined when obj has no such method.
Value bound_method(const Value& obj, const std::string& name);
// Filter `name` applied to v.
Value apply_filter(Interpreter& in, const std::string& name, const Value& v, const Args& args);
// Test `name` applied to v (is defined, is string, ...).
bool apply_test(Interpreter& in, const std::string& name, const Value& v, const Args& args);
// The global functions: range, namespace, dict, raise_exception, strftime_now, joiner, cycler.
void add_globals(Interpreter& in);
// Python's iteration of a value: list items, dict keys, string characters (UTF-8 code points), nothing for
// undefined; throws EvalError for other types.
List iterate(const Value& v);

}  // namespace basalt::tmpl
