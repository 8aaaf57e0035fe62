// The grammar forms the sampler accepts, compiled to one Grammar: GBNF as it is, a JSON Schema and a regex through
// their GBNF generators, "json" as any JSON object, "gbnf_schemas" as GBNF whose named rules may be JSON Schemas.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "grammar.hpp"

namespace basalt::grammar {

// A kind that is none of gbnf, json_schema, regex, json, gbnf_schemas.
struct UnknownKind : std::invalid_argument {
    using std::invalid_argument::invalid_argument;
};

// The GBNF text for `text` read as `kind` (gbnf_schemas: {"gbnf": TEXT, "schemas": {NAME: SCHEMA}}, the GBNF plus a
// rule NAME matching each JSON Schema). Throws GrammarError or UnknownKind.
std::string source_to_gbnf(std::string_view kind, std::string_view text);

// The lazy trigger of a gbnf_schemas text ({"trigger": TEXT}; "" for every other kind and when absent): the output
// is free until it spells TEXT, and from TEXT on matches the grammar. Throws GrammarError for a trigger that is not
// a non-empty string.
std::string lazy_trigger(std::string_view kind, std::string_view text);

// The control tokens of a gbnf_schemas text ({"tokens": {TEXT: ID, ...}}; none for every other kind and when
// absent): token ID, which has no output text of its own, stands for TEXT (the grammar allows it where TEXT may come
// next, and the lazy trigger reads TEXT for it). Throws GrammarError for a map that is not texts to token ids.
std::vector<std::pair<int32_t, std::string>> control_tokens(std::string_view kind, std::string_view text);

// Compiles `text` read as `kind`. Throws GrammarError or UnknownKind.
Grammar compile_source(std::string_view kind, std::string_view text);

}  // namespace basalt::grammar
