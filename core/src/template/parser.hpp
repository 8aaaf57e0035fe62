// Parses template tokens (lexer.hpp) into a tree (ast.hpp) with Jinja's grammar and operator precedence.
#pragma once

#include <string_view>

#include "ast.hpp"

namespace basalt::tmpl {

// Parses source into the template's statements. Throws TemplateError naming line:column of the first syntax error
// (an unknown tag, a missing end tag, an unexpected token, nesting deeper than 256).
Body parse(std::string_view source);

}  // namespace basalt::tmpl
