// Grammar forms -> Grammar (grammar-source.hpp).
#include "grammar-source.hpp"

#include "json-schema-gbnf.hpp"
#include "regex-gbnf.hpp"

namespace basalt::grammar {

std::string source_to_gbnf(std::string_view kind, std::string_view text) {
    if (kind == "gbnf") return std::string(text);
    if (kind == "json_schema") return json_schema_grammar(text);
    if (kind == "regex") return regex_grammar(text);
    if (kind == "json") return json_object_grammar();
    throw UnknownKind(std::string(kind));
}

Grammar compile_source(std::string_view kind, std::string_view text) {
    return parse_gbnf(source_to_gbnf(kind, text));
}

}  // namespace basalt::grammar
