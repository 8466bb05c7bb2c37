// Request bodies -> native requests: accepted forms, defaults, and every rejection naming its
// field (as the OpenAI error's param and in the message).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/server/api_error.hpp"
#include "core/server/chat_request.hpp"
#include "core/server/completion_request.hpp"

namespace loom {
namespace {

TEST(ServerRequestParsing, CompletionDefaults) {
  const CompletionRequest r = parse_completion_request(R"({"prompt": "hi"})");
  ASSERT_EQ(r.prompts.size(), 1u);
  ASSERT_TRUE(r.prompts[0].text.has_value());
  EXPECT_EQ(*r.prompts[0].text, "hi");
  EXPECT_FALSE(r.echo);
  EXPECT_EQ(r.params.best_of, 1);
  EXPECT_FALSE(r.params.user.has_value());
  EXPECT_FALSE(r.params.sampling.processing.active());
  EXPECT_FALSE(r.params.sampling.prompt_logprobs.has_value());
  EXPECT_TRUE(r.params.sampling.skip_special_tokens);
  EXPECT_FALSE(r.params.model.has_value());
  EXPECT_FALSE(r.params.max_tokens.has_value());
  EXPECT_FALSE(r.params.stream);
  EXPECT_FALSE(r.params.include_usage);
  EXPECT_FLOAT_EQ(r.params.sampling.temperature, 1.0f);
  EXPECT_FLOAT_EQ(r.params.sampling.top_p, 1.0f);
  EXPECT_EQ(r.params.sampling.top_k, 0);
  EXPECT_FALSE(r.params.sampling.seed.has_value());
  EXPECT_TRUE(r.params.sampling.stop.empty());
}

TEST(ServerRequestParsing, CompletionAllFields) {
  const CompletionRequest r = parse_completion_request(R"({
    "model": "m", "prompt": [1, 2, 3], "max_tokens": 7.0, "temperature": 0, "top_p": 0.5,
    "top_k": 40, "min_p": 0.1, "seed": -1, "stop": ["a", "bc"], "n": 1, "stream": true,
    "stream_options": {"include_usage": true}, "ignore_eos": true, "echo": false,
    "logprobs": null, "user": "x", "frequency_penalty": 0})");
  EXPECT_EQ(*r.params.model, "m");
  EXPECT_FALSE(r.prompts[0].text.has_value());
  EXPECT_EQ(r.prompts[0].tokens, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(*r.params.user, "x");
  EXPECT_EQ(*r.params.max_tokens, 7);
  EXPECT_FLOAT_EQ(r.params.sampling.temperature, 0.0f);
  EXPECT_FLOAT_EQ(r.params.sampling.top_p, 0.5f);
  EXPECT_EQ(r.params.sampling.top_k, 40);
  EXPECT_FLOAT_EQ(r.params.sampling.min_p, 0.1f);
  EXPECT_EQ(*r.params.sampling.seed, ~uint64_t{0});
  EXPECT_EQ(r.params.sampling.stop, (std::vector<std::string>{"a", "bc"}));
  EXPECT_TRUE(r.params.stream);
  EXPECT_TRUE(r.params.include_usage);
  EXPECT_TRUE(r.params.sampling.ignore_eos);
}

TEST(ServerRequestParsing, ChoicesLogprobsAndCacheSalt) {
  const CompletionRequest plain = parse_completion_request(R"({"prompt": "a"})");
  EXPECT_EQ(plain.params.n, 1);
  EXPECT_FALSE(plain.params.sampling.logprobs.has_value());
  EXPECT_EQ(plain.params.cache_salt, 0u);

  const CompletionRequest c =
      parse_completion_request(R"({"prompt": "a", "n": 4, "logprobs": 0, "cache_salt": "tenant-a"})");
  EXPECT_EQ(c.params.n, 4);
  EXPECT_EQ(*c.params.sampling.logprobs, 0);
  EXPECT_EQ(c.params.cache_salt, hash_cache_salt("tenant-a"));
  EXPECT_NE(c.params.cache_salt, 0u);
  EXPECT_NE(hash_cache_salt("tenant-a"), hash_cache_salt("tenant-b"));

  const std::string user = R"("messages": [{"role": "user", "content": "x"}])";
  EXPECT_FALSE(parse_chat_request("{" + user + R"(, "logprobs": false})").params.sampling.logprobs);
  EXPECT_EQ(*parse_chat_request("{" + user + R"(, "logprobs": true})").params.sampling.logprobs, 0);
  EXPECT_EQ(*parse_chat_request("{" + user + R"(, "logprobs": true, "top_logprobs": 5})")
                 .params.sampling.logprobs,
            5);
}

TEST(ServerRequestParsing, PromptForms) {
  EXPECT_EQ(*parse_completion_request(R"({"prompt": ["one"]})").prompts.at(0).text, "one");
  EXPECT_EQ(parse_completion_request(R"({"prompt": [[5, 6]]})").prompts.at(0).tokens,
            (std::vector<int32_t>{5, 6}));
  // A batch keeps its order, strings and token lists alike.
  const CompletionRequest batch = parse_completion_request(R"({"prompt": ["a", [7], "b"]})");
  ASSERT_EQ(batch.prompts.size(), 3u);
  EXPECT_EQ(*batch.prompts[0].text, "a");
  EXPECT_EQ(batch.prompts[1].tokens, (std::vector<int32_t>{7}));
  EXPECT_EQ(*batch.prompts[2].text, "b");
  EXPECT_EQ(
      parse_completion_request(R"({"prompt": "", "stop": "x", "top_k": -1})").params.sampling.stop,
      (std::vector<std::string>{"x"}));
  EXPECT_EQ(parse_completion_request(R"({"prompt": "a", "top_k": -1})").params.sampling.top_k, 0);
  // null means unset, as in the OpenAI schema
  EXPECT_FALSE(
      parse_completion_request(R"({"prompt": "a", "max_tokens": null})").params.max_tokens);
}

struct BadCase {
  const char* body;
  const char* param;    // expected error param ("" = none)
  const char* snippet;  // expected in the message
};

void expect_rejected(const BadCase& c, bool chat) {
  SCOPED_TRACE(c.body);
  try {
    if (chat) {
      parse_chat_request(c.body);
    } else {
      parse_completion_request(c.body);
    }
    ADD_FAILURE() << "accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400u);
    EXPECT_EQ(e.type, "invalid_request_error");
    EXPECT_EQ(e.param.value_or(""), c.param);
    EXPECT_NE(std::string(e.what()).find(c.snippet), std::string::npos) << e.what();
  }
}

TEST(ServerRequestParsing, PenaltiesBiasStopIdsBestOfEcho) {
  const CompletionRequest r = parse_completion_request(R"({"prompt": "a",
    "presence_penalty": 0.5, "frequency_penalty": -1.5, "repetition_penalty": 1.25,
    "logit_bias": {"7": -100, "12": 2.5}, "min_tokens": 3, "stop_token_ids": [2, 9],
    "n": 2, "best_of": 5, "echo": true, "logprobs": 2, "user": "u-1", "skip_special_tokens": false})");
  EXPECT_FALSE(r.params.sampling.skip_special_tokens);
  const LogitsProcessing& p = r.params.sampling.processing;
  EXPECT_EQ(p.presence_penalty, 0.5f);
  EXPECT_EQ(p.frequency_penalty, -1.5f);
  EXPECT_EQ(p.repetition_penalty, 1.25f);
  // nlohmann's object iterates keys in name order: "12" before "7".
  EXPECT_EQ(p.logit_bias, (std::vector<std::pair<int32_t, float>>{{12, 2.5f}, {7, -100.0f}}));
  EXPECT_EQ(p.min_tokens, 3);
  EXPECT_EQ(p.stop_token_ids, (std::vector<int32_t>{2, 9}));
  EXPECT_EQ(r.params.n, 2);
  EXPECT_EQ(r.params.best_of, 5);
  EXPECT_TRUE(r.echo);
  // echo + logprobs scores the prompt with as many alternatives, inside the logprobs object.
  EXPECT_EQ(*r.params.sampling.prompt_logprobs, 2);
  EXPECT_FALSE(r.prompt_logprobs_field);
  EXPECT_EQ(*r.params.user, "u-1");

  const CompletionRequest v = parse_completion_request(R"({"prompt": "a", "prompt_logprobs": 1})");
  EXPECT_EQ(*v.params.sampling.prompt_logprobs, 1);
  EXPECT_TRUE(v.prompt_logprobs_field);
  // Chat: safety_identifier is OpenAI's newer name for user.
  EXPECT_EQ(*parse_chat_request(R"({"messages": [{"role": "user", "content": "x"}], "safety_identifier": "s"})")
                 .params.user,
            "s");
}

TEST(ServerRequestParsing, SamplingFieldRejections) {
  const BadCase cases[] = {
      {R"({"prompt": "a", "presence_penalty": 2.5})", "presence_penalty", "must be in [-2"},
      {R"({"prompt": "a", "frequency_penalty": -3})", "frequency_penalty", "must be in [-2"},
      {R"({"prompt": "a", "repetition_penalty": 0})", "repetition_penalty", "must be in (0"},
      {R"({"prompt": "a", "logit_bias": [1]})", "logit_bias", "must be an object"},
      {R"({"prompt": "a", "logit_bias": {"x": 1}})", "logit_bias", "key 'x' is not a token id"},
      {R"({"prompt": "a", "logit_bias": {"-3": 1}})", "logit_bias", "key '-3' is not a token id"},
      {R"({"prompt": "a", "logit_bias": {"3": 101}})", "logit_bias", "must be in [-100, 100]"},
      {R"({"prompt": "a", "logit_bias": {"3": "1"}})", "logit_bias", "'logit_bias.3' must be a number"},
      {R"({"prompt": "a", "min_tokens": -1})", "min_tokens", "must be in [0"},
      {R"({"prompt": "a", "stop_token_ids": 3})", "stop_token_ids", "must be an array"},
      {R"({"prompt": "a", "stop_token_ids": [1, -1]})", "stop_token_ids[1]", "must be in [0"},
      {R"({"prompt": "a", "n": 3, "best_of": 2})", "best_of", "must be at least 'n' (3)"},
      {R"({"prompt": "a", "best_of": 2, "stream": true})", "best_of", "cannot be streamed"},
      {R"({"prompt": "a", "prompt_logprobs": 21})", "prompt_logprobs", "must be in [0, 20]"},
      {R"({"prompt": "a", "echo": 1})", "echo", "'echo' must be a boolean"},
      {R"({"prompt": "a", "user": 1})", "user", "'user' must be a string"},
      {R"({"prompt": "a", "suffix": "tail"})", "suffix", "'suffix' is not supported"},
      {R"({"prompt": "a", "frobnicate": 1})", "frobnicate", "unknown field 'frobnicate'"},
  };
  for (const BadCase& c : cases) expect_rejected(c, /*chat=*/false);
}

TEST(ServerRequestParsing, CompletionRejections) {
  const BadCase cases[] = {
      {"{", "", "not valid JSON"},
      {"[1]", "", "must be a JSON object"},
      {"{\"prompt\": \"\xC3\x28\"}", "", "not valid UTF-8 (byte offset 12)"},
      {R"({"max_tokens": 3})", "prompt", "'prompt' is required"},
      {R"({"prompt": 5})", "prompt", "'prompt' must be a string or an array"},
      {R"({"prompt": []})", "prompt", "empty array"},
      {R"({"prompt": ["a", 5]})", "prompt[1]", "'prompt[1]' must be a string or an array of token ids"},
      {R"({"prompt": [[1], []]})", "prompt[1]", "'prompt[1]' must not be an empty array"},
      {R"({"prompt": [1, "x"]})", "prompt[1]", "'prompt[1]' must be an integer, got a string"},
      {R"({"prompt": [1, -2]})", "prompt[1]", "'prompt[1]' must be in [0, 2147483647], got -2"},
      {R"({"prompt": "a", "model": 3})", "model", "'model' must be a string"},
      {R"({"prompt": "a", "max_tokens": 0})", "max_tokens", "'max_tokens' must be in [1, "},
      {R"({"prompt": "a", "max_tokens": "9"})", "max_tokens", "got a string"},
      {R"({"prompt": "a", "max_tokens": 1.5})", "max_tokens", "must be an integer, got a number"},
      {R"({"prompt": "a", "temperature": 2.5})", "temperature", "'temperature' must be in [0"},
      {R"({"prompt": "a", "temperature": -0.1})", "temperature", "got -0.1"},
      {R"({"prompt": "a", "temperature": true})", "temperature", "got a boolean"},
      {R"({"prompt": "a", "top_p": 0})", "top_p", "'top_p' must be in (0"},
      {R"({"prompt": "a", "top_p": 1.01})", "top_p", "top_p"},
      {R"({"prompt": "a", "top_k": -2})", "top_k", "'top_k' must be in [-1, "},
      {R"({"prompt": "a", "min_p": 1.5})", "min_p", "'min_p' must be in [0"},
      {R"({"prompt": "a", "seed": "1"})", "seed", "'seed' must be an integer"},
      {R"({"prompt": "a", "seed": 18446744073709551615})", "seed", "out of range"},
      {R"({"prompt": "a", "stop": 1})", "stop", "a string or an array of strings"},
      {R"({"prompt": "a", "stop": ["x", 2]})", "stop[1]", "'stop[1]' must be a string"},
      {R"({"prompt": "a", "stop": [""]})", "stop", "must not be empty"},
      {R"({"prompt": "a", "stop": ["1","2","3","4","5","6","7","8","9","10","11","12","13","14",
           "15","16","17"]})",
       "stop", "has 17 entries; at most 16"},
      {R"({"prompt": "a", "n": 0})", "n", "'n' must be in [1, 128], got 0"},
      {R"({"prompt": "a", "n": 129})", "n", "'n' must be in [1, 128], got 129"},
      {R"({"prompt": "a", "logprobs": -1})", "logprobs", "'logprobs' must be in [0, 20], got -1"},
      {R"({"prompt": "a", "logprobs": 21})", "logprobs", "'logprobs' must be in [0, 20], got 21"},
      {R"({"prompt": "a", "logprobs": true})", "logprobs", "got a boolean"},
      {R"({"prompt": "a", "cache_salt": ""})", "cache_salt", "must not be an empty string"},
      {R"({"prompt": "a", "cache_salt": 5})", "cache_salt", "'cache_salt' must be a string"},
      {R"({"prompt": "a", "stream": "yes"})", "stream", "'stream' must be a boolean"},
      {R"({"prompt": "a", "stream_options": 1})", "stream_options", "must be an object"},
      {R"({"prompt": "a", "stream_options": {"include_usage": 1}})", "stream_options.include_usage",
       "'stream_options.include_usage' must be a boolean"},
      {R"({"prompt": "a", "ignore_eos": 0})", "ignore_eos", "must be a boolean"},
  };
  for (const BadCase& c : cases) expect_rejected(c, /*chat=*/false);
}

TEST(ServerRequestParsing, ChatMessages) {
  const ChatRequest r = parse_chat_request(R"({"messages": [
      {"role": "system", "content": "Be brief."},
      {"role": "user", "content": [{"type": "text", "text": "Hi "},
                                   {"type": "text", "text": "there"}]},
      {"role": "assistant", "content": null},
      {"role": "developer", "content": "dev", "name": "ignored"}],
    "max_tokens": 5, "max_completion_tokens": 9})");
  ASSERT_EQ(r.messages.size(), 4u);
  EXPECT_EQ(r.messages[0].role, "system");
  EXPECT_EQ(r.messages[1].content, "Hi \nthere");  // text parts joined by "\n", as vLLM joins them
  EXPECT_EQ(r.messages[2].role, "assistant");
  EXPECT_EQ(r.messages[2].content, "");
  EXPECT_EQ(r.messages[3].role, "system");  // developer is OpenAI's new name for system
  EXPECT_EQ(*r.params.max_tokens, 9);       // max_completion_tokens wins
}

TEST(ServerRequestParsing, ChatRejections) {
  const BadCase cases[] = {
      {R"({})", "messages", "'messages' is required"},
      {R"({"messages": {}})", "messages", "'messages' must be an array"},
      {R"({"messages": []})", "messages", "must not be empty"},
      {R"({"messages": ["hi"]})", "messages[0]", "'messages[0]' must be an object"},
      {R"({"messages": [{"content": "x"}]})", "messages[0].role", "'messages[0].role' is required"},
      {R"({"messages": [{"role": "robot", "content": "x"}]})", "messages[0].role",
       "expected one of system, user, assistant, tool"},
      // Tool results are accepted in history, but must say which call they answer.
      {R"({"messages": [{"role": "tool", "content": "x"}]})", "messages[0].tool_call_id",
       "'messages[0].tool_call_id' is required in a tool message"},
      {R"({"messages": [{"role": "user"}]})", "messages[0].content", "is required"},
      {R"({"messages": [{"role": "user", "content": 7}]})", "messages[0].content",
       "must be a string or an array of text parts"},
      {R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]})",
       "messages[0].content[0].type", "only text content parts are supported"},
      {R"({"messages": [{"role": "user", "content": [{"type": "text"}]}]})",
       "messages[0].content[0].text", "is required"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_completion_tokens": 0})",
       "max_completion_tokens", "must be in [1"},
  };
  for (const BadCase& c : cases) expect_rejected(c, /*chat=*/true);
}

TEST(ServerRequestParsing, ChatLogprobsRejections) {
  const std::string user = R"({"messages": [{"role": "user", "content": "x"}], )";
  const std::string bodies[] = {user + R"("logprobs": 3})",
                                user + R"("logprobs": true, "top_logprobs": 21})",
                                user + R"("logprobs": false, "top_logprobs": 1})"};
  const std::vector<BadCase> cases = {
      {bodies[0].c_str(), "logprobs", "'logprobs' must be a boolean"},
      {bodies[1].c_str(), "top_logprobs", "'top_logprobs' must be in [0, 20], got 21"},
      {bodies[2].c_str(), "top_logprobs", "needs 'logprobs' set to true"},
  };
  for (const BadCase& c : cases) expect_rejected(c, /*chat=*/true);
}

}  // namespace
}  // namespace loom
