// JSON Schema -> GBNF, following llama.cpp's json-schema-to-grammar conventions (a `space` rule after every
// value, bounded whitespace, properties in the schema's order). Supported: type (one or a list), properties,
// required, additionalProperties (false / true / a schema; absent means false when properties are given),
// items, prefixItems, minItems/maxItems, enum, const, anyOf/oneOf, $ref to #/$defs/... or #/definitions/...,
// minimum/maximum/exclusiveMinimum/exclusiveMaximum for integers, minLength/maxLength, pattern, format date,
// time, date-time, uuid (other formats are annotations). Annotations (title, description, default, examples,
// $schema, $id, $comment, strict, ...) are ignored; any other keyword is refused by name.
#pragma once

#include <string>
#include <string_view>

namespace basalt::grammar {

// The GBNF grammar (start rule root) for a JSON Schema given as JSON text. Throws GrammarError naming the
// keyword and its JSON pointer for unsupported or contradictory schemas, or the JSON parse error.
std::string json_schema_grammar(std::string_view schema_json);

// The GBNF grammar of any JSON object (OpenAI's response_format json_object).
std::string json_object_grammar();

}  // namespace basalt::grammar
