// The structured-output fields of /v1/completions and /v1/chat/completions, compiled to a
// grammar on the HTTP thread (so a bad schema is a 400 and never reaches the engine):
//   OpenAI   response_format: {type: "text" | "json_object" | "json_schema",
//                              json_schema: {name, schema, strict}}
//   vLLM     structured_outputs: {json | regex | choice | grammar | json_object}, and the older
//            top-level guided_json / guided_regex / guided_choice / guided_grammar
//   llama.cpp grammar (GBNF text), json_schema (a schema)
// At most one constraint per request; two are a 400 naming both.
#pragma once

#include <memory>
#include <string_view>

#include "core/server/json_fields.hpp"

namespace loom {

struct Grammar;

// nullptr when the request asks for no constraint. `raw_body` is the body `body` was parsed
// from: schemas are re-read from it with their key order (properties are written in it).
// Throws a 400 ApiError naming the field and the problem.
std::shared_ptr<const Grammar> parse_structured_output(const Json& body, std::string_view raw_body);

}  // namespace loom
