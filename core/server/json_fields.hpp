// Reading typed fields out of a JSON request body. Every reader treats an absent field and a JSON
// null the same (unset, as OpenAI's and vLLM's schemas do) and throws a 400 ApiError naming the
// field on a wrong type or an out-of-range value; unknown fields are never looked at.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace loom {

using Json = nlohmann::json;

// The raw body as a JSON object. Throws 400 when the body is not valid UTF-8 (naming the byte
// offset), is not JSON (naming the parser's position), holds a number no double holds (1e999)
// or is not an object.
Json parse_json_object(std::string_view body);

// `field` is the name used in messages and as the error's param (e.g.
// "stream_options.include_usage").
std::optional<bool> read_bool(const Json& object, const char* key, const std::string& field);
std::optional<std::string> read_string(const Json& object, const char* key,
                                       const std::string& field);
// Integers; a float with no fractional part (16.0) counts, as in Pydantic's lax mode.
std::optional<int64_t> read_int(const Json& object, const char* key, const std::string& field,
                                int64_t min, int64_t max);
// Any number, checked against [min, max] (or (min, max] when min_exclusive).
std::optional<double> read_number(const Json& object, const char* key, const std::string& field,
                                  double min, double max, bool min_exclusive = false);
// An integer JSON value (one array element); `field` e.g. "prompt[3]".
int64_t as_int(const Json& value, const std::string& field, int64_t min, int64_t max);

// A string or a list of strings; a single string gives a list of one.
std::optional<std::vector<std::string>> read_string_list(const Json& object, const char* key,
                                                         const std::string& field,
                                                         size_t max_items);

// Text for a JSON value's type in messages: "a string", "an integer", "an array", ...
std::string json_type_text(const Json& value);

// Serialises for a response; text that is not valid UTF-8 (e.g. a detokenized partial
// character) becomes U+FFFD instead of throwing.
std::string dump_json(const Json& value);

}  // namespace loom
