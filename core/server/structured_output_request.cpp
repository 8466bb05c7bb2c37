#include "core/server/structured_output_request.hpp"

#include <optional>
#include <vector>

#include "core/common/error.hpp"
#include "core/grammar/gbnf_parser.hpp"
#include "core/grammar/gbnf_text.hpp"
#include "core/grammar/json_schema_grammar.hpp"
#include "core/grammar/regex_grammar.hpp"
#include "core/server/api_error.hpp"

namespace loom {
namespace {

using OJson = nlohmann::ordered_json;

enum class Kind { kJsonSchema, kJsonObject, kRegex, kChoice, kGrammar };

// One requested constraint: where it came from and its (unordered) value.
struct Request {
  std::string field;  // e.g. "response_format.json_schema.schema"
  Kind kind;
  const Json* value;  // nullptr for json_object
};

// The value at `field` (dotted path) with its key order, from the raw body.
OJson ordered_at(std::string_view raw_body, const std::string& field) {
  OJson node = OJson::parse(raw_body);
  size_t start = 0;
  while (start <= field.size()) {
    const size_t dot = field.find('.', start);
    const std::string key = field.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    OJson next = node.at(key);
    node = std::move(next);
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return node;
}

const Json* member(const Json& object, const char* key) {
  const auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

void read_response_format(const Json& body, std::vector<Request>& out) {
  const Json* rf = member(body, "response_format");
  if (!rf) return;
  if (!rf->is_object()) throw bad_field("response_format", "'response_format' must be an object, got " + json_type_text(*rf));
  const auto type = read_string(*rf, "type", "response_format.type");
  if (!type) throw bad_field("response_format.type", "'response_format.type' is required");
  if (*type == "text") return;
  if (*type == "json_object") {
    out.push_back({"response_format", Kind::kJsonObject, nullptr});
    return;
  }
  if (*type != "json_schema") {
    throw bad_field("response_format.type",
                    "'response_format.type' is '" + *type + "'; expected one of text, json_object, json_schema");
  }
  const Json* js = member(*rf, "json_schema");
  if (!js || !js->is_object()) {
    throw bad_field("response_format.json_schema", "'response_format.json_schema' must be an object with a 'schema'");
  }
  read_string(*js, "name", "response_format.json_schema.name");
  read_bool(*js, "strict", "response_format.json_schema.strict");
  const Json* schema = member(*js, "schema");
  if (!schema) throw bad_field("response_format.json_schema.schema", "'response_format.json_schema.schema' is required");
  out.push_back({"response_format.json_schema.schema", Kind::kJsonSchema, schema});
}

void read_vllm(const Json& body, std::vector<Request>& out) {
  static const std::pair<const char*, Kind> kKeys[] = {
      {"json", Kind::kJsonSchema}, {"regex", Kind::kRegex}, {"choice", Kind::kChoice}, {"grammar", Kind::kGrammar}};
  if (const Json* so = member(body, "structured_outputs")) {
    if (!so->is_object()) {
      throw bad_field("structured_outputs", "'structured_outputs' must be an object, got " + json_type_text(*so));
    }
    for (const auto& [key, value] : so->items()) {
      if (value.is_null()) continue;
      const std::string field = "structured_outputs." + key;
      if (key == "json_object") {
        if (!value.is_boolean()) throw bad_field(field, "'" + field + "' must be a boolean");
        if (value.get<bool>()) out.push_back({field, Kind::kJsonObject, nullptr});
        continue;
      }
      bool known = false;
      for (const auto& [k, kind] : kKeys) {
        if (key == k) {
          out.push_back({field, kind, &value});
          known = true;
        }
      }
      if (!known) {
        throw bad_field(field, "'" + field + "' is not supported; expected one of json, regex, choice, grammar, json_object");
      }
    }
  }
  for (const auto& [k, kind] : kKeys) {
    const std::string field = std::string("guided_") + k;
    if (const Json* v = member(body, field.c_str())) out.push_back({field, kind, v});
  }
  if (const Json* v = member(body, "grammar")) out.push_back({"grammar", Kind::kGrammar, v});
  if (const Json* v = member(body, "json_schema")) out.push_back({"json_schema", Kind::kJsonSchema, v});
}

std::string grammar_text(const Request& r, std::string_view raw_body) {
  const std::string& f = r.field;
  switch (r.kind) {
    case Kind::kJsonObject: return json_object_grammar();
    case Kind::kJsonSchema: {
      // vLLM also takes the schema as a JSON string.
      if (r.value->is_string()) {
        OJson parsed;
        try {
          parsed = OJson::parse(r.value->get<std::string>());
        } catch (const std::exception& e) {
          throw bad_field(f, "'" + f + "' is a string that is not JSON: " + e.what());
        }
        return json_schema_grammar(parsed);
      }
      if (!r.value->is_object() && !r.value->is_boolean()) {
        throw bad_field(f, "'" + f + "' must be a JSON Schema object, got " + json_type_text(*r.value));
      }
      return json_schema_grammar(ordered_at(raw_body, f));
    }
    case Kind::kRegex:
      if (!r.value->is_string()) throw bad_field(f, "'" + f + "' must be a string, got " + json_type_text(*r.value));
      return regex_grammar(r.value->get<std::string>());
    case Kind::kGrammar:
      if (!r.value->is_string()) throw bad_field(f, "'" + f + "' must be a string, got " + json_type_text(*r.value));
      return r.value->get<std::string>();
    case Kind::kChoice: {
      if (!r.value->is_array()) throw bad_field(f, "'" + f + "' must be an array of strings, got " + json_type_text(*r.value));
      std::vector<std::string> choices;
      for (const Json& c : *r.value) {
        if (!c.is_string()) throw bad_field(f, "'" + f + "' must be an array of strings");
        choices.push_back(c.get<std::string>());
      }
      return choice_grammar(choices);
    }
  }
  return {};
}

}  // namespace

std::shared_ptr<const Grammar> parse_structured_output(const Json& body, std::string_view raw_body) {
  std::vector<Request> requests;
  read_response_format(body, requests);
  read_vllm(body, requests);
  if (requests.empty()) return nullptr;
  if (requests.size() > 1) {
    throw bad_field(requests[1].field, "'" + requests[0].field + "' and '" + requests[1].field +
                                           "' both constrain the output; send at most one");
  }
  const Request& r = requests[0];
  try {
    return std::make_shared<const Grammar>(parse_gbnf(grammar_text(r, raw_body)));
  } catch (const ApiError&) {
    throw;
  } catch (const std::exception& e) {
    throw bad_field(r.field, "'" + r.field + "': " + e.what());
  }
}

}  // namespace loom
