// The tool-call grammars: text without a marker (every text that avoids it, and only those),
// calls in each family's syntax with arguments under their schema, required vs optional, one
// call vs several.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/grammar/tool_call_grammar.hpp"
#include "tests/unit/grammar_support.hpp"

namespace loom {
namespace {

using test::full_match;
using test::gbnf;
using test::prefix_ok;

// Every string over {a, b, <} up to length 7 (and the marker's own letters) is accepted exactly
// when it does not contain the marker: the automaton against a direct search.
TEST(GrammarToolCalls, TextWithoutMarkerIsExact) {
  for (const std::string marker : {"aab", "abab", "<a<"}) {
    const auto g = gbnf("root ::= t0\n" + text_without_rules(marker, "t"));
    const std::string alphabet = "ab<";
    std::vector<std::string> level = {""};
    for (int len = 0; len <= 7; ++len) {
      std::vector<std::string> next;
      for (const std::string& s : level) {
        EXPECT_EQ(full_match(g, s), s.find(marker) == std::string::npos) << marker << " / " << s;
        for (const char c : alphabet) next.push_back(s + c);
      }
      level = std::move(next);
    }
    EXPECT_TRUE(full_match(g, "text with \xC3\xA9 and \"quotes\" and ]^-\\ " + marker.substr(1)));
  }
}

std::vector<ToolGrammarFunction> weather_and_time() {
  const auto schema = nlohmann::ordered_json::parse(R"({"type": "object", "properties": {
      "city": {"type": "string", "maxLength": 8}, "days": {"type": "integer", "minimum": 1, "maximum": 7}},
      "required": ["city"], "additionalProperties": false})");
  return {{"get_weather", json_schema_rules(schema, "w-")}, {"get_time", {"json-object", ""}}};
}

ToolCallSyntax hermes() {
  ToolCallSyntax s;
  s.marker = "<tool_call>";
  s.call_close = "</tool_call>";
  s.call_reopen = "<tool_call>";
  s.arguments_key = "arguments";
  return s;
}

TEST(GrammarToolCalls, HermesRequiredFollowsTheSchema) {
  const auto one = gbnf(tool_call_grammar(hermes(), weather_and_time(), ToolCallMode::kRequired, false));
  EXPECT_TRUE(full_match(one, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}\n</tool_call>"));
  EXPECT_TRUE(full_match(one, "<tool_call>{\"name\":\"get_time\",\"arguments\":{\"tz\":\"UTC\"}}</tool_call>"));
  EXPECT_FALSE(prefix_ok(one, "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"days\""));  // city first
  EXPECT_FALSE(prefix_ok(one, "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 8"));
  EXPECT_FALSE(prefix_ok(one, "<tool_call>{\"name\": \"set_alarm\""));
  EXPECT_FALSE(prefix_ok(one, "Sure! <tool_call>"));  // nothing but calls
  EXPECT_FALSE(full_match(one, "<tool_call>{\"name\":\"get_time\",\"arguments\":{}}</tool_call><tool_call>"));
  const auto many = gbnf(tool_call_grammar(hermes(), weather_and_time(), ToolCallMode::kRequired, true));
  EXPECT_TRUE(full_match(many, "<tool_call>{\"name\":\"get_time\",\"arguments\":{}}</tool_call>\n"
                               "<tool_call>{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Oslo\"}}</tool_call>"));
  EXPECT_FALSE(full_match(many, ""));
}

TEST(GrammarToolCalls, OptionalCallsFollowFreeTextWithoutTheMarker) {
  const auto g = gbnf(tool_call_grammar(hermes(), weather_and_time(), ToolCallMode::kOptional, true));
  EXPECT_TRUE(full_match(g, ""));
  EXPECT_TRUE(full_match(g, "It is sunny <tool_ in Paris."));
  EXPECT_TRUE(full_match(g, "Let me check.<tool_call>{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Rome\"}}</tool_call>"));
  // Once the marker is written, the call must be valid.
  EXPECT_FALSE(prefix_ok(g, "Let me check.<tool_call>{\"name\":\"get_weather\",\"arguments\":{\"town\""));
  EXPECT_FALSE(prefix_ok(g, "<tool_call>hello"));
}

TEST(GrammarToolCalls, Llama3AndMistralSyntax) {
  ToolCallSyntax llama;
  llama.marker = "<|python_tag|>";
  llama.marker_optional = true;
  llama.separator = ";";
  llama.arguments_key = "parameters";
  const auto l = gbnf(tool_call_grammar(llama, weather_and_time(), ToolCallMode::kRequired, true));
  EXPECT_TRUE(full_match(l, "{\"name\": \"get_time\", \"parameters\": {}}"));
  EXPECT_TRUE(full_match(l, "<|python_tag|>{\"name\": \"get_time\", \"parameters\": {}}; {\"name\": \"get_weather\", "
                            "\"parameters\": {\"city\": \"Lima\"}}"));
  EXPECT_FALSE(prefix_ok(l, "{\"name\": \"get_time\", \"arguments\""));
  const auto lo = gbnf(tool_call_grammar(llama, weather_and_time(), ToolCallMode::kOptional, true));
  EXPECT_TRUE(full_match(lo, "The answer is {42}."));
  EXPECT_TRUE(full_match(lo, "<b>bold</b>"));
  EXPECT_TRUE(full_match(lo, "{\"name\": \"get_time\", \"parameters\": {}}"));
  EXPECT_FALSE(prefix_ok(lo, "{\"nam\""));  // JSON first is a call

  ToolCallSyntax mistral;
  mistral.marker = "[TOOL_CALLS]";
  mistral.list_open = "[";
  mistral.list_close = "]";
  mistral.separator = ",";
  mistral.arguments_key = "arguments";
  const auto m = gbnf(tool_call_grammar(mistral, weather_and_time(), ToolCallMode::kRequired, true));
  EXPECT_TRUE(full_match(m, "[TOOL_CALLS][{\"name\": \"get_time\", \"arguments\": {}}, {\"name\": \"get_weather\", "
                            "\"arguments\": {\"city\": \"Kyiv\", \"days\": 7}}]"));
  EXPECT_FALSE(full_match(m, "[TOOL_CALLS][]"));
}

TEST(GrammarToolCalls, FunctionNamesAreLiteralsWhateverTheyHold) {
  const std::vector<ToolGrammarFunction> odd = {{"a\"b\\c d", {"json-object", ""}}};
  const auto g = gbnf(tool_call_grammar(hermes(), odd, ToolCallMode::kRequired, false));
  EXPECT_TRUE(full_match(g, "<tool_call>{\"name\": \"a\\\"b\\\\c d\", \"arguments\": {}}</tool_call>"));
}

}  // namespace
}  // namespace loom
