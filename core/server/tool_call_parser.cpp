#include "core/server/tool_call_parser.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/common/error.hpp"

namespace loom {
namespace {

constexpr std::string_view kHermesStart = "<tool_call>";
constexpr std::string_view kHermesEnd = "</tool_call>";
constexpr std::string_view kPythonTag = "<|python_tag|>";
constexpr std::string_view kMistralStart = "[TOOL_CALLS]";

size_t partial_suffix(std::string_view text, std::string_view marker) {
  for (size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n) {
    if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
  }
  return 0;
}

size_t skip_space(std::string_view s, size_t i = 0) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r')) ++i;
  return i;
}

}  // namespace

const char* tool_call_format_name(ToolCallFormat f) {
  switch (f) {
    case ToolCallFormat::kNone: return "none";
    case ToolCallFormat::kHermes: return "hermes";
    case ToolCallFormat::kLlama3Json: return "llama3";
    case ToolCallFormat::kMistral: return "mistral";
  }
  return "none";
}

std::optional<ToolCallFormat> parse_tool_call_format(std::string_view name) {
  if (name == "auto") return std::nullopt;
  for (ToolCallFormat f : {ToolCallFormat::kNone, ToolCallFormat::kHermes, ToolCallFormat::kLlama3Json,
                           ToolCallFormat::kMistral}) {
    if (name == tool_call_format_name(f)) return f;
  }
  throw Error("tool_parser: unknown format '" + std::string(name) +
              "'; valid: auto, none, hermes, llama3, mistral");
}

ToolCallFormat tool_call_format_from_template(std::string_view t) {
  if (t.find(kHermesStart) != std::string_view::npos) return ToolCallFormat::kHermes;
  if (t.find(kMistralStart) != std::string_view::npos) return ToolCallFormat::kMistral;
  if (t.find(kPythonTag) != std::string_view::npos || t.find("ipython") != std::string_view::npos)
    return ToolCallFormat::kLlama3Json;
  return ToolCallFormat::kNone;
}

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
  return std::string_view::npos;
}

ToolCallParser::ToolCallParser(ToolCallFormat format) : format_(format) {
  if (format_ == ToolCallFormat::kNone) state_ = State::kDone;
}

ToolCallDelta ToolCallParser::push(std::string_view text) {
  pending_.append(text);
  return drain(false);
}

ToolCallDelta ToolCallParser::flush() { return drain(true); }

// One call object ({"name", "arguments"|"parameters"}) or, for Mistral, an array of them.
bool ToolCallParser::take_call_json(std::string_view json, ToolCallDelta& out) {
  const nlohmann::json v = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  std::vector<ParsedToolCall> calls;
  auto one = [&](const nlohmann::json& c) {
    if (!c.is_object() || !c.contains("name") || !c["name"].is_string()) return false;
    const auto args = c.contains("arguments") ? c["arguments"] : c.contains("parameters") ? c["parameters"]
                                                                                          : nlohmann::json::object();
    // Arguments sent as a JSON string are kept as that string's text, as OpenAI returns them.
    calls.push_back({c["name"].get<std::string>(), args.is_string() ? args.get<std::string>() : args.dump()});
    return true;
  };
  if (v.is_array()) {
    for (const auto& c : v)
      if (!one(c)) return false;
  } else if (!one(v)) {
    return false;
  }
  out.calls.insert(out.calls.end(), calls.begin(), calls.end());
  return true;
}

ToolCallDelta ToolCallParser::drain(bool final) {
  ToolCallDelta out;
  for (;;) {
    switch (state_) {
      case State::kDone:
        out.content += pending_;
        pending_.clear();
        return out;
      case State::kLeading: {
        // Llama 3 calls are the whole output: decide at its first non-space text.
        if (format_ != ToolCallFormat::kLlama3Json) {
          state_ = State::kText;
          break;
        }
        const size_t i = skip_space(pending_);
        const std::string_view rest = std::string_view(pending_).substr(i);
        if (rest.empty() || (!final && rest.size() < kPythonTag.size() && kPythonTag.starts_with(rest))) {
          if (final) state_ = State::kDone;
          else return out;
          break;
        }
        if (rest.starts_with(kPythonTag)) {
          pending_.erase(0, i + kPythonTag.size());
          state_ = State::kInCall;
        } else if (rest[0] == '{') {
          pending_.erase(0, i);
          state_ = State::kInCall;
        } else {
          state_ = State::kDone;
        }
        break;
      }
      case State::kText: {
        const std::string_view marker = format_ == ToolCallFormat::kHermes ? kHermesStart : kMistralStart;
        const size_t at = pending_.find(marker);
        if (at == std::string::npos) {
          const size_t keep = final ? 0 : partial_suffix(pending_, marker);
          out.content += pending_.substr(0, pending_.size() - keep);
          pending_.erase(0, pending_.size() - keep);
          return out;
        }
        out.content += pending_.substr(0, at);
        pending_.erase(0, at + marker.size());
        state_ = State::kInCall;
        break;
      }
      case State::kInCall: {
        if (format_ == ToolCallFormat::kHermes) {
          const size_t end = pending_.find(kHermesEnd);
          if (end == std::string::npos && !final) return out;
          const std::string body = pending_.substr(0, end == std::string::npos ? pending_.size() : end);
          if (!take_call_json(body, out)) {
            out.content += std::string(kHermesStart) + body + (end == std::string::npos ? "" : std::string(kHermesEnd));
          }
          pending_.erase(0, end == std::string::npos ? pending_.size() : end + kHermesEnd.size());
          state_ = State::kText;
          if (final && pending_.empty()) return out;
          break;
        }
        // JSON formats: one object (Llama 3, several separated by ';') or an array (Mistral)
        // after optional whitespace.
        size_t i = skip_space(pending_);
        if (format_ == ToolCallFormat::kLlama3Json && i < pending_.size() && pending_[i] == ';')
          i = skip_space(pending_, i + 1);
        if (i == pending_.size()) {
          if (!final) return out;
          pending_.clear();
          state_ = State::kDone;
          break;
        }
        if (pending_[i] != '{' && pending_[i] != '[') {
          // Not JSON: text (Mistral's marker given back with it).
          if (format_ == ToolCallFormat::kMistral) out.content += kMistralStart;
          state_ = format_ == ToolCallFormat::kMistral ? State::kText : State::kDone;
          break;
        }
        const size_t len = json_value_end(std::string_view(pending_).substr(i));
        if (len == std::string_view::npos) {
          if (!final) return out;
          // Unfinished JSON at the end: give it back as text.
          out.content += (format_ == ToolCallFormat::kMistral ? std::string(kMistralStart) : "") + pending_;
          pending_.clear();
          state_ = State::kDone;
          break;
        }
        const std::string json = pending_.substr(i, len);
        if (!take_call_json(json, out)) {
          out.content += (format_ == ToolCallFormat::kMistral ? std::string(kMistralStart) : "") + json;
        }
        pending_.erase(0, i + len);
        // Mistral: back to text; Llama 3: another call may follow (the loop decides).
        if (format_ == ToolCallFormat::kMistral) state_ = State::kText;
        break;
      }
    }
  }
}

}  // namespace loom
