#include "parser.hpp"

#include <set>

#include "error.hpp"
#include "lexer.hpp"

namespace basalt::tmpl {
namespace {

using T = Token::Type;
constexpr int kMaxNesting = 256;

class Parser {
  public:
    explicit Parser(std::vector<Token> tokens) : t_(std::move(tokens)) {}

    Body parse_template() {
        std::string end;
        Body body = parse_body({}, end);
        if (!end.empty()) fail(cur(), "unexpected '" + end + "'");
        return body;
    }

  private:
    std::vector<Token> t_;
    size_t p_ = 0;
    int depth_ = 0;

    struct Guard {
        Parser& p;
        explicit Guard(Parser& parser, const Token& at) : p(parser) {
            if (++p.depth_ > kMaxNesting) p.fail(at, "nesting deeper than " + std::to_string(kMaxNesting));
        }
        ~Guard() { --p.depth_; }
    };

    const Token& cur() const { return t_[p_]; }
    const Token& peek(size_t k = 1) const { return t_[std::min(p_ + k, t_.size() - 1)]; }
    [[noreturn]] void fail(const Token& at, const std::string& msg) const {
        throw TemplateError(at.line, at.column, msg);
    }
    bool is_op(const char* op) const { return cur().type == T::Op && cur().text == op; }
    bool is_name(const char* n) const { return cur().type == T::Name && cur().text == n; }
    bool accept_op(const char* op) {
        if (!is_op(op)) return false;
        ++p_;
        return true;
    }
    bool accept_name(const char* n) {
        if (!is_name(n)) return false;
        ++p_;
        return true;
    }
    void expect_op(const char* op) {
        if (!accept_op(op)) fail(cur(), std::string("expected '") + op + "', found " + describe(cur()));
    }
    std::string expect_name() {
        if (cur().type != T::Name) fail(cur(), "expected a name, found " + describe(cur()));
        return t_[p_++].text;
    }
    void expect_block_end() {
        if (cur().type != T::BlockEnd) fail(cur(), "expected end of tag '%}', found " + describe(cur()));
        ++p_;
    }
    static std::string describe(const Token& t) {
        switch (t.type) {
            case T::Name:
                return "'" + t.text + "'";
            case T::Op:
                return "'" + t.text + "'";
            case T::String:
                return "a string";
            case T::Int:
            case T::Float:
                return "a number";
            case T::VarEnd:
                return "'}}'";
            case T::BlockEnd:
                return "'%}'";
            case T::Eof:
                return "the end of the template";
            default:
                return "text";
        }
    }
    NodeP node(Node::Kind k, const Token& at) {
        auto n = std::make_unique<Node>();
        n->kind = k;
        n->line = at.line;
        n->column = at.column;
        return n;
    }

    // Statements up to one of the end tags (the tag's name is left in end and consumed with its '%}' unless it is
    // elif/else, whose parsing continues at the tag's expression).
    Body parse_body(const std::set<std::string>& ends, std::string& end) {
        Body body;
        end.clear();
        while (cur().type != T::Eof) {
            const Token& tok = cur();
            if (tok.type == T::Text) {
                auto n = node(Node::Kind::Text, tok);
                n->value = Value::markup(tok.text);
                body.push_back(std::move(n));
                ++p_;
            } else if (tok.type == T::VarBegin) {
                ++p_;
                auto n = node(Node::Kind::Output, tok);
                n->a = parse_tuple(true);
                if (cur().type != T::VarEnd) fail(cur(), "expected '}}', found " + describe(cur()));
                ++p_;
                body.push_back(std::move(n));
            } else if (tok.type == T::BlockBegin) {
                const Token& kw = peek();
                if (kw.type != T::Name) fail(kw, "expected a tag name, found " + describe(kw));
                if (ends.count(kw.text)) {
                    p_ += 2;
                    end = kw.text;
                    return body;
                }
                ++p_;
                body.push_back(parse_statement());
            } else {
                fail(tok, "unexpected " + describe(tok));
            }
        }
        if (!ends.empty()) {
            std::string want;
            for (const auto& e : ends) want += (want.empty() ? "'" : " or '") + e + "'";
            fail(cur(), "the template ends inside a block: expected " + want);
        }
        return body;
    }

    NodeP parse_statement() {
        const Token& kw = cur();
        Guard g(*this, kw);
        const std::string name = kw.text;
        ++p_;
        std::string end;
        if (name == "if") {
            auto n = node(Node::Kind::If, kw);
            n->conds.push_back(parse_tuple(true));
            expect_block_end();
            while (true) {
                n->bodies.push_back(parse_body({"elif", "else", "endif"}, end));
                if (end == "elif") {
                    n->conds.push_back(parse_tuple(true));
                    expect_block_end();
                    continue;
                }
                expect_block_end();
                if (end == "else") {
                    n->bodies.push_back(parse_body({"endif"}, end));
                    expect_block_end();
                }
                break;
            }
            return n;
        }
        if (name == "for") {
            auto n = node(Node::Kind::For, kw);
            parse_targets(n->targets);
            if (!accept_name("in")) fail(cur(), "expected 'in' in a for tag, found " + describe(cur()));
            n->a = parse_tuple(false);
            if (accept_name("if")) n->b = parse_expression(true);
            if (accept_name("recursive")) n->flag = true;
            expect_block_end();
            n->bodies.push_back(parse_body({"else", "endfor"}, end));
            expect_block_end();
            if (end == "else") {
                n->bodies.push_back(parse_body({"endfor"}, end));
                expect_block_end();
            }
            return n;
        }
        if (name == "set") {
            const Token& at = cur();
            if (cur().type == T::Name && peek().type == T::Op && peek().text == "." && peek(2).type == T::Name &&
                peek(3).type == T::Op && peek(3).text == "=") {
                auto n = node(Node::Kind::Set, kw);
                n->name = t_[p_].text;
                n->targets.push_back(t_[p_ + 2].text);
                p_ += 4;
                n->a = parse_tuple(true);
                expect_block_end();
                return n;
            }
            std::vector<std::string> targets;
            parse_targets(targets);
            if (accept_op("=")) {
                auto n = node(Node::Kind::Set, kw);
                n->targets = std::move(targets);
                n->a = parse_tuple(true);
                expect_block_end();
                return n;
            }
            if (targets.size() != 1) fail(at, "a block set assigns one name");
            auto n = node(Node::Kind::SetBlock, kw);
            n->targets = std::move(targets);
            if (is_op("|")) n->a = parse_filter_chain();
            expect_block_end();
            n->bodies.push_back(parse_body({"endset"}, end));
            expect_block_end();
            return n;
        }
        if (name == "macro") {
            auto n = node(Node::Kind::Macro, kw);
            n->name = expect_name();
            parse_params(*n);
            expect_block_end();
            n->bodies.push_back(parse_body({"endmacro"}, end));
            if (cur().type == T::Name) ++p_;  // {% endmacro name %}
            expect_block_end();
            return n;
        }
        if (name == "call") {
            auto n = node(Node::Kind::CallBlock, kw);
            if (is_op("(")) parse_params(*n);
            n->a = parse_expression(true);
            if (n->a->kind != Node::Kind::Call) fail(kw, "a call tag needs a macro call");
            expect_block_end();
            n->bodies.push_back(parse_body({"endcall"}, end));
            expect_block_end();
            return n;
        }
        if (name == "filter") {
            auto n = node(Node::Kind::FilterBlock, kw);
            --p_;  // parse_filter_chain starts at a '|' or at the filter's name
            t_[p_].type = T::Op;
            t_[p_].text = "|";
            n->a = parse_filter_chain();
            expect_block_end();
            n->bodies.push_back(parse_body({"endfilter"}, end));
            expect_block_end();
            return n;
        }
        if (name == "break" || name == "continue") {
            auto n = node(name == "break" ? Node::Kind::Break : Node::Kind::Continue, kw);
            expect_block_end();
            return n;
        }
        if (name == "generation" || name == "block") {
            // HF's AssistantTracker marks {% generation %}; rendering is unchanged. {% block name %} renders in place.
            auto n = node(Node::Kind::Scope, kw);
            if (name == "block") expect_name();
            expect_block_end();
            n->bodies.push_back(parse_body({"end" + name}, end));
            if (cur().type == T::Name) ++p_;
            expect_block_end();
            return n;
        }
        fail(kw, "unknown tag '" + name + "'");
    }

    void parse_targets(std::vector<std::string>& out) {
        const bool paren = accept_op("(");
        do {
            out.push_back(expect_name());
        } while (accept_op(","));
        if (paren) expect_op(")");
    }

    void parse_params(Node& n) {
        expect_op("(");
        while (!is_op(")")) {
            n.targets.push_back(expect_name());
            n.defaults.push_back(accept_op("=") ? parse_expression(true) : nullptr);
            if (!accept_op(",")) break;
        }
        expect_op(")");
    }

    // '|' f1(args) '|' f2 ... applied to nothing (the block's output is the innermost operand).
    NodeP parse_filter_chain() {
        NodeP n;
        while (is_op("|")) n = parse_filter(std::move(n));
        return n;
    }

    NodeP parse_filter(NodeP operand) {
        const Token& at = cur();
        expect_op("|");
        auto n = node(Node::Kind::Filter, at);
        n->name = expect_name();
        while (accept_op(".")) n->name += "." + expect_name();
        n->a = std::move(operand);
        if (is_op("(")) parse_call_args(*n);
        return n;
    }

    void parse_call_args(Node& n) {
        expect_op("(");
        while (!is_op(")")) {
            if (cur().type == T::Name && peek().type == T::Op && peek().text == "=") {
                std::string k = t_[p_].text;
                p_ += 2;
                n.kwargs.emplace_back(std::move(k), parse_expression(true));
            } else {
                if (!n.kwargs.empty()) fail(cur(), "a positional argument follows a keyword argument");
                n.items.push_back(parse_expression(true));
            }
            if (!accept_op(",")) break;
        }
        expect_op(")");
    }

    NodeP parse_tuple(bool with_cond) {
        const Token& at = cur();
        NodeP first = parse_expression(with_cond);
        if (!is_op(",")) return first;
        auto t = node(Node::Kind::Tuple, at);
        t->items.push_back(std::move(first));
        while (accept_op(",")) {
            if (cur().type == T::VarEnd || cur().type == T::BlockEnd || is_op(")") || is_name("if")) break;
            t->items.push_back(parse_expression(with_cond));
        }
        return t;
    }

    NodeP parse_expression(bool with_cond) {
        Guard g(*this, cur());
        NodeP e = parse_or();
        if (!with_cond) return e;
        while (is_name("if")) {
            const Token& at = cur();
            ++p_;
            auto n = node(Node::Kind::Cond, at);
            n->a = parse_or();
            n->b = std::move(e);
            if (accept_name("else")) n->c = parse_expression(true);
            e = std::move(n);
        }
        return e;
    }

    NodeP binary(const Token& at, std::string op, NodeP l, NodeP r) {
        auto n = node(Node::Kind::Binary, at);
        n->name = std::move(op);
        n->a = std::move(l);
        n->b = std::move(r);
        return n;
    }

    NodeP parse_or() {
        NodeP l = parse_and();
        while (is_name("or")) {
            const Token& at = cur();
            ++p_;
            l = binary(at, "or", std::move(l), parse_and());
        }
        return l;
    }
    NodeP parse_and() {
        NodeP l = parse_not();
        while (is_name("and")) {
            const Token& at = cur();
            ++p_;
            l = binary(at, "and", std::move(l), parse_not());
        }
        return l;
    }
    NodeP parse_not() {
        if (is_name("not")) {
            const Token& at = cur();
            Guard g(*this, at);
            ++p_;
            auto n = node(Node::Kind::Unary, at);
            n->name = "not";
            n->a = parse_not();
            return n;
        }
        return parse_compare();
    }
    NodeP parse_compare() {
        NodeP l = parse_math1();
        NodeP chain;
        while (true) {
            const Token& at = cur();
            std::string op;
            if (cur().type == T::Op && (cur().text == "==" || cur().text == "!=" || cur().text == "<" ||
                                        cur().text == ">" || cur().text == "<=" || cur().text == ">=")) {
                op = cur().text;
                ++p_;
            } else if (is_name("in")) {
                op = "in";
                ++p_;
            } else if (is_name("not") && peek().type == T::Name && peek().text == "in") {
                op = "not in";
                p_ += 2;
            } else {
                break;
            }
            NodeP r = parse_math1();
            // a < b < c is (a < b) and (b < c), as in Python (b is evaluated twice; templates do not chain calls).
            NodeP lhs = chain ? clone_operand(*chain) : std::move(l);
            NodeP cmp = binary(at, op, std::move(lhs), std::move(r));
            if (!chain) {
                chain = std::move(cmp);
            } else {
                chain = binary(at, "and", std::move(chain), std::move(cmp));
            }
        }
        return chain ? std::move(chain) : std::move(l);
    }
    // The right operand of the last comparison of a chain, re-parsed (comparison chains are rare and short).
    NodeP clone_operand(const Node& chain) {
        const Node* last = &chain;
        while (last->name == "and") last = last->b.get();
        return clone(*last->b);
    }
    static NodeP clone(const Node& n) {
        auto c = std::make_unique<Node>();
        c->kind = n.kind;
        c->line = n.line;
        c->column = n.column;
        c->name = n.name;
        c->value = n.value;
        if (n.a) c->a = clone(*n.a);
        if (n.b) c->b = clone(*n.b);
        if (n.c) c->c = clone(*n.c);
        for (const auto& i : n.items) c->items.push_back(i ? clone(*i) : nullptr);
        for (const auto& [k, v] : n.kwargs) c->kwargs.emplace_back(k, clone(*v));
        c->negated = n.negated;
        return c;
    }
    NodeP parse_math1() {
        NodeP l = parse_concat();
        while (is_op("+") || is_op("-")) {
            const Token& at = cur();
            std::string op = cur().text;
            ++p_;
            l = binary(at, op, std::move(l), parse_concat());
        }
        return l;
    }
    NodeP parse_concat() {
        NodeP l = parse_math2();
        while (is_op("~")) {
            const Token& at = cur();
            ++p_;
            l = binary(at, "~", std::move(l), parse_math2());
        }
        return l;
    }
    NodeP parse_math2() {
        NodeP l = parse_pow();
        while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
            const Token& at = cur();
            std::string op = cur().text;
            ++p_;
            l = binary(at, op, std::move(l), parse_pow());
        }
        return l;
    }
    NodeP parse_pow() {
        NodeP l = parse_unary(true);
        while (is_op("**")) {
            const Token& at = cur();
            ++p_;
            l = binary(at, "**", std::move(l), parse_unary(true));
        }
        return l;
    }
    NodeP parse_unary(bool with_filter) {
        const Token& at = cur();
        Guard g(*this, at);
        NodeP n;
        if (is_op("-") || is_op("+")) {
            ++p_;
            n = node(Node::Kind::Unary, at);
            n->name = at.text;
            n->a = parse_unary(false);
        } else {
            n = parse_primary();
        }
        n = parse_postfix(std::move(n));
        if (with_filter) n = parse_filter_expr(std::move(n));
        return n;
    }
    NodeP parse_primary() {
        const Token& at = cur();
        switch (at.type) {
            case T::Name: {
                ++p_;
                auto n = node(Node::Kind::Const, at);
                if (at.text == "true" || at.text == "True") {
                    n->value = Value::of(true);
                } else if (at.text == "false" || at.text == "False") {
                    n->value = Value::of(false);
                } else if (at.text == "none" || at.text == "None") {
                    n->value = Value::none();
                } else {
                    n->kind = Node::Kind::Name;
                    n->name = at.text;
                }
                return n;
            }
            case T::String: {
                std::string s;
                while (cur().type == T::String) s += t_[p_++].text;  // adjacent literals concatenate
                auto n = node(Node::Kind::Const, at);
                n->value = Value::markup(std::move(s));
                return n;
            }
            case T::Int: {
                ++p_;
                auto n = node(Node::Kind::Const, at);
                n->value = Value::of(at.integer);
                return n;
            }
            case T::Float: {
                ++p_;
                auto n = node(Node::Kind::Const, at);
                n->value = Value::of(at.number);
                return n;
            }
            case T::Op:
                if (at.text == "(") {
                    ++p_;
                    if (accept_op(")")) return node(Node::Kind::Tuple, at);
                    NodeP e = parse_expression(true);
                    if (is_op(",")) {
                        auto t = node(Node::Kind::Tuple, at);
                        t->items.push_back(std::move(e));
                        while (accept_op(",")) {
                            if (is_op(")")) break;
                            t->items.push_back(parse_expression(true));
                        }
                        e = std::move(t);
                    }
                    expect_op(")");
                    return e;
                }
                if (at.text == "[") {
                    ++p_;
                    auto n = node(Node::Kind::Array, at);
                    while (!is_op("]")) {
                        n->items.push_back(parse_expression(true));
                        if (!accept_op(",")) break;
                    }
                    expect_op("]");
                    return n;
                }
                if (at.text == "{") {
                    ++p_;
                    auto n = node(Node::Kind::Map, at);
                    while (!is_op("}")) {
                        n->items.push_back(parse_expression(true));
                        expect_op(":");
                        n->items.push_back(parse_expression(true));
                        if (!accept_op(",")) break;
                    }
                    expect_op("}");
                    return n;
                }
                break;
            default:
                break;
        }
        fail(at, "unexpected " + describe(at));
    }
    NodeP parse_postfix(NodeP n) {
        while (true) {
            const Token& at = cur();
            if (is_op(".")) {
                ++p_;
                if (cur().type == T::Int) {
                    auto i = node(Node::Kind::Item, at);
                    i->a = std::move(n);
                    i->b = node(Node::Kind::Const, cur());
                    i->b->value = Value::of(cur().integer);
                    ++p_;
                    n = std::move(i);
                    continue;
                }
                auto a = node(Node::Kind::Attr, at);
                a->a = std::move(n);
                a->name = expect_name();
                n = std::move(a);
            } else if (is_op("[")) {
                ++p_;
                n = parse_subscript(std::move(n), at);
            } else if (is_op("(")) {
                auto c = node(Node::Kind::Call, at);
                c->line = n->line;  // a call is reported where its callee starts
                c->column = n->column;
                c->a = std::move(n);
                parse_call_args(*c);
                n = std::move(c);
            } else {
                return n;
            }
        }
    }
    NodeP parse_subscript(NodeP obj, const Token& at) {
        NodeP start, stop, step;
        bool slice = false;
        if (!is_op(":")) start = parse_expression(true);
        if (accept_op(":")) {
            slice = true;
            if (!is_op("]") && !is_op(":")) stop = parse_expression(true);
            if (accept_op(":") && !is_op("]")) step = parse_expression(true);
        }
        expect_op("]");
        if (!slice) {
            auto i = node(Node::Kind::Item, at);
            i->a = std::move(obj);
            i->b = std::move(start);
            return i;
        }
        auto s = node(Node::Kind::Slice, at);
        s->a = std::move(obj);
        s->items.push_back(std::move(start));
        s->items.push_back(std::move(stop));
        s->items.push_back(std::move(step));
        return s;
    }
    NodeP parse_filter_expr(NodeP n) {
        while (true) {
            if (is_op("|")) {
                n = parse_filter(std::move(n));
            } else if (is_name("is")) {
                const Token& at = cur();
                ++p_;
                auto t = node(Node::Kind::Test, at);
                t->negated = accept_name("not");
                t->name = expect_name();
                while (accept_op(".")) t->name += "." + expect_name();
                t->a = std::move(n);
                const Token& nx = cur();
                if (is_op("(")) {
                    parse_call_args(*t);
                } else if ((nx.type == T::Name || nx.type == T::String || nx.type == T::Int || nx.type == T::Float ||
                            is_op("[") || is_op("{")) &&
                           !(nx.type == T::Name &&
                             (nx.text == "else" || nx.text == "or" || nx.text == "and" || nx.text == "if" ||
                              nx.text == "in" || nx.text == "is" || nx.text == "not"))) {
                    t->items.push_back(parse_postfix(parse_primary()));
                }
                n = std::move(t);
            } else if (is_op("(")) {
                const Token& at = cur();
                auto c = node(Node::Kind::Call, at);
                c->a = std::move(n);
                parse_call_args(*c);
                n = std::move(c);
            } else {
                return n;
            }
        }
    }
};

}  // namespace

Body parse(std::string_view source) {
    return Parser(lex(source)).parse_template();
}

}  // namespace basalt::tmpl
