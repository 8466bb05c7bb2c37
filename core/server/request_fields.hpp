// The one table of request fields each generation route knows. A field that is not in it is a
// 400 naming it (nothing sent is silently ignored); a field in it is either honoured by a parser
// of this server, refused with a 400 naming it unless it holds its harmless default, or read by
// a parser that another part of the server owns (the table names it).
#pragma once

#include <span>
#include <string_view>

#include "core/server/json_fields.hpp"

namespace loom {

enum class RequestRoute { kCompletions, kChat, kEmbeddings };

enum class FieldUse {
  kHonoured,     // read and acted on (the note names the reader)
  kRefused,      // 400 unless absent, null or the harmless value in `allowed_json`
};

struct RequestField {
  std::string_view name;
  bool completions;  // known on /v1/completions
  bool chat;         // known on /v1/chat/completions
  FieldUse use;
  std::string_view note;          // who reads it, or why it is refused
  std::string_view allowed_json;  // kRefused: JSON values accepted as "not asking for it", '|'-separated
  bool embeddings = false;        // known on /v1/embeddings
};

// Every field, in one table.
std::span<const RequestField> request_fields();

// The entry for `name` on `route`, or null when the route does not know it.
const RequestField* find_request_field(std::string_view name, RequestRoute route);

// 400 naming the first field of `body` (in name order) that `route` does not know, or
// that it refuses and the body sets to something other than its harmless default.
void check_request_fields(const Json& body, RequestRoute route);

}  // namespace loom
