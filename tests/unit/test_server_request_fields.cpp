// Nothing sent is silently ignored: every request field of OpenAI's spec for /v1/completions and
// /v1/chat/completions is in the one table, and each is either honoured (the test named beside
// it shows its effect) or refused with a 400 naming it. Fields other parsers read are known and
// name their parser; a field in no table is a 400.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "core/server/api_error.hpp"
#include "core/server/chat_request.hpp"
#include "core/server/completion_request.hpp"
#include "core/server/request_fields.hpp"

namespace loom {
namespace {

// Honoured spec fields and where their effect is tested.
const std::map<std::string, std::string> kHonouredBy = {
    {"model", "test_server_openai ModelMismatchIs400"},
    {"response_format", "test_e2e_structured_output JsonSchemaOutputsValidate*"},
    {"prompt", "test_e2e_oai_fields ListOfPromptsInOrder"},
    {"messages", "test_server_openai Chat*"},
    {"max_tokens", "test_e2e_server"},
    {"max_completion_tokens", "test_server_request_parsing ChatMessages"},
    {"temperature", "test_e2e_sampling"},
    {"top_p", "test_e2e_sampling"},
    {"n", "test_e2e_batching"},
    {"best_of", "test_e2e_oai_fields BestOfReturnsHighestCumulativeLogprob"},
    {"stream", "test_server_streaming"},
    {"stream_options", "test_server_streaming"},
    {"logprobs", "test_e2e_sampling"},
    {"top_logprobs", "test_e2e_sampling"},
    {"echo", "test_e2e_oai_fields EchoLogprobsEqualTeacherForcedPass"},
    {"stop", "test_e2e_server"},
    {"presence_penalty", "test_engine_logits_processors + test_e2e_oai_fields PenaltiesAndBiasChangeOutput"},
    {"frequency_penalty", "test_engine_logits_processors + test_e2e_oai_fields PenaltiesAndBiasChangeOutput"},
    {"logit_bias", "test_engine_logits_processors + test_e2e_oai_fields PenaltiesAndBiasChangeOutput"},
    {"user", "test_server_request_parsing PenaltiesBiasStopIdsBestOfEcho (request log line)"},
    {"safety_identifier", "test_server_request_parsing PenaltiesBiasStopIdsBestOfEcho (request log line)"},
    {"seed", "test_e2e_sampling"},
    {"tools", "test_server_tool_calls"},
    {"tool_choice", "test_server_tool_calls"},
    {"parallel_tool_calls", "test_server_tool_calls"},
};

// Refused spec fields and a value that asks for what is not supported.
const std::map<std::string, std::string> kRefusedWith = {
    {"suffix", R"("tail")"},
    {"functions", R"([{"name": "f", "parameters": {}}])"},
    {"function_call", R"("auto")"},
    {"store", "true"},
    {"metadata", R"({"k": "v"})"},
    {"modalities", R"(["text", "audio"])"},
    {"audio", R"({"voice": "alloy", "format": "wav"})"},
    {"prediction", R"({"type": "content", "content": "x"})"},
    {"reasoning_effort", R"("low")"},
    {"service_tier", R"("flex")"},
    {"web_search_options", "{}"},
    {"verbosity", R"("low")"},
    {"prompt_cache_key", R"("k")"},
};

// OpenAI's request fields, from its API reference.
const char* const kCompletionSpec[] = {"model",  "prompt",           "best_of", "echo",       "frequency_penalty",
                                       "logit_bias", "logprobs",     "max_tokens", "n",       "presence_penalty",
                                       "seed",   "stop",             "stream",  "stream_options", "suffix",
                                       "temperature", "top_p",       "user"};
const char* const kChatSpec[] = {
    "messages",         "model",          "audio",           "frequency_penalty", "function_call",
    "functions",        "logit_bias",     "logprobs",        "max_completion_tokens", "max_tokens",
    "metadata",         "modalities",     "n",               "parallel_tool_calls", "prediction",
    "presence_penalty", "prompt_cache_key", "reasoning_effort", "response_format", "safety_identifier",
    "seed",             "service_tier",   "stop",            "store",           "stream",
    "stream_options",   "temperature",    "tool_choice",     "tools",           "top_logprobs",
    "top_p",            "user",           "verbosity",       "web_search_options"};

// Parses body on the route; the 400's param, or "" when accepted.
std::string refusal(RequestRoute route, const std::string& body) {
  try {
    if (route == RequestRoute::kChat) {
      parse_chat_request(body);
    } else {
      parse_completion_request(body);
    }
    return "";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400u);
    return e.param.value_or("?");
  }
}

void walk(RequestRoute route, std::span<const char* const> spec) {
  const std::string base = route == RequestRoute::kChat ? R"({"messages": [{"role": "user", "content": "x"}])"
                                                        : R"({"prompt": "x")";
  for (const char* name : spec) {
    SCOPED_TRACE(name);
    const RequestField* f = find_request_field(name, route);
    ASSERT_NE(f, nullptr) << "a spec field missing from the table";
    switch (f->use) {
      case FieldUse::kHonoured:
        EXPECT_TRUE(kHonouredBy.count(name)) << "honoured but no test shows its effect";
        break;
      case FieldUse::kRefused: {
        ASSERT_TRUE(kRefusedWith.count(name));
        EXPECT_EQ(refusal(route, base + ", \"" + name + "\": " + kRefusedWith.at(name) + "}"), name);
        // null is "unset" and accepted, as everywhere in the schema.
        EXPECT_EQ(refusal(route, base + ", \"" + name + "\": null}"), "");
        break;
      }
    }
  }
}

TEST(RequestFields, CompletionSpecFieldsAreHonouredOrRefused) { walk(RequestRoute::kCompletions, kCompletionSpec); }

TEST(RequestFields, ChatSpecFieldsAreHonouredOrRefused) { walk(RequestRoute::kChat, kChatSpec); }

TEST(RequestFields, HarmlessDefaultsOfRefusedFieldsAreAccepted) {
  const std::string chat = R"({"messages": [{"role": "user", "content": "x"}], )";
  EXPECT_EQ(refusal(RequestRoute::kChat, chat + R"("store": false})"), "");
  EXPECT_EQ(refusal(RequestRoute::kChat, chat + R"("modalities": ["text"]})"), "");
  EXPECT_EQ(refusal(RequestRoute::kChat, chat + R"("service_tier": "auto"})"), "");
  EXPECT_EQ(refusal(RequestRoute::kCompletions, R"({"prompt": "x", "suffix": ""})"), "");
}

TEST(RequestFields, UnknownFieldsAndWrongRoutesAre400NamingThem) {
  EXPECT_EQ(refusal(RequestRoute::kCompletions, R"({"prompt": "x", "temprature": 1})"), "temprature");
  // Chat-only fields on /v1/completions, and the reverse.
  EXPECT_EQ(refusal(RequestRoute::kCompletions, R"({"prompt": "x", "tools": []})"), "tools");
  EXPECT_EQ(refusal(RequestRoute::kChat, R"({"messages": [{"role": "user", "content": "x"}], "echo": true})"),
            "echo");
  EXPECT_EQ(refusal(RequestRoute::kChat, R"({"messages": [{"role": "user", "content": "x"}], "prompt": "x"})"),
            "prompt");
}

// Fields whose parsers live beside the table (constrained decoding, SLO classes) are honoured on
// both routes; each is shown acting in the test named here.
TEST(RequestFields, ConstraintAndSloFieldsAreHonouredOnBothRoutes) {
  const std::map<std::string, std::string> shown_by = {
      {"response_format", "test_e2e_structured_output"},   {"structured_outputs", "test_e2e_structured_output"},
      {"guided_json", "test_server_structured_output"},    {"guided_regex", "test_server_structured_output"},
      {"guided_choice", "test_server_structured_output"},  {"guided_grammar", "test_server_structured_output"},
      {"grammar", "test_e2e_structured_output"},           {"json_schema", "test_server_structured_output"},
      {"priority", "test_e2e_admission"},                  {"slo", "test_e2e_admission"}};
  for (const auto& [name, test] : shown_by) {
    SCOPED_TRACE(name + " (shown by " + test + ")");
    for (RequestRoute route : {RequestRoute::kCompletions, RequestRoute::kChat}) {
      const RequestField* f = find_request_field(name, route);
      ASSERT_NE(f, nullptr);
      EXPECT_EQ(f->use, FieldUse::kHonoured);
    }
  }
}

// A small fuzz pass over every field of the table: each takes values of every JSON type and a
// few edge values; parsing either succeeds or throws the 400 ApiError, never anything else.
TEST(RequestFields, EveryFieldWithEveryJsonTypeIsParsedOrRefusedCleanly) {
  const char* const values[] = {"null", "true", "-1", "0", "1e300", "-0.5", "\"\"", "\"x\"", "[]", "{}",
                                "[1, \"a\"]", "{\"1\": 200}", "[[]]", "[{\"type\": \"function\"}]",
                                "{\"type\": \"function\", \"function\": {\"name\": 1}}", "18446744073709551616"};
  for (const RequestField& f : request_fields()) {
    for (RequestRoute route : {RequestRoute::kCompletions, RequestRoute::kChat}) {
      if (!find_request_field(f.name, route)) continue;
      const std::string base = route == RequestRoute::kChat ? R"({"messages": [{"role": "user", "content": "x"}])"
                                                            : R"({"prompt": "x")";
      for (const char* v : values) {
        const std::string body = base + ", \"" + std::string(f.name) + "\": " + v + "}";
        SCOPED_TRACE(body);
        try {
          refusal(route, body);
        } catch (const std::exception& e) {
          ADD_FAILURE() << "threw something other than an ApiError: " << e.what();
        }
      }
    }
  }
}

// /v1/embeddings knows only OpenAI's embedding fields; the semantic-cache opt-in is known on both
// generation routes. Each is shown acting in the test named here.
TEST(RequestFields, EmbeddingAndSemanticCacheFieldsAreHonouredWhereShown) {
  const std::map<std::string, std::string> embeddings = {
      {"input", "test_e2e_embeddings AStringAListAndTokenIdsGiveTheSameVectorsWithUsage"},
      {"encoding_format", "test_e2e_embeddings AStringAListAndTokenIdsGiveTheSameVectorsWithUsage"},
      {"dimensions", "test_e2e_embeddings RefusalsNameTheField"},
      {"model", "test_e2e_embeddings RefusalsNameTheField"},
      {"user", "embedding_request (request log line)"}};
  for (const auto& [name, test] : embeddings) {
    SCOPED_TRACE(name + " (shown by " + test + ")");
    const RequestField* f = find_request_field(name, RequestRoute::kEmbeddings);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->use, FieldUse::kHonoured);
  }
  size_t known = 0;
  for (const RequestField& f : request_fields()) known += f.embeddings ? 1 : 0;
  EXPECT_EQ(known, embeddings.size()) << "an embeddings field without a test named above";
  EXPECT_EQ(find_request_field("temperature", RequestRoute::kEmbeddings), nullptr);
  EXPECT_EQ(find_request_field("input", RequestRoute::kChat), nullptr);
  // "semantic_cache": test_e2e_semantic_cache OffUnlessAskedAndOnlyForDeterministicRequests.
  for (RequestRoute route : {RequestRoute::kCompletions, RequestRoute::kChat}) {
    const RequestField* f = find_request_field("semantic_cache", route);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->use, FieldUse::kHonoured);
  }
}

TEST(RequestFields, EveryTableNameIsUnique) {
  std::map<std::string_view, int> seen;
  for (const RequestField& f : request_fields()) EXPECT_EQ(++seen[f.name], 1) << f.name;
}

}  // namespace
}  // namespace loom
