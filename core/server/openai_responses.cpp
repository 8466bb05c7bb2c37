#include "core/server/openai_responses.hpp"

#include <chrono>
#include <random>

#include "core/server/json_fields.hpp"

namespace loom {
namespace {

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
  return Json{{"prompt_tokens", u.prompt_tokens},
              {"completion_tokens", u.completion_tokens},
              {"total_tokens", u.prompt_tokens + u.completion_tokens}};
}

Json envelope(const ResponseMeta& meta, bool chunk) {
  const char* object = meta.kind == ApiKind::kChat
                           ? (chunk ? "chat.completion.chunk" : "chat.completion")
                           : "text_completion";
  return Json{
      {"id", meta.id}, {"object", object}, {"created", meta.created}, {"model", meta.model}};
}

Json finish_value(std::optional<FinishReason> finish) {
  return finish ? Json(openai_finish_reason(*finish)) : Json(nullptr);
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
    Json choice{{"index", c.index}, {"logprobs", c.logprobs}, {"finish_reason", finish_value(c.finish)}};
    if (meta.kind == ApiKind::kChat) {
      choice["message"] = Json{{"role", "assistant"}, {"content", c.text}};
    } else {
      choice["text"] = c.text;
    }
    list.push_back(std::move(choice));
  }
  out["choices"] = std::move(list);
  out["usage"] = usage_object(usage);
  return dump_json(out);
}

std::string stream_chunk_json(const ResponseMeta& meta, const ChunkChoice& c, bool usage_null) {
  Json out = envelope(meta, /*chunk=*/true);
  Json choice{{"index", c.index}, {"logprobs", c.logprobs}, {"finish_reason", finish_value(c.finish)}};
  if (meta.kind == ApiKind::kChat) {
    Json delta = Json::object();
    if (c.role_delta) delta["role"] = "assistant";
    if (!c.text.empty()) delta["content"] = c.text;
    choice["delta"] = std::move(delta);
  } else {
    choice["text"] = c.text;
  }
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

std::string models_json(const ModelInfo& model) {
  Json card{{"id", model.name},
            {"object", "model"},
            {"created", model.created},
            {"owned_by", "loom"},
            {"root", model.name},
            {"parent", nullptr},
            {"max_model_len", model.max_model_len}};
  return dump_json(Json{{"object", "list"}, {"data", Json::array({std::move(card)})}});
}

}  // namespace loom
