// Response bodies, SSE and HTTP framing, the metrics text and the fallback chat prompt, checked
// byte-exactly or field by field.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/server/chat_prompt.hpp"
#include "core/server/http_wire.hpp"
#include "core/server/metrics_text.hpp"
#include "core/server/openai_responses.hpp"
#include "core/server/sse_event.hpp"

namespace loom {
namespace {

using nlohmann::json;

ResponseMeta meta(ApiKind kind) { return ResponseMeta{kind, "id-1", 1234, "m"}; }

TEST(ServerResponseFormat, MetaIdsAreFreshAndPrefixed) {
  const ResponseMeta a = make_response_meta(ApiKind::kCompletion, "m");
  const ResponseMeta b = make_response_meta(ApiKind::kChat, "m");
  EXPECT_EQ(a.id.rfind("cmpl-", 0), 0u);
  EXPECT_EQ(a.id.size(), 5u + 32u);
  EXPECT_EQ(b.id.rfind("chatcmpl-", 0), 0u);
  EXPECT_NE(a.id.substr(5), b.id.substr(9));
  EXPECT_GT(a.created, 1600000000);
}

TEST(ServerResponseFormat, Completion) {
  const json j = json::parse(completion_response_json(meta(ApiKind::kCompletion),
                                                      {{0, "hi", FinishReason::kLength, nullptr}},
                                                      Usage{3, 2}));
  EXPECT_EQ(j, json::parse(R"({"id": "id-1", "object": "text_completion", "created": 1234,
    "model": "m", "choices": [{"index": 0, "text": "hi", "logprobs": null,
    "finish_reason": "length"}], "usage": {"prompt_tokens": 3, "completion_tokens": 2,
    "total_tokens": 5}})"));
}

TEST(ServerResponseFormat, Chat) {
  const json j = json::parse(
      completion_response_json(meta(ApiKind::kChat), {{0, "yo", FinishReason::kStop, nullptr}}, Usage{1, 1}));
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["choices"][0]["message"], json::parse(R"({"role": "assistant", "content": "yo"})"));
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(j["usage"]["total_tokens"], 2);
}

TEST(ServerResponseFormat, StreamChunks) {
  json c =
      json::parse(stream_chunk_json(meta(ApiKind::kCompletion), ChunkChoice{0, "a", std::nullopt, false, nullptr}, false));
  EXPECT_EQ(c["object"], "text_completion");
  EXPECT_EQ(c["choices"][0]["text"], "a");
  EXPECT_TRUE(c["choices"][0]["finish_reason"].is_null());
  EXPECT_FALSE(c.contains("usage"));

  c = json::parse(stream_chunk_json(meta(ApiKind::kChat), ChunkChoice{0, "", std::nullopt, true, nullptr}, true));
  EXPECT_EQ(c["object"], "chat.completion.chunk");
  EXPECT_EQ(c["choices"][0]["delta"], json::parse(R"({"role": "assistant"})"));
  EXPECT_TRUE(c["usage"].is_null());
  EXPECT_TRUE(c.contains("usage"));

  c = json::parse(stream_chunk_json(meta(ApiKind::kChat), ChunkChoice{0, "", FinishReason::kStop, false, nullptr}, false));
  EXPECT_EQ(c["choices"][0]["delta"], json::object());
  EXPECT_EQ(c["choices"][0]["finish_reason"], "stop");

  c = json::parse(usage_chunk_json(meta(ApiKind::kChat), Usage{4, 5}));
  EXPECT_EQ(c["choices"], json::array());
  EXPECT_EQ(c["usage"]["total_tokens"], 9);
}

TEST(ServerResponseFormat, SeveralChoicesAndLogprobs) {
  const json lp = json{{"content", json::array()}};
  const json j = json::parse(completion_response_json(
      meta(ApiKind::kChat), {{0, "a", FinishReason::kStop, lp}, {1, "bc", FinishReason::kLength, lp}},
      Usage{2, 5}));
  ASSERT_EQ(j["choices"].size(), 2u);
  EXPECT_EQ(j["choices"][1]["index"], 1);
  EXPECT_EQ(j["choices"][1]["message"]["content"], "bc");
  EXPECT_EQ(j["choices"][1]["finish_reason"], "length");
  EXPECT_EQ(j["choices"][0]["logprobs"], lp);
  const json c = json::parse(
      stream_chunk_json(meta(ApiKind::kCompletion), ChunkChoice{3, "x", std::nullopt, false, lp}, false));
  EXPECT_EQ(c["choices"][0]["index"], 3);
  EXPECT_EQ(c["choices"][0]["logprobs"], lp);
}

TEST(ServerResponseFormat, ErrorsAndModels) {
  EXPECT_EQ(json::parse(error_json(ApiError(400, "bad", "top_p"))),
            json::parse(R"({"error": {"message": "bad", "type": "invalid_request_error",
                            "param": "top_p", "code": null}})"));
  ModelInfo info{"tiny", 256, 512, 77};
  const json m = json::parse(models_json(info));
  EXPECT_EQ(m["object"], "list");
  EXPECT_EQ(m["data"][0]["id"], "tiny");
  EXPECT_EQ(m["data"][0]["object"], "model");
  EXPECT_EQ(m["data"][0]["created"], 77);
  EXPECT_EQ(m["data"][0]["owned_by"], "loom");
  EXPECT_EQ(m["data"][0]["max_model_len"], 256);
}

TEST(ServerResponseFormat, InvalidUtf8TextBecomesReplacementCharacter) {
  const json j = json::parse(
      completion_response_json(meta(ApiKind::kCompletion), {{0, "a\xC3", FinishReason::kStop, nullptr}}, Usage{}));
  EXPECT_EQ(j["choices"][0]["text"], "a\xEF\xBF\xBD");
}

TEST(ServerResponseFormat, SseFraming) {
  EXPECT_EQ(sse_event("{\"a\":1}"), "data: {\"a\":1}\n\n");
  EXPECT_EQ(kSseDone, "data: [DONE]\n\n");
}

TEST(ServerResponseFormat, HttpWire) {
  ResponseHead head{404, 11, true, "application/json", 2, {{"Allow", "GET"}}};
  EXPECT_EQ(serialize_head(head),
            "HTTP/1.1 404 Not Found\r\nServer: loom\r\nContent-Type: application/json\r\n"
            "Content-Length: 2\r\nAllow: GET\r\nConnection: keep-alive\r\n\r\n");
  ResponseHead stream{200, 11, false, "text/event-stream", std::nullopt, {}};
  EXPECT_EQ(serialize_head(stream),
            "HTTP/1.1 200 OK\r\nServer: loom\r\nContent-Type: text/event-stream\r\n"
            "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
  stream.version = 10;
  EXPECT_EQ(serialize_head(stream).find("chunked"), std::string::npos);
  EXPECT_EQ(chunk_frame("hello, world!!!!!"), "11\r\nhello, world!!!!!\r\n");
  EXPECT_EQ(chunk_frame(""), "");
}

TEST(ServerResponseFormat, MetricsText) {
  EngineStats s;
  s.num_running = 2;
  s.num_waiting = 5;
  s.kv_total_blocks = 8;
  s.kv_used_blocks = 2;
  s.kv_num_seqs = 3;
  s.num_preemptions = 1;
  s.requests_finished = 7;
  s.requests_finished_stop = 4;
  s.requests_finished_length = 3;
  s.prompt_tokens_total = 100;
  s.generation_tokens_total = 1234567890123;
  const std::string text = render_metrics(s, "a\"b");
  const auto has = [&](const std::string& line) {
    return text.find(line + "\n") != std::string::npos;
  };
  EXPECT_TRUE(has("# HELP loom:num_requests_running Number of requests in the running batch."));
  EXPECT_TRUE(has("# TYPE loom:num_requests_running gauge"));
  EXPECT_TRUE(has("loom:num_requests_running{model_name=\"a\\\"b\"} 2"));
  EXPECT_TRUE(has("loom:num_requests_waiting{model_name=\"a\\\"b\"} 5"));
  EXPECT_TRUE(has("loom:kv_cache_usage_perc{model_name=\"a\\\"b\"} 0.25"));
  EXPECT_TRUE(has("loom:kv_cache_used_blocks{model_name=\"a\\\"b\"} 2"));
  EXPECT_TRUE(has("loom:kv_cache_total_blocks{model_name=\"a\\\"b\"} 8"));
  EXPECT_TRUE(has("loom:kv_cache_num_seqs{model_name=\"a\\\"b\"} 3"));
  EXPECT_TRUE(has("# TYPE loom:num_preemptions_total counter"));
  EXPECT_TRUE(has("loom:num_preemptions_total{model_name=\"a\\\"b\"} 1"));
  EXPECT_TRUE(has("loom:prompt_tokens_total{model_name=\"a\\\"b\"} 100"));
  EXPECT_TRUE(has("loom:generation_tokens_total{model_name=\"a\\\"b\"} 1234567890123"));
  EXPECT_TRUE(has("loom:request_success_total{model_name=\"a\\\"b\",finished_reason=\"stop\"} 4"));
  EXPECT_TRUE(has("loom:request_success_total{model_name=\"a\\\"b\",finished_reason=\"length\"} 3"));
  EXPECT_TRUE(
      render_metrics(EngineStats{}, "m").find("loom:kv_cache_usage_perc{model_name=\"m\"} 0\n") !=
      std::string::npos);
}

TEST(ServerResponseFormat, FallbackChatPromptPutsSystemFirst) {
  const std::vector<ChatMessage> messages = {
      {"user", "Hi"}, {"assistant", "Hello"}, {"system", "Be kind."}, {"user", "Tell a story"}};
  EXPECT_EQ(render_chat_prompt(messages, true), "Be kind.\nHi\nHello\nTell a story\n");
  EXPECT_EQ(render_chat_prompt({}, true), "");
}

}  // namespace
}  // namespace loom
