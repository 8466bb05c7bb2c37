// Rewrites the schema combinations a grammar cannot take as they stand into schemas it can:
//
//   allOf:                 the members and the keywords beside them merged into one schema (types
//                          intersected, properties united with shared ones merged in turn,
//                          required united, bounds tightened, enums intersected; a member with
//                          additionalProperties: false admits only its own properties, so the
//                          merged object keeps the properties every closed member names).
//   anyOf/oneOf + siblings: the siblings merged into every alternative (S and (A or B) is
//                          (S and A) or (S and B)), so no keyword beside the alternatives is lost.
//
// Properties are written in the order the members name them, the keywords beside allOf last.
// An allOf member that is itself an anyOf is distributed the same way. What two members ask
// that cannot be combined (two patterns, two formats, two different additionalProperties
// schemas) is refused, naming the path. References inside allOf are resolved in `root`.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace loom {

// Keywords that say nothing about the values (title, description, $defs, ...).
bool is_schema_annotation(const std::string& key);

// True when `schema` needs rewrite_schema_combinations before it is compiled.
bool needs_combination_rewrite(const nlohmann::ordered_json& schema);

// The rewritten schema: no allOf at its top, and anyOf/oneOf (if any) without keywords beside
// it other than annotations. Nested schemas (properties, items) are left to the caller, which
// compiles them through this again. Throws loom::Error "<path>: ..." on what cannot be merged.
nlohmann::ordered_json rewrite_schema_combinations(const nlohmann::ordered_json& schema,
                                                   const nlohmann::ordered_json& root, const std::string& path);

}  // namespace loom
