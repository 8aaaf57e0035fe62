// A context-free grammar over Unicode code points in llama.cpp's GBNF dialect, compiled to a flat form the
// matcher walks: every alternative of every rule is a run of elements ending with End; an element matches one
// code point out of a set (Chars) or expands a rule (Ref). Repetitions and groups become helper rules. No part
// of this crosses the ABI.
#pragma once

#include <basalt/sdk/gbnf-literal.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace basalt::grammar {

// A grammar that does not parse or cannot be used; what() names the position (line:column) or the rule.
struct GrammarError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// A set of code points: sorted, merged, disjoint inclusive ranges, or their complement.
struct CharSet {
    std::vector<std::pair<uint32_t, uint32_t>> ranges;
    bool negated = false;

    bool operator==(const CharSet& o) const { return negated == o.negated && ranges == o.ranges; }
    // Whether code point cp is in the set.
    bool matches(uint32_t cp) const;
    // Whether some code point in [lo, hi] is in the set (a partial UTF-8 character that may still match).
    bool matches_any(uint32_t lo, uint32_t hi) const;
    // Whether every code point in [lo, hi] is in the set.
    bool matches_all(uint32_t lo, uint32_t hi) const;
    // Sorts and merges the ranges.
    void normalise();
};

enum class ElemType : uint8_t { End, Ref, Chars };

struct Elem {
    ElemType type = ElemType::End;
    uint32_t value = 0;  // Ref: rule id; Chars: index into Grammar::sets
};

struct Grammar {
    std::vector<std::string> rule_names;           // rule id -> name (helper rules get derived names)
    std::vector<std::vector<uint32_t>> rule_alts;  // rule id -> start position of each alternative in elems
    std::vector<Elem> elems;                       // every alternative's elements, each run ended by End
    std::vector<CharSet> sets;
    uint32_t root = 0;

    // The rule id of `name`, or UINT32_MAX.
    uint32_t find(std::string_view name) const;
};

// Parses GBNF text (rules `name ::= alternatives`, "literals", [classes], [^negated], ., groups, * + ? {m,n},
// # comments, escapes \n \r \t \\ \" \] \xHH \uHHHH \UHHHHHHHH) with start rule `root`. Throws GrammarError for a
// syntax error (line:column), an undefined or missing rule, left recursion, or a grammar that matches nothing.
Grammar parse_gbnf(std::string_view text);

// Quotes bytes as a GBNF string literal ("..." with escapes), for generators of GBNF text (the SDK's, shared with
// the server's tool-call grammars).
using sdk::gbnf_literal;

}  // namespace basalt::grammar
