#include "core/server/tool_call_parser.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

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

ToolCallParser::ToolCallParser(ToolCallFormat format) : format_(format) {
  if (format_ == ToolCallFormat::kNone) state_ = State::kDone;
}

ToolCallDelta ToolCallParser::push(std::string_view text) {
  pending_.append(text);
  return drain(false);
}

ToolCallDelta ToolCallParser::flush() { return drain(true); }

void ToolCallParser::advance_call(std::string_view object, size_t usable, ToolCallDelta& out) {
  object = object.substr(0, usable);
  const bool begins = !streaming_;
  if (begins) {
    CallObjectScan scan = scan_call_object(object);
    if (!scan.streamable) return;
    streaming_ = true;
    arguments_begin_ = scan.arguments_begin;
    arguments_sent_ = 0;
    out.fragments.push_back(ToolCallFragment{next_call_, true, std::move(scan.name), ""});
  }
  const std::string_view rest = object.substr(arguments_begin_);
  const size_t end = json_value_end(rest);
  const std::string compact = compact_json(rest.substr(0, end == std::string_view::npos ? rest.size() : end));
  if (compact.size() <= arguments_sent_) return;
  std::string piece = compact.substr(arguments_sent_);
  arguments_sent_ = compact.size();
  if (begins) out.fragments.back().arguments = std::move(piece);
  else out.fragments.push_back(ToolCallFragment{next_call_, false, "", std::move(piece)});
}

bool ToolCallParser::end_call(std::string_view object, ToolCallDelta& out) {
  advance_call(object, object.size(), out);
  if (streaming_) {
    streaming_ = false;
    ++next_call_;
    give_back_.clear();
    return true;
  }
  // Not streamed: the whole object, {"name", "arguments"|"parameters"}, or not a call.
  const nlohmann::json c = nlohmann::json::parse(object, nullptr, /*allow_exceptions=*/false);
  if (!c.is_object() || !c.contains("name") || !c["name"].is_string()) return false;
  const auto args = c.contains("arguments") ? c["arguments"] : c.contains("parameters") ? c["parameters"]
                                                                                        : nlohmann::json::object();
  // Arguments sent as a JSON string are kept as that string's text, as OpenAI returns them.
  out.fragments.push_back(ToolCallFragment{next_call_++, true, c["name"].get<std::string>(),
                                           args.is_string() ? args.get<std::string>() : args.dump()});
  give_back_.clear();
  return true;
}

// Hermes: the body between <tool_call> and the first </tool_call> (or the end of output).
bool ToolCallParser::drain_hermes(bool final, ToolCallDelta& out) {
  const size_t end = pending_.find(kHermesEnd);
  const std::string_view text(pending_);
  if (end == std::string::npos && !final) {
    const size_t at = skip_space(text);
    if (at < text.size() && text[at] == '{')
      advance_call(text.substr(at), text.size() - partial_suffix(text, kHermesEnd) - at, out);
    return false;
  }
  const std::string_view body = text.substr(0, end == std::string::npos ? text.size() : end);
  const size_t at = skip_space(body);
  if (!end_call(body.substr(at), out)) {
    out.content += std::string(kHermesStart) + std::string(body) + (end == std::string::npos ? "" : std::string(kHermesEnd));
  }
  pending_.erase(0, end == std::string::npos ? pending_.size() : end + kHermesEnd.size());
  state_ = State::kText;
  return !(final && pending_.empty());
}

// Llama 3 (objects after optional whitespace, several separated by ';') and Mistral (an array
// of objects, or one object): the next call object. False when more text is needed.
bool ToolCallParser::drain_json_call(bool final, ToolCallDelta& out) {
  const bool mistral = format_ == ToolCallFormat::kMistral;
  const bool in_array = state_ == State::kInArray;
  size_t i = skip_space(pending_);
  const char separator = in_array ? ',' : ';';
  if ((in_array || format_ == ToolCallFormat::kLlama3Json) && i < pending_.size() && pending_[i] == separator)
    i = skip_space(pending_, i + 1);
  if (i == pending_.size()) {
    if (!final) return false;
    out.content += give_back_;
    give_back_.clear();
    pending_.clear();
    state_ = State::kDone;
    return true;
  }
  if (mistral && state_ == State::kInCall && pending_[i] == '[') {
    give_back_ += pending_.substr(0, i + 1);
    pending_.erase(0, i + 1);
    state_ = State::kInArray;
    return true;
  }
  if (in_array && pending_[i] == ']') {
    give_back_.clear();  // [TOOL_CALLS][] is an empty list of calls
    pending_.erase(0, i + 1);
    state_ = State::kText;
    return true;
  }
  if (pending_[i] != '{') {
    // Not JSON: text (Mistral's marker given back with it).
    out.content += give_back_;
    give_back_.clear();
    state_ = mistral ? State::kText : State::kDone;
    return true;
  }
  const std::string_view object = std::string_view(pending_).substr(i);
  const size_t len = json_value_end(object);
  if (len == std::string_view::npos && !final) {
    advance_call(object, object.size(), out);
    return false;
  }
  // Complete, or cut by the end of output: a streamed call ends here; unfinished JSON that
  // never became one is given back as text.
  const std::string_view whole = object.substr(0, len == std::string_view::npos ? object.size() : len);
  const bool called = (len != std::string_view::npos || streaming_) && end_call(whole, out);
  if (!called) {
    out.content += give_back_ + pending_.substr(0, i) + std::string(whole);
    give_back_.clear();
  }
  pending_.erase(0, i + whole.size());
  // Mistral: after one object, or once a list element is not a call, the rest is text.
  if (len == std::string_view::npos) state_ = State::kDone;
  else if (mistral && (!in_array || !called)) state_ = State::kText;
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
        if (format_ == ToolCallFormat::kMistral) give_back_ = kMistralStart;
        state_ = State::kInCall;
        break;
      }
      case State::kInCall:
      case State::kInArray: {
        const bool more = format_ == ToolCallFormat::kHermes ? drain_hermes(final, out) : drain_json_call(final, out);
        if (!more) return out;
        break;
      }
    }
  }
}

}  // namespace loom
