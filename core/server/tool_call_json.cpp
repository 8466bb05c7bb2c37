#include "core/server/tool_call_json.hpp"

#include <nlohmann/json.hpp>
#include <optional>

namespace loom {
namespace {

constexpr size_t npos = std::string_view::npos;

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

size_t skip_space(std::string_view s, size_t i) {
  while (i < s.size() && is_space(s[i])) ++i;
  return i;
}

// s[i] is '"': one past the closing quote, or npos while the string is open.
size_t string_end(std::string_view s, size_t i) {
  for (size_t j = i + 1; j < s.size(); ++j) {
    if (s[j] == '\\') ++j;
    else if (s[j] == '"') return j + 1;
  }
  return npos;
}

// One past any JSON value starting at s[i], or npos while it may still grow (a number or
// literal at the end of the text may have more digits or letters to come).
size_t value_end(std::string_view s, size_t i) {
  if (s[i] == '"') return string_end(s, i);
  if (s[i] == '{' || s[i] == '[') {
    const size_t n = json_value_end(s.substr(i));
    return n == npos ? npos : i + n;
  }
  size_t j = i;
  while (j < s.size() && !is_space(s[j]) && s[j] != ',' && s[j] != '}' && s[j] != ']') ++j;
  return j == s.size() ? npos : j;
}

std::optional<std::string> decode_string(std::string_view token) {
  const nlohmann::json v = nlohmann::json::parse(token, nullptr, /*allow_exceptions=*/false);
  if (!v.is_string()) return std::nullopt;
  return v.get<std::string>();
}

}  // namespace

size_t json_value_end(std::string_view s) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '{' || c == '[') ++depth;
    else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return npos;
}

CallObjectScan scan_call_object(std::string_view s) {
  if (s.empty() || s[0] != '{') return {};
  std::optional<std::string> name;
  size_t i = skip_space(s, 1);
  while (i < s.size() && s[i] == '"') {
    const size_t key_end = string_end(s, i);
    if (key_end == npos) return {};
    const std::optional<std::string> key = decode_string(s.substr(i, key_end - i));
    if (!key) return {};
    i = skip_space(s, key_end);
    if (i >= s.size() || s[i] != ':') return {};
    i = skip_space(s, i + 1);
    if (i >= s.size()) return {};
    if (*key == "arguments" || *key == "parameters") {
      if (!name || s[i] != '{') return {};
      return CallObjectScan{true, *name, i};
    }
    const size_t end = value_end(s, i);
    if (end == npos) return {};
    if (*key == "name") {
      if (s[i] != '"') return {};
      name = decode_string(s.substr(i, end - i));
      if (!name) return {};
    }
    i = skip_space(s, end);
    if (i >= s.size() || s[i] != ',') return {};
    i = skip_space(s, i + 1);
  }
  return {};
}

std::string compact_json(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  bool in_string = false, escaped = false;
  for (const char c : s) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (is_space(c)) {
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace loom
