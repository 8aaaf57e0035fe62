// Regular expressions -> GBNF expressions: literals, ., [classes] with ranges and ^, escapes (\d \w \s \D \W \S,
// \n \t \r, \xHH, \uHHHH, escaped punctuation), groups ( ) and (?: ), alternation |, quantifiers * + ? {m} {m,}
// {m,n} (a lazy ? after one is ignored), ^ and $ at the ends only. Back-references and look-around are refused.
#pragma once

#include <string>
#include <string_view>

namespace basalt::grammar {

// The GBNF expression matching exactly the strings `pattern` matches in full. json_string: the expression
// describes a JSON string's contents (the dot and negated classes exclude '"', '\\' and control characters;
// a literal '"' or '\\' is written escaped). Throws GrammarError naming the position.
std::string regex_to_gbnf(std::string_view pattern, bool json_string = false);

// A whole grammar (`root ::= ...`) for a regex.
std::string regex_grammar(std::string_view pattern);

}  // namespace basalt::grammar
