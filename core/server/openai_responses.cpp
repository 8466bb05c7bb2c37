#include "core/server/openai_responses.hpp"

#include <chrono>
#include <random>

#include "core/server/json_fields.hpp"

namespace loom {
namespace {

// Text between and around tool calls that is only whitespace is no content (OpenAI sends null).
bool only_space(const std::string& text) { return text.find_first_not_of(" \t\r\n") == std::string::npos; }

std::string random_hex(size_t n) {
  // One generator per thread: ids only need to be unique, not secret.
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(n, '0');
  uint64_t bits = 0;
  for (size_t i = 0; i < n; ++i) {
    if (i % 16 == 0) bits = rng();
    out[i] = kHex[bits & 0xF];
    bits >>= 4;
  }
  return out;
}

Json usage_object(Usage u) {
  Json out{{"prompt_tokens", u.prompt_tokens},
           {"completion_tokens", u.completion_tokens},
           {"total_tokens", u.prompt_tokens + u.completion_tokens}};
  if (u.cached_tokens > 0) out["prompt_tokens_details"] = Json{{"cached_tokens", u.cached_tokens}};
  return out;
}

Json envelope(const ResponseMeta& meta, bool chunk) {
  const char* object = meta.kind == ApiKind::kChat
                           ? (chunk ? "chat.completion.chunk" : "chat.completion")
                           : "text_completion";
  Json out{{"id", meta.id}, {"object", object}, {"created", meta.created}, {"model", meta.model}};
  if (meta.semantic_similarity) out["semantic_cache"] = Json{{"hit", true}, {"similarity", *meta.semantic_similarity}};
  return out;
}

Json finish_value(std::optional<FinishReason> finish, bool tool_calls = false) {
  if (finish && tool_calls && *finish == FinishReason::kStop) return Json("tool_calls");
  return finish ? Json(openai_finish_reason(*finish)) : Json(nullptr);
}

Json tool_call_json(const ToolCallOut& c) {
  return Json{{"id", c.id}, {"type", "function"}, {"function", Json{{"name", c.name}, {"arguments", c.arguments}}}};
}

}  // namespace

ResponseMeta make_response_meta(ApiKind kind, std::string model) {
  ResponseMeta meta;
  meta.kind = kind;
  meta.id = (kind == ApiKind::kChat ? "chatcmpl-" : "cmpl-") + random_hex(32);
  meta.created = std::chrono::duration_cast<std::chrono::seconds>(
                     std::chrono::system_clock::now().time_since_epoch())
                     .count();
  meta.model = std::move(model);
  return meta;
}

const char* openai_finish_reason(FinishReason reason) {
  return reason == FinishReason::kLength ? "length" : "stop";
}

std::string completion_response_json(const ResponseMeta& meta, const std::vector<ChoiceResult>& choices,
                                     Usage usage) {
  Json out = envelope(meta, /*chunk=*/false);
  Json list = Json::array();
  for (const ChoiceResult& c : choices) {
    Json choice{{"index", c.index},
                {"logprobs", c.logprobs},
                {"finish_reason", finish_value(c.finish, !c.tool_calls.empty())}};
    if (meta.kind == ApiKind::kChat) {
      Json message{{"role", "assistant"},
                   {"content", only_space(c.text) && !c.tool_calls.empty() ? Json(nullptr) : Json(c.text)}};
      if (!c.reasoning.empty()) {
        message["reasoning_content"] = c.reasoning;
        message["reasoning"] = c.reasoning;
      }
      if (!c.tool_calls.empty()) {
        Json calls = Json::array();
        for (const ToolCallOut& t : c.tool_calls) calls.push_back(tool_call_json(t));
        message["tool_calls"] = std::move(calls);
      }
      choice["message"] = std::move(message);
    } else {
      choice["text"] = c.text;
    }
    if (!c.prompt_logprobs.is_null()) choice["prompt_logprobs"] = c.prompt_logprobs;
    list.push_back(std::move(choice));
  }
  out["choices"] = std::move(list);
  out["usage"] = usage_object(usage);
  return dump_json(out);
}

Json tool_call_header_delta(const ToolCallOut& t) {
  return Json{{"index", t.index}, {"id", t.id}, {"type", "function"}, {"function", Json{{"name", t.name}, {"arguments", ""}}}};
}

Json tool_call_arguments_delta(const ToolCallOut& t) {
  return Json{{"index", t.index}, {"function", Json{{"arguments", t.arguments}}}};
}

std::string stream_chunk_json(const ResponseMeta& meta, const ChunkChoice& c, bool usage_null) {
  Json out = envelope(meta, /*chunk=*/true);
  Json choice{{"index", c.index},
              {"logprobs", c.logprobs},
              {"finish_reason", finish_value(c.finish, c.finish_tool_calls)}};
  if (meta.kind == ApiKind::kChat) {
    Json delta = Json::object();
    if (c.role_delta) delta["role"] = "assistant";
    if (!c.reasoning.empty()) {
      delta["reasoning_content"] = c.reasoning;
      delta["reasoning"] = c.reasoning;
    }
    if (!c.text.empty()) delta["content"] = c.text;
    if (!c.tool_calls.is_null()) delta["tool_calls"] = c.tool_calls;
    choice["delta"] = std::move(delta);
  } else {
    choice["text"] = c.text;
  }
  if (!c.prompt_logprobs.is_null()) choice["prompt_logprobs"] = c.prompt_logprobs;
  out["choices"] = Json::array({std::move(choice)});
  if (usage_null) out["usage"] = nullptr;
  return dump_json(out);
}

std::string usage_chunk_json(const ResponseMeta& meta, Usage usage) {
  Json out = envelope(meta, /*chunk=*/true);
  out["choices"] = Json::array();
  out["usage"] = usage_object(usage);
  return dump_json(out);
}

std::string error_json(const ApiError& error) {
  Json body{{"message", error.what()},
            {"type", error.type},
            {"param", error.param ? Json(*error.param) : Json(nullptr)},
            {"code", error.code ? Json(*error.code) : Json(nullptr)}};
  return dump_json(Json{{"error", std::move(body)}});
}

namespace {
Json model_card(const ModelInfo& model) {
  return Json{{"id", model.name},
            {"object", "model"},
            {"created", model.created},
            {"owned_by", "loom"},
            {"root", model.name},
            {"parent", nullptr},
            {"max_model_len", model.max_model_len}};
}
}  // namespace

std::string model_json(const ModelInfo& model) { return dump_json(model_card(model)); }

std::string models_json(const ModelInfo& model) {
  return dump_json(Json{{"object", "list"}, {"data", Json::array({model_card(model)})}});
}

}  // namespace loom
