// Workloads and request bodies: prompt lengths in the GGUF tokenizer's tokens, shared prefixes
// per group, multi-turn history in completion prompts and chat messages, the ShareGPT filter.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/common/error.hpp"
#include "tools/bench/request_body.hpp"
#include "tools/bench/serve_args.hpp"
#include "tools/bench/workload.hpp"

namespace loom::bench {
namespace {

using Json = nlohmann::json;

const PromptText& stories_text() {
  static const auto text = tokenizer_prompt_text(std::string(LOOM_TEST_DATA) + "/stories260K.gguf");
  return *text;
}

TEST(Workload, RandomPromptsHaveTheAskedTokenLengths) {
  const PromptText& text = stories_text();
  EXPECT_TRUE(text.exact());
  const auto convs = random_workload(8, RandomOptions{32, 16, 0.0, 0}, text, 5);
  ASSERT_EQ(convs.size(), 8u);
  for (const Conversation& c : convs) {
    ASSERT_EQ(c.turns.size(), 1u);
    EXPECT_EQ(c.turns[0].max_tokens, 16);
    const int64_t n = text.count_tokens(c.turns[0].text);
    // Re-encoding may merge pieces; a longer encoding was cut back to 32.
    EXPECT_LE(n, 32);
    EXPECT_GE(n, 24);
  }
  EXPECT_NE(convs[0].turns[0].text, convs[1].turns[0].text);
  const auto again = random_workload(8, RandomOptions{32, 16, 0.0, 0}, text, 5);
  EXPECT_EQ(again[3].turns[0].text, convs[3].turns[0].text);  // seeded
}

// The tokenizer of a Hugging Face directory (what a vLLM peer serves): Llama 3's byte-level BPE.
TEST(Workload, AnHfDirectoryGivesExactLengthsToo) {
  const auto text = tokenizer_prompt_text(std::string(LOOM_TEST_DATA) + "/hf_tokenizers/llama3");
  EXPECT_TRUE(text->exact());
  const auto convs = random_workload(6, RandomOptions{48, 8, 0.0, 0}, *text, 3);
  for (const Conversation& c : convs) {
    const int64_t n = text->count_tokens(c.turns[0].text);
    EXPECT_LE(n, 48);
    EXPECT_GE(n, 36);
  }
  EXPECT_THROW(tokenizer_prompt_text(std::string(LOOM_TEST_DATA) + "/no-such-dir/tokenizer.json"), Error);
}

TEST(Workload, RangeRatioAndPrefix) {
  const auto text = word_prompt_text();
  EXPECT_FALSE(text->exact());
  const auto convs = random_workload(200, RandomOptions{100, 10, 0.5, 20}, *text, 1);
  // The first 20 words (and the space after them) are the shared prefix.
  const std::string& first = convs[0].turns[0].text;
  size_t end = 0;
  for (int i = 0; i < 20; ++i) end = first.find(' ', end) + 1;
  const std::string prefix = first.substr(0, end);
  for (const Conversation& c : convs) {
    const int64_t n = text->count_tokens(c.turns[0].text);
    EXPECT_GE(n, 20 + 50);
    EXPECT_LE(n, 20 + 150);
    EXPECT_GE(c.turns[0].max_tokens, 5);
    EXPECT_LE(c.turns[0].max_tokens, 15);
    EXPECT_EQ(c.turns[0].text.rfind(prefix, 0), 0u);
  }
  EXPECT_THROW(random_workload(1, RandomOptions{10, 10, 1.0, 0}, *text, 1), Error);
}

TEST(Workload, SharedPrefixGroups) {
  const auto text = word_prompt_text();
  const auto convs = shared_prefix_workload(6, SharedPrefixOptions{3, 40, 5, 7}, *text, 2);
  for (size_t i = 0; i < convs.size(); ++i) {
    EXPECT_EQ(convs[i].system, convs[i % 3].system);
    EXPECT_EQ(text->count_tokens(convs[i].system), 40);
    EXPECT_EQ(text->count_tokens(convs[i].turns[0].text), 5);
    EXPECT_EQ(convs[i].turns[0].max_tokens, 7);
  }
  EXPECT_NE(convs[0].system, convs[1].system);
}

TEST(Workload, MultiTurnBodiesCarryTheHistory) {
  const auto text = word_prompt_text();
  const auto convs = multi_turn_workload(2, MultiTurnOptions{3, 4, 2}, *text, 3);
  ASSERT_EQ(convs[0].turns.size(), 3u);
  const Conversation& c = convs[0];
  const std::vector<std::string> answers = {"first answer", "second answer"};
  EXPECT_EQ(completion_prompt(c, 2, answers), c.turns[0].text + "\nfirst answer\n" + c.turns[1].text +
                                                  "\nsecond answer\n" + c.turns[2].text);
  BodyOptions chat{"m", true, true};
  const Json body = Json::parse(request_body(chat, c, 1, answers));
  EXPECT_EQ(body["model"], "m");
  EXPECT_EQ(body["max_tokens"], 2);
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["stream_options"]["include_usage"], true);
  EXPECT_EQ(body["ignore_eos"], true);
  ASSERT_EQ(body["messages"].size(), 3u);
  EXPECT_EQ(body["messages"][1], (Json{{"role", "assistant"}, {"content", "first answer"}}));
  EXPECT_EQ(body["messages"][2]["content"], c.turns[1].text);
  EXPECT_EQ(client_prompt_tokens(chat, c, 1, answers, *text), 4 + 2 + 4);
  const Json plain = Json::parse(request_body(BodyOptions{"m", false, false}, c, 0, answers));
  EXPECT_EQ(plain["prompt"], c.turns[0].text);
  EXPECT_FALSE(plain.contains("ignore_eos"));
}

TEST(Workload, ShareGptTakesTheFirstExchangeAndFilters) {
  const auto path = std::filesystem::temp_directory_path() / "loom-bench-sharegpt-test.json";
  std::ofstream(path) << R"([
    {"id": "a", "conversations": [{"from": "human", "value": "one two three four five"},
                                  {"from": "gpt", "value": "six seven eight nine"},
                                  {"from": "human", "value": "ignored"}]},
    {"id": "short", "conversations": [{"from": "human", "value": "hi"},
                                      {"from": "gpt", "value": "hello there my friend"}]},
    {"id": "no-answer", "conversations": [{"from": "human", "value": "one two three four"}]}
  ])";
  const auto text = word_prompt_text();
  const auto convs = sharegpt_workload(3, ShareGptOptions{path.string()}, *text, 0);
  ASSERT_EQ(convs.size(), 3u);  // the one usable entry, repeated
  for (const Conversation& c : convs) {
    EXPECT_EQ(c.turns[0].text, "one two three four five");
    EXPECT_EQ(c.turns[0].max_tokens, 4);
  }
  std::filesystem::remove(path);
  EXPECT_THROW(sharegpt_workload(1, ShareGptOptions{path.string()}, *text, 0), Error);
}

TEST(ServeArgs, ParsesAndRefuses) {
  const ServeArgs a = parse_serve_args({"--request-rate", "2.5", "--burstiness", "0.5",
                                        "--goodput", "ttft:100", "tpot:20", "--max-concurrency",
                                        "4", "--no-ignore-eos", "--endpoint",
                                        "/v1/chat/completions", "--dataset-name", "multi-turn"});
  EXPECT_EQ(a.request_rate, 2.5);
  EXPECT_EQ(a.burstiness, 0.5);
  EXPECT_EQ(a.goodput.ttft_ms, 100.0);
  EXPECT_EQ(a.goodput.tpot_ms, 20.0);
  EXPECT_FALSE(a.goodput.e2el_ms);
  EXPECT_EQ(a.max_concurrency, 4u);
  EXPECT_FALSE(a.ignore_eos);
  EXPECT_EQ(parse_serve_args({"--request-rate", "inf"}).request_rate, 0.0);
  EXPECT_THROW(parse_serve_args({"--goodput", "latency:5"}), Error);
  EXPECT_THROW(parse_serve_args({"--num-prompts", "0"}), Error);
  EXPECT_THROW(parse_serve_args({"--endpoint", "/v1/embeddings"}), Error);
  EXPECT_THROW(parse_serve_args({"--frobnicate"}), Error);
  EXPECT_THROW(parse_serve_args({"--model"}), Error);
  // The shared command-line style: --opt=value too, and the last of a repeat wins.
  const ServeArgs b = parse_serve_args({"--num-prompts=3", "--random-input-len=7", "--port", "81", "--port=82",
                                        "--no-progress", "--goodput=e2el:9"});
  EXPECT_EQ(b.num_prompts, 3u);
  EXPECT_EQ(b.random.input_len, 7);
  EXPECT_EQ(b.multi_turn.input_len, 7);
  EXPECT_EQ(b.port, 82);
  EXPECT_TRUE(b.quiet);
  EXPECT_FALSE(b.progress);
  EXPECT_EQ(b.goodput.e2el_ms, 9.0);
  EXPECT_TRUE(parse_serve_args({"--help"}).help);
  EXPECT_NE(serve_usage().find("--max-concurrency"), std::string::npos);
}

}  // namespace
}  // namespace loom::bench
