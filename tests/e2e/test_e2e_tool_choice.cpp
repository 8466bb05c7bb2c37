// tool_choice enforced on a real model: the demo model (which knows nothing of tools) at
// temperature 1, its output parsed as Hermes calls. "required" always yields a parseable call of
// a given tool with schema-valid arguments, a named function yields exactly that call, and "auto"
// with strict tools serves.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "e2e/e2e_server.hpp"

namespace loom::test {
namespace {

using nlohmann::json;

// Finite schemas, so every call completes well within max_tokens.
const json kTools = json::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
      "city": {"type": "string", "maxLength": 8}, "unit": {"enum": ["c", "f"]},
      "days": {"type": "integer", "minimum": 1, "maximum": 7}},
    "required": ["city", "unit"], "additionalProperties": false}}},
  {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {
      "zone": {"type": "string", "maxLength": 5}}, "required": ["zone"], "additionalProperties": false}}}])");

std::string hermes_config(const std::string& model = std::string(LOOM_TEST_DATA) + "/stories260K.gguf",
                          const std::string& kv_memory = "16MiB") {
  std::string toml = demo_config(
      "[scheduler]\nplugin = \"continuous\"\nmax_num_seqs = 16\nmax_num_batched_tokens = 128\n"
      "[cache]\nplugin = \"paged\"\nkv_memory = \"" + kv_memory + "\"\nblock_size = 16\nenable_prefix_caching = true\n",
      model);
  const std::string name = "name = \"stories260K\"\n";
  return toml.replace(toml.find(name), name.size(), name + "tool_parser = \"hermes\"\n");
}

size_t chars(const std::string& s) {
  size_t n = 0;
  for (const unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// The call's arguments (JSON text) meet the tool's schema above.
void expect_valid_call(const json& call) {
  ASSERT_EQ(call["type"], "function") << call.dump();
  const std::string name = call["function"]["name"];
  json args;
  ASSERT_NO_THROW(args = json::parse(call["function"]["arguments"].get<std::string>())) << call.dump();
  ASSERT_TRUE(args.is_object()) << call.dump();
  if (name == "get_weather") {
    for (const auto& [key, _] : args.items()) EXPECT_TRUE(key == "city" || key == "unit" || key == "days") << call.dump();
    ASSERT_TRUE(args.contains("city") && args["city"].is_string()) << call.dump();
    EXPECT_LE(chars(args["city"]), 8u) << call.dump();
    ASSERT_TRUE(args.contains("unit")) << call.dump();
    EXPECT_TRUE(args["unit"] == "c" || args["unit"] == "f") << call.dump();
    if (args.contains("days")) {
      ASSERT_TRUE(args["days"].is_number_integer()) << call.dump();
      EXPECT_GE(args["days"].get<int>(), 1);
      EXPECT_LE(args["days"].get<int>(), 7);
    }
  } else {
    ASSERT_EQ(name, "get_time") << call.dump();
    ASSERT_EQ(args.size(), 1u) << call.dump();
    ASSERT_TRUE(args["zone"].is_string()) << call.dump();
    EXPECT_LE(chars(args["zone"]), 5u) << call.dump();
  }
}

json chat_body(const json& extra) {
  json body = {{"messages", {{{"role", "user"}, {"content", "Once upon a time"}}}},
               {"max_tokens", 200}, {"temperature", 1.0}, {"tools", kTools}};
  body.update(extra);
  return body;
}

json post_ok(const LiveServer& server, const json& body) {
  const HttpResponse r = server.post("/v1/chat/completions", body);
  EXPECT_EQ(r.status, 200u) << r.body;
  return json::parse(r.body);
}

TEST(E2eToolChoice, RequiredAlwaysYieldsAValidCall) {
  LiveServer server(hermes_config());
  int weather = 0, time = 0;
  for (int i = 0; i < 6; ++i) {
    const json r = post_ok(server, chat_body({{"tool_choice", "required"}, {"parallel_tool_calls", false},
                                              {"n", 8}, {"seed", 40 + 8 * i}}));
    ASSERT_EQ(r["choices"].size(), 8u);
    for (const json& c : r["choices"]) {
      EXPECT_EQ(c["finish_reason"], "tool_calls") << c.dump();
      const json& calls = c["message"]["tool_calls"];
      ASSERT_EQ(calls.size(), 1u) << c.dump();
      expect_valid_call(calls[0]);
      (calls[0]["function"]["name"] == "get_weather" ? weather : time) += 1;
      EXPECT_TRUE(c["message"]["content"].is_null() || c["message"]["content"] == "") << c.dump();
    }
  }
  // The model chooses between the tools: both are reachable.
  EXPECT_GT(weather, 0);
  EXPECT_GT(time, 0);
}

TEST(E2eToolChoice, ParallelRequiredCallsAreAllValid) {
  LiveServer server(hermes_config());
  for (int i = 0; i < 4; ++i) {
    const json r = post_ok(server, chat_body({{"tool_choice", "required"}, {"n", 4}, {"seed", 7 + 4 * i}, {"max_tokens", 400}}));
    for (const json& c : r["choices"]) {
      const json& calls = c["message"]["tool_calls"];
      ASSERT_GE(calls.size(), 1u) << c.dump();
      // The grammar allows any number of calls, so max_tokens may cut the last one; as with
      // OpenAI, a call cut by the length limit is returned with what was written (and the
      // stream has already sent it). Every call before it is whole.
      const bool cut = c["finish_reason"] == "length";
      if (!cut) {
        EXPECT_EQ(c["finish_reason"], "tool_calls") << c.dump();
      }
      for (size_t k = 0; k + (cut ? 1 : 0) < calls.size(); ++k) expect_valid_call(calls[k]);
    }
  }
}

TEST(E2eToolChoice, NamedFunctionIsTheOneCalledStreamedToo) {
  LiveServer server(hermes_config());
  const json named = {{"type", "function"}, {"function", {{"name", "get_time"}}}};
  const json r = post_ok(server, chat_body({{"tool_choice", named}, {"n", 8}, {"seed", 11}}));
  for (const json& c : r["choices"]) {
    ASSERT_EQ(c["message"]["tool_calls"].size(), 1u) << c.dump();
    EXPECT_EQ(c["message"]["tool_calls"][0]["function"]["name"], "get_time");
    expect_valid_call(c["message"]["tool_calls"][0]);
    EXPECT_EQ(c["finish_reason"], "tool_calls");
  }
  // Streamed: the deltas assemble into the same kind of call.
  json body = chat_body({{"tool_choice", named}, {"seed", 12}, {"stream", true}});
  const HttpResponse s = server.post("/v1/chat/completions", body);
  ASSERT_EQ(s.status, 200u);
  std::string name, arguments, finish;
  for (const std::string& data : sse_data_events(s.body)) {
    if (data == "[DONE]") break;
    const json c = json::parse(data)["choices"][0];
    if (c["delta"].contains("tool_calls")) {
      const json& d = c["delta"]["tool_calls"][0];
      EXPECT_EQ(d["index"], 0);
      if (d["function"].contains("name")) name += d["function"]["name"].get<std::string>();
      arguments += d["function"].value("arguments", "");
    }
    if (!c["finish_reason"].is_null()) finish = c["finish_reason"];
  }
  EXPECT_EQ(name, "get_time");
  EXPECT_EQ(finish, "tool_calls");
  expect_valid_call({{"type", "function"}, {"function", {{"name", name}, {"arguments", arguments}}}});
}

// Auto with strict tools end to end: the grammar compiles from the request and serves n = 8
// choices, and any call the model makes is valid. The demo model seldom starts a call, so the
// enforcement itself (no marker in free text, a started call must be valid) is shown by
// GrammarToolCalls.OptionalCallsFollowFreeTextWithoutTheMarker, not here.
TEST(E2eToolChoice, AutoWithStrictToolsServesAndAnyCallIsValid) {
  LiveServer server(hermes_config());
  json tools = kTools;
  for (json& t : tools) t["function"]["strict"] = true;
  for (int i = 0; i < 3; ++i) {
    const json r = post_ok(server, chat_body({{"tools", tools}, {"n", 8}, {"seed", 300 + 8 * i}, {"max_tokens", 64}}));
    for (const json& c : r["choices"]) {
      const json& m = c["message"];
      // Free text never holds the marker (it would start a call), and every call is valid.
      if (m["content"].is_string()) {
        EXPECT_EQ(m["content"].get<std::string>().find("<tool_call>"), std::string::npos) << c.dump();
      }
      if (m.contains("tool_calls")) {
        for (const json& call : m["tool_calls"]) expect_valid_call(call);
      }
    }
  }
}

// The acceptance run on SmolLM2-135M-Instruct (a real chat model whose template has no tools, so
// the Hermes syntax is configured): 200 answers (25 requests of n = 8) at temperature 1 under
// tool_choice "required", every one a parseable call with schema-valid arguments.
TEST(E2eToolChoice, SmolLM2RequiredAtTemperature1AlwaysCallsValidly) {
  const std::string model = std::string(LOOM_SOURCE_DIR) + "/build/models/SmolLM2-135M-Instruct.Q4_1.gguf";
  if (!std::filesystem::exists(model)) GTEST_SKIP() << model << " is missing (tools/fetch-model.sh fetches it)";
  LiveServer server(hermes_config(model, "512MiB"));
  for (int i = 0; i < 25; ++i) {
    json body = chat_body({{"tool_choice", "required"}, {"parallel_tool_calls", false}, {"n", 8}, {"seed", 1000 + 8 * i}});
    body["messages"] = {{{"role", "user"}, {"content", i % 2 ? "What time is it in UTC?" : "Is it raining in Oslo?"}}};
    const HttpResponse r = HttpTestClient(server.port(), "127.0.0.1", std::chrono::seconds(300))
                               .post("/v1/chat/completions", body.dump());
    ASSERT_EQ(r.status, 200u) << r.body;
    for (const json& c : json::parse(r.body)["choices"]) {
      EXPECT_EQ(c["finish_reason"], "tool_calls") << c.dump();
      ASSERT_EQ(c["message"]["tool_calls"].size(), 1u) << c.dump();
      expect_valid_call(c["message"]["tool_calls"][0]);
    }
  }
}

}  // namespace
}  // namespace loom::test
