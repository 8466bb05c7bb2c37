// The grammar compilers a request reaches: GBNF text (response_format / guided_grammar), JSON
// Schema (response_format json_schema, tools' parameters) and regex (guided_regex). What a
// compiler accepts must be a grammar the GBNF parser accepts: a compiler's output that does not
// parse is a finding, as is any exception other than loom::Error.
// Selector byte: 0 = GBNF, 1 = JSON Schema, 2 = regex (mod 3).
#include <cstdint>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "core/common/error.hpp"
#include "core/grammar/gbnf_parser.hpp"
#include "core/grammar/json_schema_grammar.hpp"
#include "core/grammar/regex_grammar.hpp"
#include "core/server/api_error.hpp"
#include "core/server/json_limits.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto [selector, text] = loom::fuzz::select(data, size);
  std::string compiled;
  try {
    switch (selector % 3) {
      case 0:
        (void)loom::parse_gbnf(text);
        return 0;
      case 1: {
        // The server applies the request's shape limits before a schema reaches the compiler.
        loom::check_json_limits(text, loom::JsonLimits{}, "schema");
        const auto schema = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
        if (schema.is_discarded()) return 0;
        compiled = loom::json_schema_grammar(schema);
        break;
      }
      default:
        compiled = loom::regex_grammar(text);
        break;
    }
  } catch (const loom::Error&) {
    return 0;
  } catch (const loom::ApiError&) {
    return 0;
  }
  (void)loom::parse_gbnf(compiled);  // throws (a finding) if the compiler wrote bad GBNF
  return 0;
}
