// The syntax tree of a parsed template: expressions and statements in one node type (what each kind uses of
// the fields is listed beside the kind). Built by parse(); immutable afterwards, so one parsed template renders
// on many threads at once.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "value.hpp"

namespace basalt::tmpl {

struct Node;
using NodeP = std::unique_ptr<Node>;
using Body = std::vector<NodeP>;

struct Node {
    enum class Kind {
        // expressions
        Const,   // value
        Name,    // name
        Attr,    // a.name
        Item,    // a[b]
        Slice,   // a[b:c:d] with b, c, d in items (nullptr where omitted)
        Call,    // a(items..., kwargs...)
        Filter,  // a | name(items..., kwargs...); a is nullptr in a filter block
        Test,    // a is [not] name(items...); negated
        Unary,   // name ("not", "-", "+") a
        Binary,  // a name b: + - * / // % ** ~ and or == != < > <= >= in "not in"
        Cond,    // b if a else c (c may be nullptr)
        Array,   // [items]
        Tuple,   // (items)
        Map,     // {items[0]: items[1], ...}
        // statements
        Text,         // value (a markup string)
        Output,       // {{ a }}
        If,           // conds[i] -> bodies[i]; bodies.size() > conds.size(): the else body
        For,          // for targets in a [if b]: bodies[0], else bodies[1]; flag: recursive
        Set,          // set targets = a; with name: set name.targets[0] = a (namespace attribute)
        SetBlock,     // set targets[0] [| filter chain a]: bodies[0]
        Macro,        // macro name(targets, defaults): bodies[0]
        CallBlock,    // call(targets, defaults) a: bodies[0] is the caller
        FilterBlock,  // filter a (a chain of Filter nodes whose innermost operand is nullptr): bodies[0]
        Break,
        Continue,
        Scope,  // a block that only groups its body (generation, with, block): bodies[0]
    };
    Kind kind;
    int line = 0;
    int column = 0;
    std::string name;
    Value value;
    NodeP a, b, c;
    std::vector<NodeP> items;
    std::vector<std::pair<std::string, NodeP>> kwargs;
    std::vector<std::string> targets;
    std::vector<NodeP> defaults;
    std::vector<NodeP> conds;
    std::vector<Body> bodies;
    bool negated = false;
    bool flag = false;
};

}  // namespace basalt::tmpl
