// The structured-output request fields: which grammar each one asks for, on both routes, and the
// 400s (field named) for malformed ones.
#include <gtest/gtest.h>

#include "core/server/api_error.hpp"
#include "core/server/chat_request.hpp"
#include "core/server/completion_request.hpp"
#include "tests/unit/grammar_support.hpp"

namespace loom::test {
namespace {

std::shared_ptr<const Grammar> completion_grammar(const std::string& fields) {
  return parse_completion_request(R"({"prompt": "x")" + (fields.empty() ? "" : ", " + fields) + "}").params.sampling.grammar;
}

std::shared_ptr<const Grammar> chat_grammar(const std::string& fields) {
  return parse_chat_request(R"({"messages": [{"role": "user", "content": "x"}], )" + fields + "}").params.sampling.grammar;
}

// The ApiError's param and message for a completion request with `fields`.
std::pair<std::string, std::string> refusal(const std::string& fields) {
  try {
    parse_completion_request(R"({"prompt": "x", )" + fields + "}");
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400u);
    return {e.param.value_or(""), e.what()};
  }
  return {"", "accepted"};
}

TEST(ServerStructuredOutput, NoneOrTextMeansNoGrammar) {
  EXPECT_EQ(completion_grammar(""), nullptr);
  EXPECT_EQ(completion_grammar(R"("response_format": {"type": "text"})"), nullptr);
  EXPECT_EQ(completion_grammar(R"("response_format": null, "structured_outputs": {"regex": null})"), nullptr);
}

TEST(ServerStructuredOutput, EveryFieldCompiles) {
  const auto obj = chat_grammar(R"("response_format": {"type": "json_object"})");
  ASSERT_NE(obj, nullptr);
  EXPECT_TRUE(full_match(obj, R"({"a": 1})"));
  EXPECT_FALSE(full_match(obj, "[1]"));
  // Properties are written in the order the request gave them (not nlohmann's sorted order).
  const auto schema = chat_grammar(R"("response_format": {"type": "json_schema", "json_schema": {"name": "n", "strict": true,
      "schema": {"type": "object", "properties": {"z": {"type": "integer"}, "a": {"type": "boolean"}},
                 "required": ["z", "a"], "additionalProperties": false}}})");
  ASSERT_NE(schema, nullptr);
  EXPECT_TRUE(full_match(schema, R"({"z": 1, "a": true})"));
  EXPECT_FALSE(full_match(schema, R"({"a": true, "z": 1})"));
  EXPECT_TRUE(full_match(completion_grammar(R"("structured_outputs": {"json": {"type": "integer", "maximum": 5}})"), "5"));
  EXPECT_TRUE(full_match(completion_grammar(R"("structured_outputs": {"json": "{\"type\": \"boolean\"}"})"), "true"));
  EXPECT_TRUE(full_match(completion_grammar(R"("structured_outputs": {"regex": "a+b"})"), "aab"));
  EXPECT_TRUE(full_match(completion_grammar(R"("structured_outputs": {"choice": ["x", "y"]})"), "y"));
  EXPECT_TRUE(full_match(completion_grammar(R"("structured_outputs": {"grammar": "root ::= \"g\""})"), "g"));
  EXPECT_TRUE(full_match(completion_grammar(R"("structured_outputs": {"json_object": true})"), "{}"));
  EXPECT_TRUE(full_match(completion_grammar(R"("guided_json": {"type": "null"})"), "null"));
  EXPECT_TRUE(full_match(completion_grammar(R"("guided_regex": "[0-9]{2}")"), "42"));
  EXPECT_TRUE(full_match(completion_grammar(R"("guided_choice": ["no"])"), "no"));
  EXPECT_TRUE(full_match(completion_grammar(R"("guided_grammar": "root ::= [q]")"), "q"));
  EXPECT_TRUE(full_match(completion_grammar(R"("grammar": "root ::= \"llama\"")"), "llama"));
  EXPECT_TRUE(full_match(completion_grammar(R"("json_schema": {"enum": [1, "two"]})"), "\"two\""));
}

TEST(ServerStructuredOutput, MalformedIs400NamingTheField) {
  using P = std::pair<std::string, std::string>;
  EXPECT_EQ(refusal(R"("response_format": "json")"), P("response_format", "'response_format' must be an object, got a string"));
  EXPECT_EQ(refusal(R"("response_format": {})"), P("response_format.type", "'response_format.type' is required"));
  EXPECT_EQ(refusal(R"("response_format": {"type": "json_schema"})"),
            P("response_format.json_schema", "'response_format.json_schema' must be an object with a 'schema'"));
  EXPECT_EQ(refusal(R"("response_format": {"type": "json_schema", "json_schema": {"schema": {"minimum": "x", "type": "integer"}}})"),
            P("response_format.json_schema.schema", "'response_format.json_schema.schema': minimum: must be a number"));
  EXPECT_EQ(refusal(R"j("structured_outputs": {"regex": "a(?=b)"})j"),
            P("structured_outputs.regex", "'structured_outputs.regex': regex offset 1: lookahead '(?=' is not supported"));
  EXPECT_EQ(refusal(R"("structured_outputs": {"structural_tag": "x"})"),
            P("structured_outputs.structural_tag",
              "'structured_outputs.structural_tag' is not supported; expected one of json, regex, choice, grammar, json_object"));
  EXPECT_EQ(refusal(R"("structured_outputs": {"json": "{oops"})").first, "structured_outputs.json");
  EXPECT_EQ(refusal(R"("guided_choice": [1])"), P("guided_choice", "'guided_choice' must be an array of strings"));
  EXPECT_EQ(refusal(R"("grammar": 5)"), P("grammar", "'grammar' must be a string, got an integer"));
  EXPECT_EQ(refusal(R"("grammar": "root ::= x")"), P("grammar", "'grammar': line 1, column 10: rule 'x' is used but never defined"));
  EXPECT_EQ(refusal(R"("json_schema": [1])"), P("json_schema", "'json_schema' must be a JSON Schema object, got an array"));
  EXPECT_EQ(refusal(R"("structured_outputs": {"regex": "a", "choice": ["a"]})"),
            P("structured_outputs.regex", "'structured_outputs.choice' and 'structured_outputs.regex' both constrain the output; send at most one"));
  EXPECT_EQ(refusal(R"("grammar": "root ::= \"a\"", "json_schema": {})"),
            P("json_schema", "'grammar' and 'json_schema' both constrain the output; send at most one"));
}

}  // namespace
}  // namespace loom::test
