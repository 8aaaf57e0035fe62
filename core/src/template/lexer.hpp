// Splits template source into text and tag tokens the way Jinja's lexer does with the settings Hugging Face
// renders chat templates with: {{ }}, {% %} and {# #} tags, '-' and '+' whitespace control, trim_blocks (the
// newline after a block tag or comment is dropped) and lstrip_blocks (spaces and tabs from the start of a line to a
// block tag or comment are dropped), {% raw %} blocks.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace basalt::tmpl {

struct Token {
    enum class Type { Text, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, String, Int, Float, Op, Eof };
    Type type = Type::Eof;
    std::string text;  // Text: the text; Name/Op: the name or operator; String: the unescaped value
    int64_t integer = 0;
    double number = 0.0;
    int line = 1;
    int column = 1;
};

// Tokenizes source; throws TemplateError (with the position) for an unterminated tag, string or comment or an
// unknown character. Tags nest no deeper than the source: the lexer does not recurse.
std::vector<Token> lex(std::string_view source);

}  // namespace basalt::tmpl
