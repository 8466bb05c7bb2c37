// Tool-call parsers per family on recorded model outputs: parsed whole, split in two at every
// byte boundary, and fed one byte at a time, each way giving exactly the same calls (none
// dropped, none duplicated) and the same content. Also the reasoning parser, the same way.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/server/reasoning_parser.hpp"
#include "core/server/tool_call_parser.hpp"

namespace loom {
namespace {

struct Parsed {
  std::string content;
  std::vector<std::pair<std::string, std::string>> calls;  // name, arguments
  bool operator==(const Parsed&) const = default;
};

// Fragments join into calls: a call's first fragment names it, the rest extend its arguments,
// and calls are numbered in order.
void add(Parsed& p, ToolCallDelta&& d) {
  p.content += d.content;
  for (ToolCallFragment& f : d.fragments) {
    if (f.begins) {
      EXPECT_EQ(static_cast<size_t>(f.call), p.calls.size());
      p.calls.emplace_back(f.name, f.arguments);
    } else {
      ASSERT_FALSE(p.calls.empty());
      EXPECT_EQ(static_cast<size_t>(f.call) + 1, p.calls.size());
      EXPECT_TRUE(f.name.empty());
      p.calls.back().second += f.arguments;
    }
  }
}

Parsed parse_chunks(ToolCallFormat f, const std::vector<std::string>& chunks) {
  ToolCallParser parser(f);
  Parsed p;
  for (const std::string& c : chunks) add(p, parser.push(c));
  add(p, parser.flush());
  return p;
}

// Whole, every two-way split, and byte by byte all give `expected`.
void expect_every_split(ToolCallFormat f, const std::string& text, const Parsed& expected) {
  EXPECT_EQ(parse_chunks(f, {text}), expected) << "whole";
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    EXPECT_EQ(parse_chunks(f, {text.substr(0, cut), text.substr(cut)}), expected) << "split at " << cut;
  }
  std::vector<std::string> bytes;
  for (char c : text) bytes.emplace_back(1, c);
  EXPECT_EQ(parse_chunks(f, bytes), expected) << "byte by byte";
}

// Qwen2.5-Instruct's format: two calls with text before, as the model writes them.
TEST(ToolCallParser, HermesTwoCallsAndLeadingText) {
  const std::string out =
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": "
      "\"celsius\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": "
      "\"Europe/Paris\"}}\n</tool_call>";
  expect_every_split(ToolCallFormat::kHermes, out,
                     Parsed{"Let me check.\n\n",
                            {{"get_weather", R"({"city":"Paris","unit":"celsius"})"},
                             {"get_time", R"({"tz":"Europe/Paris"})"}}});
}

TEST(ToolCallParser, HermesMarkersInsideStringsAndBrokenBlocks) {
  // A '}' and a tag-like text inside an argument string do not end the call early.
  expect_every_split(ToolCallFormat::kHermes,
                     "<tool_call>{\"name\": \"echo\", \"arguments\": {\"s\": \"a}b <tool\"}}</tool_call>",
                     Parsed{"", {{"echo", R"({"s":"a}b <tool"})"}}});
  // Not a call: given back as text, never dropped.
  expect_every_split(ToolCallFormat::kHermes, "x<tool_call>not json</tool_call>y",
                     Parsed{"x<tool_call>not json</tool_call>y", {}});
  // Unclosed at the end of output but complete JSON: still a call.
  expect_every_split(ToolCallFormat::kHermes, "<tool_call>{\"name\": \"f\", \"arguments\": {}}",
                     Parsed{"", {{"f", "{}"}}});
  // Plain text with a '<' is content, whole.
  expect_every_split(ToolCallFormat::kHermes, "a < b <tool", Parsed{"a < b <tool", {}});
}

// Llama 3.1/3.2: the JSON form and the <|python_tag|> form, several calls joined by ';'.
TEST(ToolCallParser, Llama3JsonAndPythonTag) {
  expect_every_split(ToolCallFormat::kLlama3Json,
                     "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"San Francisco\"}}",
                     Parsed{"", {{"get_weather", R"({"city":"San Francisco"})"}}});
  expect_every_split(ToolCallFormat::kLlama3Json,
                     "<|python_tag|>{\"name\": \"a\", \"parameters\": {\"x\": 1}}; {\"name\": \"b\", "
                     "\"parameters\": {}}",
                     Parsed{"", {{"a", R"({"x":1})"}, {"b", "{}"}}});
  // An answer that is not a call stays content, JSON or not.
  expect_every_split(ToolCallFormat::kLlama3Json, "The answer is {42}.", Parsed{"The answer is {42}.", {}});
  expect_every_split(ToolCallFormat::kLlama3Json, "{\"answer\": 42}", Parsed{"{\"answer\": 42}", {}});
}

// Mistral 7B Instruct v0.3: [TOOL_CALLS] then a JSON array.
TEST(ToolCallParser, MistralArray) {
  expect_every_split(ToolCallFormat::kMistral,
                     "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, "
                     "{\"name\": \"get_time\", \"arguments\": {}}]",
                     Parsed{"", {{"get_weather", R"({"city":"Paris"})"}, {"get_time", "{}"}}});
  expect_every_split(ToolCallFormat::kMistral, "no calls [TOOL", Parsed{"no calls [TOOL", {}});
}

// Streaming sends a call as it is generated: its name as soon as the arguments object opens,
// then each byte of the arguments (compacted) when it arrives, never after the call is over.
TEST(ToolCallParser, ArgumentsStreamAsTheyAreGenerated) {
  const std::string head = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": ";
  const std::string args = "{\"city\": \"Paris\", \"days\": [1, 2]}";
  ToolCallParser parser(ToolCallFormat::kHermes);
  ToolCallDelta d = parser.push(head);
  EXPECT_TRUE(d.fragments.empty());  // the arguments object has not opened yet
  std::vector<std::string> pieces;
  for (size_t i = 0; i < args.size(); ++i) {
    d = parser.push(args.substr(i, 1));
    if (i == 0) {
      ASSERT_EQ(d.fragments.size(), 1u);
      EXPECT_TRUE(d.fragments[0].begins);
      EXPECT_EQ(d.fragments[0].name, "get_weather");
    }
    for (const ToolCallFragment& f : d.fragments) pieces.push_back(f.arguments);
  }
  // One piece per byte that is not whitespace outside a string.
  std::string joined;
  for (const std::string& p : pieces) joined += p;
  EXPECT_EQ(joined, R"({"city":"Paris","days":[1,2]})");
  EXPECT_EQ(pieces.size(), joined.size());
  d = parser.push("}\n</tool_call>");
  EXPECT_TRUE(d.fragments.empty());
  EXPECT_EQ(d.content, "");
  EXPECT_TRUE(parser.flush().fragments.empty());

  // The same for Llama 3 and Mistral, the second call of each included.
  for (const auto& [format, text] : std::vector<std::pair<ToolCallFormat, std::string>>{
           {ToolCallFormat::kLlama3Json, R"({"name": "a", "parameters": {"x": 1}}; {"name": "b", "parameters": {"y": "z"}})"},
           {ToolCallFormat::kMistral, R"([TOOL_CALLS][{"name": "a", "arguments": {"x": 1}}, {"name": "b", "arguments": {"y": "z"}}])"}}) {
    ToolCallParser p(format);
    int begun = 0;
    std::string second_args;
    for (char c : text) {
      for (const ToolCallFragment& f : p.push(std::string(1, c)).fragments) {
        begun += f.begins;
        if (f.call == 1) {
          EXPECT_EQ(f.begins, second_args.empty() && f.arguments == "{");
          second_args += f.arguments;
        }
      }
    }
    EXPECT_EQ(begun, 2);
    EXPECT_EQ(second_args, R"({"y":"z"})");
  }
}

// A streamed call stays a call when the output ends inside it (the grammar-less model ran out of
// max_tokens): its arguments are what was generated, as OpenAI returns them with "length".
// Before its arguments open, an unfinished block is still text.
TEST(ToolCallParser, OutputEndingInsideACall) {
  expect_every_split(ToolCallFormat::kHermes, "ok<tool_call>{\"name\": \"f\", \"arguments\": {\"q\": \"par",
                     Parsed{"ok", {{"f", R"({"q":"par)"}}});
  expect_every_split(ToolCallFormat::kHermes, "<tool_call>{\"name\": \"f\"",
                     Parsed{"<tool_call>{\"name\": \"f\"", {}});
  expect_every_split(ToolCallFormat::kLlama3Json, "{\"name\": \"f\", \"parameters\": {\"a\": [1,",
                     Parsed{"", {{"f", R"({"a":[1,)"}}});
  expect_every_split(ToolCallFormat::kMistral, "[TOOL_CALLS] [{\"name\": \"f\", \"argu",
                     Parsed{"[TOOL_CALLS] [{\"name\": \"f\", \"argu", {}});
}

// Arguments before the name, or as a JSON string, cannot be streamed: the call comes whole.
TEST(ToolCallParser, CallsThatComeWhole) {
  expect_every_split(ToolCallFormat::kHermes, "<tool_call>{\"arguments\": {\"a\": 1}, \"name\": \"f\"}</tool_call>",
                     Parsed{"", {{"f", R"({"a":1})"}}});
  expect_every_split(ToolCallFormat::kHermes, "<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": 1}\"}</tool_call>",
                     Parsed{"", {{"f", R"({"a": 1})"}}});
  // Mistral: an element that is not a call is given back with the list's opening.
  expect_every_split(ToolCallFormat::kMistral, "[TOOL_CALLS][{\"answer\": 1}]",
                     Parsed{"[TOOL_CALLS][{\"answer\": 1}]", {}});
}

TEST(ToolCallParser, FormatFromTemplateAndNames) {
  EXPECT_EQ(tool_call_format_from_template("{% if tools %}<tool_call>{% endif %}"), ToolCallFormat::kHermes);
  EXPECT_EQ(tool_call_format_from_template("{{ '<|python_tag|>' }}"), ToolCallFormat::kLlama3Json);
  EXPECT_EQ(tool_call_format_from_template("[TOOL_CALLS]"), ToolCallFormat::kMistral);
  EXPECT_EQ(tool_call_format_from_template("<|im_start|>"), ToolCallFormat::kNone);
  EXPECT_EQ(parse_tool_call_format("auto"), std::nullopt);
  EXPECT_EQ(parse_tool_call_format("mistral"), ToolCallFormat::kMistral);
  EXPECT_THROW(parse_tool_call_format("qwen"), std::exception);
  EXPECT_EQ(json_value_end(R"({"a": "}"} tail)"), 10u);
  EXPECT_EQ(json_value_end(R"({"a": [1, 2)"), std::string_view::npos);
}

struct Split {
  std::string reasoning, content;
  bool operator==(const Split&) const = default;
};

Split reason(const std::vector<std::string>& chunks, bool inside) {
  ReasoningParser p(ReasoningTags{}, inside);
  Split s;
  for (const auto& c : chunks) {
    ReasoningDelta d = p.push(c);
    s.reasoning += d.reasoning;
    s.content += d.content;
  }
  ReasoningDelta d = p.flush();
  s.reasoning += d.reasoning;
  s.content += d.content;
  return s;
}

void expect_reasoning_every_split(const std::string& text, bool inside, const Split& expected) {
  EXPECT_EQ(reason({text}, inside), expected);
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    EXPECT_EQ(reason({text.substr(0, cut), text.substr(cut)}, inside), expected) << "split at " << cut;
  }
  std::vector<std::string> bytes;
  for (char c : text) bytes.emplace_back(1, c);
  EXPECT_EQ(reason(bytes, inside), expected) << "byte by byte";
}

TEST(ReasoningParser, Qwen3ThinkBlock) {
  expect_reasoning_every_split("<think>\nThe user wants 2+2. </thin is not a tag.\n</think>\n\nIt is 4.", false,
                               Split{"\nThe user wants 2+2. </thin is not a tag.\n", "It is 4."});
  // No block: everything is content, a later tag included.
  expect_reasoning_every_split("Hello <think>x</think>", false, Split{"", "Hello <think>x</think>"});
  // Thinking switched off by the template (empty block) and unfinished reasoning at the end.
  expect_reasoning_every_split("<think>\n\n</think>\n\nHi", false, Split{"\n\n", "Hi"});
  expect_reasoning_every_split("<think>still going", false, Split{"still going", ""});
}

TEST(ReasoningParser, PromptOpenedTheBlock) {
  // DeepSeek-R1's template ends the prompt with "<think>\n": the output has only the end tag.
  expect_reasoning_every_split("step 1, step 2</think>Answer", true, Split{"step 1, step 2", "Answer"});
  EXPECT_TRUE(prompt_opens_reasoning("<|Assistant|><think>\n", ReasoningTags{}));
  EXPECT_FALSE(prompt_opens_reasoning("<think>\n\n</think>\n\n", ReasoningTags{}));
  EXPECT_TRUE(template_uses_reasoning("{{ '<think>' }} ... </think>", ReasoningTags{}));
  EXPECT_FALSE(template_uses_reasoning("<|im_start|>", ReasoningTags{}));
  // Tags of the operator's choosing.
  ReasoningParser p(ReasoningTags{"[R]", "[/R]"}, false);
  ReasoningDelta d = p.push("[R]why[/R]so");
  ReasoningDelta e = p.flush();
  EXPECT_EQ(d.reasoning + e.reasoning, "why");
  EXPECT_EQ(d.content + e.content, "so");
}

}  // namespace
}  // namespace loom
