// Reading a tool call's JSON while it is still being generated: where a value ends, whether the
// text so far already names the function and has opened its arguments object, and the compact
// form of the arguments (whitespace outside strings dropped), which grows only at its end as
// text arrives — so the pieces streamed concatenate to the arguments of the whole output.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace loom {

// Where the JSON object or array starting at text[0] ends (one past its closing bracket), or
// npos while it is incomplete. Strings and escapes are honoured.
size_t json_value_end(std::string_view text);

// A call object's text from its '{', possibly incomplete.
struct CallObjectScan {
  bool streamable = false;  // "name" (a whole string) came before an object-valued arguments member
  std::string name;
  size_t arguments_begin = std::string_view::npos;  // offset of the arguments object's '{'
};

// `arguments` or (Llama 3) `parameters`. Not streamable — yet or at all — when the text has not
// reached the arguments, when they come before the name, or when they are not an object (a JSON
// string of arguments is read whole once the call is complete).
CallObjectScan scan_call_object(std::string_view object);

// JSON text with the whitespace outside strings removed (the bytes of strings kept as written).
std::string compact_json(std::string_view text);

}  // namespace loom
