#include "core/server/json_fields.hpp"

#include <cmath>
#include <cstdio>
#include <limits>

#include "core/tokenizer/utf8.hpp"
#include "core/server/api_error.hpp"

namespace loom {
namespace {

// Position of the first byte that makes `text` invalid UTF-8.
size_t first_invalid_utf8(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    const Utf8Char c = utf8_next(text.substr(pos));
    if (c.status != Utf8Status::kComplete) return pos;
    pos += c.length;
  }
  return pos;
}

const Json* find_set(const Json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

[[noreturn]] void wrong_type(const std::string& field, const char* expected, const Json& got) {
  throw bad_field(field, "'" + field + "' must be " + expected + ", got " + json_type_text(got));
}

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

}  // namespace

std::string json_type_text(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "an integer";
    case Json::value_t::number_float:
      return "a number";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::object:
      return "an object";
    default:
      return "an unsupported value";
  }
}

Json parse_json_object(std::string_view body) {
  const size_t bad = first_invalid_utf8(body);
  if (bad != body.size()) {
    throw ApiError(400,
                   "request body is not valid UTF-8 (byte offset " + std::to_string(bad) + ")");
  }
  Json parsed;
  try {
    parsed = Json::parse(body.begin(), body.end());
  } catch (const Json::parse_error& e) {
    throw ApiError(400, std::string("request body is not valid JSON: ") + e.what());
  } catch (const Json::exception& e) {
    // e.g. out_of_range 406: a number such as 1e999 that no double holds.
    throw ApiError(400, std::string("request body has a value out of range: ") + e.what());
  }
  if (!parsed.is_object()) {
    throw ApiError(400, "request body must be a JSON object, got " + json_type_text(parsed));
  }
  return parsed;
}

std::optional<bool> read_bool(const Json& object, const char* key, const std::string& field) {
  const Json* v = find_set(object, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) wrong_type(field, "a boolean", *v);
  return v->get<bool>();
}

std::optional<std::string> read_string(const Json& object, const char* key,
                                       const std::string& field) {
  const Json* v = find_set(object, key);
  if (!v) return std::nullopt;
  if (!v->is_string()) wrong_type(field, "a string", *v);
  return v->get<std::string>();
}

int64_t as_int(const Json& value, const std::string& field, int64_t min, int64_t max) {
  int64_t n = 0;
  if (value.is_number_integer() && !value.is_number_unsigned()) {
    n = value.get<int64_t>();
  } else if (value.is_number_unsigned()) {
    const uint64_t u = value.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      throw bad_field(field, "'" + field + "' is out of range: " + value.dump());
    }
    n = static_cast<int64_t>(u);
  } else if (value.is_number_float()) {
    const double d = value.get<double>();
    // 2^63 bounds the int64 range exactly; anything integral within it converts losslessly.
    if (std::trunc(d) != d || !(std::fabs(d) < 9.2233720368547758e18)) {
      wrong_type(field, "an integer", value);
    }
    n = static_cast<int64_t>(d);
  } else {
    wrong_type(field, "an integer", value);
  }
  if (n < min || n > max) {
    std::string range = max == std::numeric_limits<int64_t>::max()
                            ? ">= " + std::to_string(min)
                            : "in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
    throw bad_field(field, "'" + field + "' must be " + range + ", got " + std::to_string(n));
  }
  return n;
}

std::optional<int64_t> read_int(const Json& object, const char* key, const std::string& field,
                                int64_t min, int64_t max) {
  const Json* v = find_set(object, key);
  if (!v) return std::nullopt;
  return as_int(*v, field, min, max);
}

std::optional<double> read_number(const Json& object, const char* key, const std::string& field,
                                  double min, double max, bool min_exclusive) {
  const Json* v = find_set(object, key);
  if (!v) return std::nullopt;
  if (!v->is_number()) wrong_type(field, "a number", *v);
  const double d = v->get<double>();
  const bool low_ok = min_exclusive ? d > min : d >= min;
  if (!low_ok || !(d <= max)) {
    throw bad_field(field, "'" + field + "' must be in " + (min_exclusive ? "(" : "[") +
                               number_text(min) + ", " + number_text(max) + "], got " + v->dump());
  }
  return d;
}

std::optional<std::vector<std::string>> read_string_list(const Json& object, const char* key,
                                                         const std::string& field,
                                                         size_t max_items) {
  const Json* v = find_set(object, key);
  if (!v) return std::nullopt;
  std::vector<std::string> out;
  if (v->is_string()) {
    out.push_back(v->get<std::string>());
  } else if (v->is_array()) {
    for (size_t i = 0; i < v->size(); ++i) {
      const Json& item = (*v)[i];
      if (!item.is_string()) wrong_type(field + "[" + std::to_string(i) + "]", "a string", item);
      out.push_back(item.get<std::string>());
    }
  } else {
    wrong_type(field, "a string or an array of strings", *v);
  }
  if (out.size() > max_items) {
    throw bad_field(field, "'" + field + "' has " + std::to_string(out.size()) +
                               " entries; at most " + std::to_string(max_items) + " are allowed");
  }
  return out;
}

std::string dump_json(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace loom
