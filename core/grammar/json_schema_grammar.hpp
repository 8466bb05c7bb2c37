// JSON Schema compiled to GBNF: the documents the grammar accepts are JSON values valid under
// the schema, written compactly or with a little whitespace between tokens (one space or tab, or
// a line break and an indent of at most kMaxJsonSpace, so a grammar for a bounded schema stays
// finite).
//
// Supported: type (one or a list), properties / required / additionalProperties (false, true or
// a schema; absent = true as the spec says), enum, const, items, prefixItems (tuples, with items
// for the rest: false for none), minItems, maxItems, anyOf,
// oneOf (as anyOf: exclusivity is not checked), allOf (merged: json_schema_merge.hpp; keywords
// beside anyOf/oneOf/$ref are merged into them the same way), $ref to "#", "#/$defs/..."
// or any JSON pointer inside the document, $defs / definitions, string format (date, time,
// date-time, uuid, email: the shapes, not the calendar), pattern (regex_grammar.hpp, search
// semantics), minLength / maxLength (in characters), and for integers and numbers minimum /
// maximum / exclusiveMinimum / exclusiveMaximum (exact on the decimal text: integer_range_gbnf,
// number_range_gbnf; a bounded number is written without an exponent). Annotations (title,
// description, default, examples, $schema, $id, $comment, deprecated, readOnly, writeOnly) are
// ignored. Refused, naming the keyword: everything else, including multipleOf, pattern with
// min/maxLength, uniqueItems, patternProperties, min/maxProperties, not,
// if/then/else.
//
// Integers are at most 18 digits and numbers 18 + 18 digits with a 3-digit exponent: what a
// grammar can keep finite; bounds beyond 10^18 count as unbounded.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace loom {

inline constexpr int kMaxJsonSpace = 12;

// A schema compiled into a larger grammar: `expression` matches the schema's values, using the
// rules in `rules` (GBNF lines, every name starting with the prefix given) and the shared json-*
// rules of json_base_rules(), which the larger grammar includes once.
struct JsonSchemaRules {
  std::string expression;
  std::string rules;
};
JsonSchemaRules json_schema_rules(const nlohmann::ordered_json& schema, const std::string& rule_prefix);
std::string json_base_rules();

// `root ::= ...` for the schema (key order of `properties` is the order properties are written).
// Throws loom::Error "<path>: ..." (path like "properties.name.items") naming what is refused.
std::string json_schema_grammar(const nlohmann::ordered_json& schema);

// Any JSON object ({"type": "json_object"}).
std::string json_object_grammar();

}  // namespace loom
