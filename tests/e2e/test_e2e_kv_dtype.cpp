// [cache] kv_dtype through the whole server, with the paged, radix and contiguous caches and
// flash_cpu: over an f16 pool the stories260K demo continues a prompt greedily exactly as over an
// f32 pool; over an int8 pool it does until a near-tie, where each run's token is in the other's
// top 5 (logprobs); and the second of two identical requests, which reuses the first one's
// cached prefix blocks (their scales travel with them), gives the same tokens as the first.
// Start-up refuses a pair that cannot hold the dtype, naming the cache plugin, the attention
// plugin and the dtype.
#include <gtest/gtest.h>

#include <string>

#include "core/common/error.hpp"
#include "e2e/e2e_server.hpp"

namespace loom::test {
namespace {

std::string tables(const std::string& cache, const std::string& attention, const std::string& kv_dtype) {
  return "[scheduler]\nplugin = \"fcfs\"\n[attention]\nplugin = \"" + attention + "\"\n[cache]\nplugin = \"" +
         cache + "\"\nkv_memory = \"8MiB\"\nkv_dtype = \"" + kv_dtype + "\"\n";
}

// The choice's logprobs ({tokens, top_logprobs}) of two identical greedy requests in a row (the
// second hits the prefix cache where the cache has one).
std::pair<nlohmann::json, nlohmann::json> greedy_twice(const std::string& cache, const std::string& kv_dtype) {
  LiveServer server(demo_config(tables(cache, "flash_cpu", kv_dtype)));
  const nlohmann::json request = {{"prompt", "Once upon a time, Lily found a big red ball in the park. She"},
                                  {"temperature", 0},
                                  {"max_tokens", 60},
                                  {"logprobs", 5}};
  nlohmann::json out[2];
  for (nlohmann::json& o : out) {
    const HttpResponse r = server.post("/v1/completions", request);
    EXPECT_EQ(r.status, 200u) << r.body;
    o = nlohmann::json::parse(r.body)["choices"][0]["logprobs"];
  }
  return {out[0], out[1]};
}

// Tokens equal before the first difference; at that difference each side's token must be among
// the other's top 5.
size_t same_or_close(const nlohmann::json& a, const nlohmann::json& b, const std::string& what) {
  const nlohmann::json &ta = a["tokens"], &tb = b["tokens"];
  size_t same = 0;
  while (same < ta.size() && same < tb.size() && ta[same] == tb[same]) ++same;
  if (same < ta.size() && same < tb.size()) {
    EXPECT_TRUE(b["top_logprobs"][same].contains(ta[same].get<std::string>())) << what << " at token " << same;
    EXPECT_TRUE(a["top_logprobs"][same].contains(tb[same].get<std::string>())) << what << " at token " << same;
  }
  return same;
}

class KvDtypeServer : public ::testing::TestWithParam<const char*> {};

TEST_P(KvDtypeServer, F16TellsTheF32StoryAndInt8StaysClose) {
  const std::string cache = GetParam();
  const auto [f32, f32_again] = greedy_twice(cache, "f32");
  ASSERT_EQ(f32["tokens"].size(), 60u);
  EXPECT_EQ(f32["tokens"], f32_again["tokens"]);
  const auto [f16, f16_again] = greedy_twice(cache, "f16");
  EXPECT_EQ(f16["tokens"], f32["tokens"]) << cache;
  EXPECT_EQ(f16_again["tokens"], f32["tokens"]) << cache << ", second request";
  const auto [int8, int8_again] = greedy_twice(cache, "int8");
  EXPECT_EQ(int8_again["tokens"], int8["tokens"]) << cache << ": the prefix-cache hit changed the int8 story";
  const size_t same = same_or_close(int8, f32, cache + " int8 vs f32");
  RecordProperty("int8_same_tokens", static_cast<int>(same));
  EXPECT_GE(same, 16u) << cache;  // the prompt's story starts alike
}

INSTANTIATE_TEST_SUITE_P(Caches, KvDtypeServer, ::testing::Values("paged", "radix", "contiguous"));

TEST(KvDtypeStartup, RefusesAPairThatCannotHoldTheDtypeNamingBoth) {
  const Config config =
      parse_config(demo_config(tables("paged", "naive", "int8")), std::string(LOOM_SOURCE_DIR) + "/configs/test.toml");
  try {
    Engine engine(config);
    engine.shutdown();
    FAIL() << "naive attention took an int8 KV pool";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("kv_dtype \"int8\""), std::string::npos) << m;
    EXPECT_NE(m.find("cache \"paged\""), std::string::npos) << m;
    EXPECT_NE(m.find("attention \"naive\""), std::string::npos) << m;
  }
}

TEST(KvDtypeStartup, UnknownDtypeIsAConfigError) {
  try {
    parse_config(demo_config(tables("paged", "flash_cpu", "int4")), "kv.toml");
    FAIL() << "int4 accepted";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("cache.kv_dtype"), std::string::npos) << m;
    EXPECT_NE(m.find("\"int4\""), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace loom::test
