// loom-server with a Hugging Face directory as [model] path: the Llama-3-style and Qwen3-style
// tiny checkpoints of tests/data/hf/ (their own tokenizer.json) stream, greedy, exactly the
// tokens transformers chose for the same prompt ids (expected.json, by
// tools/hf/make_tiny_checkpoints.py), compared as text through the model's own tokenizer; and
// through /v1/chat/completions, a conversation rendered with the checkpoint's own chat template
// gives transformers' apply_chat_template prompt (text and ids) and its greedy answer, compared
// token by token through the streamed logprobs' bytes (the OpenAI chat format carries no ids).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/executor/hf_model.hpp"
#include "core/server/chat_prompt.hpp"
#include "core/tokenizer/tokenizer_json.hpp"
#include "e2e/e2e_server.hpp"

namespace loom::test {
namespace {

using nlohmann::json;

class HfServe : public ::testing::TestWithParam<const char*> {};

TEST_P(HfServe, StreamsTheTransformersGreedyTokens) {
  const std::string dir = std::string(LOOM_TEST_DATA) + "/hf/" + GetParam();
  const json expected = read_json_file(dir + "/expected.json", false);
  const auto tok = load_tokenizer_json(dir);
  LiveServer server(demo_config(R"(
[scheduler]
plugin = "fcfs"
[cache]
plugin = "contiguous"
kv_memory = "16MiB"
)", dir));
  for (const json& result : expected["results"]) {
    std::vector<int32_t> want;
    for (const json& s : result["steps"]) want.push_back(s["token"].get<int32_t>());
    const json request = {{"model", "stories260K"}, {"prompt", result["prompt"]}, {"max_tokens", want.size()},
                          {"temperature", 0}, {"stream", true}};
    const HttpResponse r = server.post("/v1/completions", request);
    ASSERT_EQ(r.status, 200u) << r.body;
    std::string text;
    for (const std::string& data : sse_data_events(r.body)) {
      if (data == "[DONE]") continue;
      const json chunk = json::parse(data);
      if (!chunk["choices"].empty() && chunk["choices"][0].contains("text"))
        text += chunk["choices"][0]["text"].get<std::string>();
    }
    EXPECT_EQ(text, tok->decode(want)) << GetParam();
  }
}

TEST_P(HfServe, ChatStreamsTheTransformersGreedyAnswerWithItsOwnTemplate) {
  const std::string dir = std::string(LOOM_TEST_DATA) + "/hf/" + GetParam();
  const json chat = read_json_file(dir + "/expected.json", false).at("chat");
  const auto tok = load_tokenizer_json(dir);
  LiveServer server(demo_config(R"(
[scheduler]
plugin = "fcfs"
[cache]
plugin = "contiguous"
kv_memory = "16MiB"
)", dir));
  std::vector<int32_t> want;
  for (const json& s : chat["steps"]) want.push_back(s["token"].get<int32_t>());

  // The prompt: same text as transformers rendered, and the same ids the server will feed.
  const HttpResponse rendered =
      server.post("/apply-template", {{"model", "stories260K"}, {"messages", chat["messages"]}});
  ASSERT_EQ(rendered.status, 200u) << rendered.body;
  const std::string text = json::parse(rendered.body)["prompt"].get<std::string>();
  EXPECT_EQ(text, chat["prompt_text"].get<std::string>()) << GetParam();
  ASSERT_NE(server.engine().chat_template(), nullptr) << GetParam();
  EXPECT_EQ(tokenize_chat_prompt(server.engine().tokenizer(), server.engine().chat_template(), text),
            chat["prompt"].get<std::vector<int32_t>>())
      << GetParam();

  const json request = {{"model", "stories260K"}, {"messages", chat["messages"]}, {"max_tokens", want.size()},
                        {"temperature", 0},       {"stream", true},               {"logprobs", true}};
  const HttpResponse r = server.post("/v1/chat/completions", request);
  ASSERT_EQ(r.status, 200u) << r.body;
  std::string content;
  std::vector<std::vector<int>> got_bytes;
  for (const std::string& data : sse_data_events(r.body)) {
    if (data == "[DONE]") continue;
    const json chunk = json::parse(data);
    if (chunk["choices"].empty()) continue;
    const json& choice = chunk["choices"][0];
    if (choice["delta"].contains("content")) content += choice["delta"]["content"].get<std::string>();
    if (choice.contains("logprobs") && choice["logprobs"].is_object())
      for (const json& e : choice["logprobs"]["content"]) got_bytes.push_back(e["bytes"].get<std::vector<int>>());
  }
  std::vector<std::vector<int>> want_bytes;
  for (int32_t id : want) {
    const std::string piece = tok->token_to_piece(id, /*render_special=*/true);
    want_bytes.emplace_back();
    for (unsigned char c : piece) want_bytes.back().push_back(c);
  }
  EXPECT_EQ(got_bytes, want_bytes) << GetParam();
  EXPECT_EQ(content, tok->decode(want)) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Models, HfServe, ::testing::Values("llama", "qwen3"));

}  // namespace
}  // namespace loom::test
