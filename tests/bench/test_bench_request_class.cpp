// Request classes of `loom-bench serve --class`: the spec's parts and refusals, the mix drawn by
// share with each class's lengths, priority and slo in the request body (and not with
// --no-class-fields), and per-class attainment and goodput from scripted records.
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "core/common/error.hpp"
#include "tools/bench/request_body.hpp"
#include "tools/bench/request_class.hpp"
#include "tools/bench/serve_args.hpp"

namespace loom::bench {
namespace {

using Json = nlohmann::json;

std::string error_of(const std::string& spec) {
  try {
    parse_request_class(spec);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(RequestClass, ParsesEveryPartAndRefusesBadOnes) {
  const RequestClass c = parse_request_class("chat:3:64:32:0:500:40");
  EXPECT_EQ(c.name, "chat");
  EXPECT_EQ(c.share, 3.0);
  EXPECT_EQ(c.input_len, 64);
  EXPECT_EQ(c.output_len, 32);
  EXPECT_EQ(c.priority, 0);
  EXPECT_EQ(c.ttft_ms, 500.0);
  EXPECT_EQ(c.tpot_ms, 40.0);
  const RequestClass batch = parse_request_class("batch:1:1024:128:5:-:-");
  EXPECT_EQ(batch.priority, 5);
  EXPECT_FALSE(batch.ttft_ms);
  EXPECT_FALSE(batch.tpot_ms);
  EXPECT_EQ(error_of("a:1:2:3"), "--class a:1:2:3: expected name:share:input:output:priority:ttft_ms:tpot_ms (7 parts), got 4");
  EXPECT_EQ(error_of(":1:2:3:0:-:-"), "--class :1:2:3:0:-:-: the name is empty");
  EXPECT_EQ(error_of("a:0:2:3:0:-:-"), "--class a:0:2:3:0:-:-: share must be > 0, got '0'");
  EXPECT_EQ(error_of("a:1:2.5:3:0:-:-"), "--class a:1:2.5:3:0:-:-: input must be an integer >= 1, got '2.5'");
  EXPECT_EQ(error_of("a:1:2:3:x:-:-"), "--class a:1:2:3:x:-:-: priority must be a number, got 'x'");
  EXPECT_EQ(error_of("a:1:2:3:0:0:-"), "--class a:1:2:3:0:0:-: ttft_ms must be > 0 ms or '-', got '0'");
  EXPECT_THROW(parse_serve_args({"--class", "a:1:2:3:0:-:-", "--dataset-name", "sharegpt"}), Error);
  const ServeArgs a = parse_serve_args({"--class", "a:1:2:3:0:-:-", "--class", "b:1:4:5:1:100:10", "--no-class-fields"});
  ASSERT_EQ(a.classes.size(), 2u);
  EXPECT_EQ(a.classes[1].name, "b");
  EXPECT_FALSE(a.class_fields);
}

TEST(RequestClass, MixFollowsSharesAndBodiesCarryTheClass) {
  const auto text = word_prompt_text();
  const std::vector<RequestClass> classes = {parse_request_class("chat:3:8:4:0:500:40"),
                                             parse_request_class("batch:1:40:16:2:-:-")};
  const auto convs = class_workload(4000, classes, 0.0, *text, 9);
  size_t chat = 0;
  for (const Conversation& c : convs) {
    ASSERT_EQ(c.turns.size(), 1u);
    const RequestClass& k = classes[static_cast<size_t>(c.request_class)];
    EXPECT_EQ(text->count_tokens(c.turns[0].text), k.input_len);
    EXPECT_EQ(c.turns[0].max_tokens, k.output_len);
    chat += c.request_class == 0;
  }
  // 3:1 within four standard deviations of the binomial (sd ~ 27 of 4000).
  EXPECT_NEAR(static_cast<double>(chat), 3000.0, 110.0);
  // The same seed draws the same mix.
  EXPECT_EQ(class_workload(50, classes, 0.0, *text, 9)[17].request_class, convs[17].request_class);

  BodyOptions options{"m", false, true, true};
  const Conversation& first_chat = *std::find_if(convs.begin(), convs.end(), [](const Conversation& c) { return c.request_class == 0; });
  const Conversation& first_batch = *std::find_if(convs.begin(), convs.end(), [](const Conversation& c) { return c.request_class == 1; });
  Json body = Json::parse(request_body(options, first_chat, 0, {}));
  EXPECT_EQ(body["priority"], 0);
  EXPECT_EQ(body["slo"], (Json{{"ttft_ms", 500.0}, {"tpot_ms", 40.0}}));
  body = Json::parse(request_body(options, first_batch, 0, {}));
  EXPECT_EQ(body["priority"], 2);
  EXPECT_FALSE(body.contains("slo"));
  options.class_fields = false;
  body = Json::parse(request_body(options, first_chat, 0, {}));
  EXPECT_FALSE(body.contains("priority"));
  EXPECT_FALSE(body.contains("slo"));
}

RequestRecord record(int32_t cls, double start, std::vector<double> tokens, bool ok = true) {
  RequestRecord r;
  r.request_class = cls;
  r.start = start;
  r.token_times = std::move(tokens);
  r.end = r.token_times.empty() ? start : r.token_times.back();
  r.success = ok;
  r.usage_completion_tokens = static_cast<int64_t>(r.token_times.size());
  return r;
}

TEST(RequestClass, AttainmentAndGoodputPerClass) {
  const std::vector<RequestClass> classes = {parse_request_class("chat:1:8:4:0:100:20"),
                                             parse_request_class("batch:1:40:16:2:-:-")};
  const std::vector<RequestRecord> records = {
      record(0, 0.0, {0.05, 0.06, 0.07}),          // TTFT 50, TPOT 10: meets both
      record(0, 0.0, {0.2, 0.21, 0.22}),           // TTFT 200: misses
      record(0, 0.0, {0.05, 0.10, 0.15}),          // TPOT 50: misses
      record(0, 0.0, {}, false),                   // failed: misses
      record(1, 0.0, {1.0, 2.0}),                  // no targets: meets
      record(1, 0.0, {}, false)};
  const auto s = summarize_classes(records, 2.0, classes);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].sent, 4u);
  EXPECT_EQ(s[0].summary.completed, 3u);
  EXPECT_DOUBLE_EQ(s[0].attainment, 0.25);
  EXPECT_DOUBLE_EQ(*s[0].summary.request_goodput, 0.5);  // one good request in 2 s
  EXPECT_EQ(s[1].sent, 2u);
  EXPECT_DOUBLE_EQ(s[1].attainment, 0.5);
  EXPECT_FALSE(s[1].summary.request_goodput);
}

}  // namespace
}  // namespace loom::bench
