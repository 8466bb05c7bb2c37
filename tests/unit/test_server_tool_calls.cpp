// Chat output through the server's parsers against a fake engine whose template writes Hermes
// tool calls and <think> reasoning: the message's reasoning_content / reasoning / tool_calls and
// finish_reason "tool_calls", the streamed deltas exactly as OpenAI sends them, tool_choice and
// tool messages in history, and the refusals that keep nothing silently ignored.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/server/http_server.hpp"
#include "core/template/chat_template.hpp"
#include "tests/unit/fake_engine.hpp"
#include "tests/unit/http_test_client.hpp"

namespace loom {
namespace {

using nlohmann::json;
using test::FakeEngine;
using test::HttpTestClient;
using test::sse_data_events;

const std::string kReply =
    "<think>The user wants weather.</think>\n\nChecking.<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
    "{\"city\": \"Paris\"}}\n</tool_call><tool_call>{\"name\": \"get_time\", \"arguments\": {}}</tool_call>";

// A Qwen-like template: mentions both formats, renders tool messages and calls.
const char* kTemplate =
    "{% for m in messages %}<|{{ m.role }}|>{{ m.content if m.content else '' }}"
    "{% if m.tool_calls %}{% for c in m.tool_calls %}<tool_call>{{ c.function.name }}:{{ c.function.arguments.city }}"
    "</tool_call>{% endfor %}{% endif %}\n{% endfor %}{% if add_generation_prompt %}<|assistant|>"
    // Qwen3's switch: thinking off renders an empty block into the prompt.
    "{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n{% endif %}{% endif %}";

const std::string kTools =
    R"("tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}])";

class ServerToolCalls : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions options{"127.0.0.1", 0, 2, 1 << 20, ""};
    options.chat_template = std::make_shared<const ChatTemplate>(kTemplate, "", "");
    server_ = std::make_unique<HttpServer>(engine_, options);
    server_->start();
    client_ = std::make_unique<HttpTestClient>(server_->port());
  }

  std::string chat(const std::string& extra) const {
    return R"({"messages": [{"role": "user", "content": "Weather?"}], "max_tokens": 300)" +
           (extra.empty() ? "" : ", " + extra) + "}";
  }

  FakeEngine engine_{kReply, /*max_model_len=*/512};
  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<HttpTestClient> client_;
};

TEST_F(ServerToolCalls, MessageCarriesReasoningAndToolCalls) {
  const auto r = client_->post("/v1/chat/completions", chat(kTools));
  ASSERT_EQ(r.status, 200u) << r.body;
  const json c = json::parse(r.body)["choices"][0];
  EXPECT_EQ(c["finish_reason"], "tool_calls");
  const json& m = c["message"];
  EXPECT_EQ(m["content"], "Checking.");
  EXPECT_EQ(m["reasoning_content"], "The user wants weather.");
  EXPECT_EQ(m["reasoning"], "The user wants weather.");
  ASSERT_EQ(m["tool_calls"].size(), 2u);
  EXPECT_EQ(m["tool_calls"][0]["type"], "function");
  EXPECT_EQ(m["tool_calls"][0]["id"].get<std::string>().substr(0, 5), "call_");
  EXPECT_EQ(m["tool_calls"][0]["id"].get<std::string>().size(), 29u);
  EXPECT_EQ(m["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(m["tool_calls"][0]["function"]["arguments"], R"({"city":"Paris"})");
  EXPECT_EQ(m["tool_calls"][1]["function"]["name"], "get_time");
  EXPECT_NE(m["tool_calls"][0]["id"], m["tool_calls"][1]["id"]);
}

TEST_F(ServerToolCalls, ParallelFalseKeepsTheFirstCallAndNoneParsesNothing) {
  json m = json::parse(client_->post("/v1/chat/completions", chat(kTools + R"(, "parallel_tool_calls": false)")).body);
  EXPECT_EQ(m["choices"][0]["message"]["tool_calls"].size(), 1u);
  m = json::parse(client_->post("/v1/chat/completions", chat(kTools + R"(, "tool_choice": "none")")).body);
  const json& msg = m["choices"][0]["message"];
  EXPECT_FALSE(msg.contains("tool_calls"));
  EXPECT_EQ(m["choices"][0]["finish_reason"], "stop");
  EXPECT_NE(msg["content"].get<std::string>().find("<tool_call>"), std::string::npos);
}

TEST_F(ServerToolCalls, StreamedDeltasAsOpenAiSendsThem) {
  const auto r = client_->post("/v1/chat/completions", chat(kTools + R"(, "stream": true)"));
  ASSERT_EQ(r.status, 200u);
  std::string reasoning, content;
  std::vector<json> call_deltas;
  std::vector<std::string> finishes;
  for (const std::string& e : sse_data_events(r.body)) {
    if (e == "[DONE]") break;
    const json c = json::parse(e)["choices"][0];
    const json& d = c["delta"];
    reasoning += d.value("reasoning_content", "");
    content += d.value("content", "");
    if (d.contains("tool_calls")) {
      ASSERT_EQ(d["tool_calls"].size(), 1u);
      call_deltas.push_back(d["tool_calls"][0]);
    }
    if (!c["finish_reason"].is_null()) finishes.push_back(c["finish_reason"]);
  }
  EXPECT_EQ(reasoning, "The user wants weather.");
  EXPECT_EQ(content, "Checking.");
  // Per call: index, id, type, name and empty arguments first; then the arguments piece by
  // piece as the engine generates them (one byte per step here, whitespace dropped).
  const std::vector<std::pair<std::string, std::string>> expected{{"get_weather", R"({"city":"Paris"})"},
                                                                   {"get_time", "{}"}};
  size_t at = 0;
  for (size_t call = 0; call < expected.size(); ++call) {
    ASSERT_LT(at, call_deltas.size());
    const json& head = call_deltas[at++];
    EXPECT_EQ(head["index"], call);
    EXPECT_EQ(head["type"], "function");
    EXPECT_EQ(head["function"]["name"], expected[call].first);
    EXPECT_EQ(head["function"]["arguments"], "");
    EXPECT_TRUE(head.contains("id"));
    std::string arguments;
    size_t pieces = 0;
    for (; at < call_deltas.size() && !call_deltas[at].contains("id"); ++at, ++pieces) {
      const json& d = call_deltas[at];
      ASSERT_EQ(d.size(), 2u) << d.dump();
      EXPECT_EQ(d["index"], call);
      arguments += d["function"]["arguments"].get<std::string>();
    }
    EXPECT_EQ(arguments, expected[call].second);
    EXPECT_EQ(pieces, expected[call].second.size());
  }
  EXPECT_EQ(at, call_deltas.size());
  EXPECT_EQ(finishes, (std::vector<std::string>{"tool_calls"}));
}

TEST_F(ServerToolCalls, ToolMessagesAndAssistantCallsInHistory) {
  const std::string body = R"({"messages": [
      {"role": "user", "content": "Weather?"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
        "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": "18C"}],
    "max_tokens": 4, )" + kTools + "}";
  const auto r = client_->post("/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200u) << r.body;
  // The template saw the arguments as an object (it printed .city), and the tool message.
  const std::string prompt = engine_.tokenizer().decode(engine_.last_request()->prompt);
  EXPECT_NE(prompt.find("<tool_call>get_weather:Paris</tool_call>"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("<|tool|>18C"), std::string::npos) << prompt;
}

TEST_F(ServerToolCalls, EnableThinkingReachesTheTemplate) {
  ASSERT_EQ(client_->post("/v1/chat/completions", chat(R"("chat_template_kwargs": {"enable_thinking": false})")).status,
            200u);
  const std::string off = engine_.tokenizer().decode(engine_.last_request()->prompt);
  EXPECT_TRUE(off.ends_with("Weather?<|assistant|><think>\n\n</think>\n\n")) << off;
  ASSERT_EQ(client_->post("/v1/chat/completions", chat("")).status, 200u);
  const std::string on = engine_.tokenizer().decode(engine_.last_request()->prompt);
  EXPECT_TRUE(on.ends_with("Weather?<|assistant|>")) << on;
}

// required, a named function and strict tools reach the engine as a grammar; auto and none
// without strict tools do not (the grammar itself is tested in test_grammar_tool_calls and on a
// real model in test_e2e_tool_choice).
TEST_F(ServerToolCalls, ConstrainingChoicesAttachAGrammar) {
  const std::string strict_tools =
      R"("tools": [{"type": "function", "function": {"name": "get_weather", "strict": true, "parameters": {"type": "object"}}}])";
  const struct {
    std::string extra;
    bool constrained;
  } cases[] = {{kTools, false},
               {kTools + R"(, "tool_choice": "none")", false},
               {kTools + R"(, "tool_choice": "required")", true},
               {kTools + R"(, "tool_choice": {"type": "function", "function": {"name": "get_weather"}})", true},
               {strict_tools, true},
               {strict_tools + R"(, "tool_choice": "none")", false}};
  for (const auto& c : cases) {
    const auto r = client_->post("/v1/chat/completions", chat(c.extra));
    ASSERT_EQ(r.status, 200u) << c.extra << " -> " << r.body;
    EXPECT_EQ(engine_.last_request()->sampling.grammar != nullptr, c.constrained) << c.extra;
  }
}

TEST_F(ServerToolCalls, RefusalsNameTheField) {
  struct Case {
    std::string extra, param, snippet;
  };
  const Case cases[] = {
      {kTools + R"(, "tool_choice": {"type": "function", "function": {"name": "get_time"}})",
       "tool_choice.function.name", "'get_time' is not one of 'tools'"},
      {R"("tool_choice": "auto")", "tool_choice", "no 'tools'"},
      {R"("tool_choice": "required")", "tool_choice", "no 'tools'"},
      {R"("tools": [{"type": "function", "function": {"name": "f", "strict": true, "parameters":
          {"type": "object", "properties": {"x": {"type": "number", "multipleOf": 2}}}}}])",
       "tools[0].function.parameters", "cannot be enforced with strict: true"},
      {kTools + R"(, "tool_choice": "required", "response_format": {"type": "json_object"})", "tool_choice",
       "both constrain the answer"},
      {R"("tools": [{"type": "function", "function": {"name": "f"}}, {"type": "function", "function": {"name": "f"}}])",
       "tools[1].function.name", "given twice"},
      {R"("tools": [{"type": "function", "function": {}}])", "tools[0].function.name", "is required"},
      {R"("tools": [{"type": "retrieval"}])", "tools[0].type", "must be \"function\""},
  };
  for (const Case& c : cases) {
    const auto r = client_->post("/v1/chat/completions", chat(c.extra));
    EXPECT_EQ(r.status, 400u) << c.extra;
    const json e = json::parse(r.body)["error"];
    EXPECT_EQ(e["param"], c.param) << r.body;
    EXPECT_NE(e["message"].get<std::string>().find(c.snippet), std::string::npos) << r.body;
  }
  const auto bad_tool_msg = client_->post(
      "/v1/chat/completions", R"({"messages": [{"role": "tool", "content": "x"}]})");
  EXPECT_EQ(bad_tool_msg.status, 400u);
  EXPECT_NE(bad_tool_msg.body.find("tool_call_id"), std::string::npos);
  const auto bad_args = client_->post("/v1/chat/completions", R"({"messages": [{"role": "assistant", "tool_calls":
      [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{not json"}}]}]})");
  EXPECT_EQ(bad_args.status, 400u);
  EXPECT_NE(bad_args.body.find("messages[0].tool_calls[0].function.arguments"), std::string::npos);
}

}  // namespace
}  // namespace loom
