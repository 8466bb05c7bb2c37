// sdk_config.hpp: typed keys, every problem in one message, byte sizes, rules across keys and the
// schema text a descriptor publishes.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>

#include "loom/sdk_config.hpp"

namespace {

using loom::sdk::ConfigError;
using loom::sdk::ConfigSpec;

enum class Simd { kAuto, kPortable };

struct Config {
  int32_t block_size = 16;
  int64_t num_blocks = 0;
  int32_t seqs = 256;
  double threshold = 0.5;
  bool prefix = true;
  std::string label = "x";
  int64_t memory = int64_t{64} << 20;
  Simd simd = Simd::kAuto;
};

const ConfigSpec<Config>& spec() {
  static const auto s = ConfigSpec<Config>("cache demo")
                            .integer("block_size", &Config::block_size, "tokens per block", 1, 65536)
                            .integer("num_blocks", &Config::num_blocks, "pool size; 0 = from memory", 0)
                            .integer("max_num_seqs", &Config::seqs, "sequences at once", 1)
                            .number("threshold", &Config::threshold, "a fraction", 0.0, 1.0)
                            .boolean("enable_prefix_caching", &Config::prefix, "reuse prefixes")
                            .string("label", &Config::label, "a name")
                            .bytes("kv_memory", &Config::memory, "K/V bytes")
                            .choice("simd", &Config::simd, {{"auto", Simd::kAuto}, {"portable", Simd::kPortable}},
                                    "kernels")
                            .rule([](const Config&, const ConfigSpec<Config>::Given& given, std::vector<std::string>& p) {
                              if (given.count("kv_memory") && given.count("num_blocks"))
                                p.push_back("set kv_memory or num_blocks, not both");
                            });
  return s;
}

std::string refusal(const std::string& json) {
  try {
    spec().parse(json);
  } catch (const ConfigError& e) {
    EXPECT_EQ(spec().problems(json), e.what());
    return e.what();
  }
  return "accepted";
}

TEST(SdkConfig, DefaultsComeFromTheStruct) {
  for (const char* empty : {"", "{}", "  \n"}) {
    const Config c = spec().parse(empty);
    EXPECT_EQ(c.block_size, 16);
    EXPECT_EQ(c.memory, int64_t{64} << 20);
    EXPECT_EQ(c.simd, Simd::kAuto);
    EXPECT_EQ(spec().problems(empty), "");
  }
}

TEST(SdkConfig, ReadsEveryType) {
  const Config c = spec().parse(
      R"({"block_size": 32, "max_num_seqs": 3, "threshold": 1, "enable_prefix_caching": false,
          "label": "y", "kv_memory": "1.5KiB", "simd": "portable"})");
  EXPECT_EQ(c.block_size, 32);
  EXPECT_EQ(c.seqs, 3);
  EXPECT_EQ(c.threshold, 1.0);
  EXPECT_FALSE(c.prefix);
  EXPECT_EQ(c.label, "y");
  EXPECT_EQ(c.memory, 1536);
  EXPECT_EQ(c.simd, Simd::kPortable);
  EXPECT_EQ(spec().parse(R"({"kv_memory": 4096})").memory, 4096);
}

TEST(SdkConfig, ReportsEveryProblemAtOnce) {
  EXPECT_EQ(refusal(R"({"block_size": 0, "colour": 1, "enable_prefix_caching": "yes", "kv_memory": "12 parsecs",
                        "max_num_seqs": 1.5, "num_blocks": -1, "simd": "avx512", "threshold": 2, "label": 3})"),
            "cache demo: \"block_size\" must be an integer in [1, 65536], got 0; "
            "unknown key \"colour\" (valid keys: block_size, num_blocks, max_num_seqs, threshold, "
            "enable_prefix_caching, label, kv_memory, simd); "
            "\"enable_prefix_caching\" must be true or false, got \"yes\"; "
            "\"kv_memory\" must be a positive byte count or a size like \"64MiB\", got \"12 parsecs\" "
            "(unknown unit \"parsecs\" (valid: B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)); "
            "\"label\" must be a string, got 3; "
            "\"max_num_seqs\" must be a positive integer, got 1.5; "
            "\"num_blocks\" must be an integer >= 0, got -1; "
            "\"simd\" must be \"auto\" or \"portable\", got \"avx512\"; "
            "\"threshold\" must be a number in [0, 1], got 2; "
            "set kv_memory or num_blocks, not both");
}

TEST(SdkConfig, RefusesWhatIsNotAnObject) {
  EXPECT_EQ(refusal("[1]"), "cache demo: config must be a JSON object, got [1]");
  EXPECT_EQ(refusal("{").rfind("cache demo: config is not valid JSON: ", 0), 0u);
  EXPECT_EQ(refusal(R"({"max_num_seqs": 4294967296})"),
            "cache demo: \"max_num_seqs\" must be a positive integer, got 4294967296");
  EXPECT_EQ(refusal(R"({"kv_memory": 0})"),
            "cache demo: \"kv_memory\" must be a positive byte count or a size like \"64MiB\", got 0");
}

TEST(SdkConfig, SchemaListsKeysTypesDefaultsAndHelp) {
  const auto schema = nlohmann::json::parse(spec().schema_json());
  ASSERT_EQ(schema.size(), 8u);
  EXPECT_EQ(schema[0], (nlohmann::json{{"key", "block_size"}, {"type", "integer"}, {"default", 16},
                                       {"help", "tokens per block"}, {"min", 1}, {"max", 65536}}));
  EXPECT_EQ(schema[6]["default"], "64MiB");
  EXPECT_EQ(schema[6]["type"], "bytes");
  EXPECT_EQ(schema[7], (nlohmann::json{{"key", "simd"}, {"type", "enum"}, {"default", "auto"}, {"help", "kernels"},
                                       {"values", {"auto", "portable"}}}));
  EXPECT_EQ(ConfigSpec<Config>("attention naive").schema_json(), "[]");
}

TEST(SdkConfig, IntegerChoiceListsTheValues) {
  struct Groups {
    int64_t group = 128;
  };
  const auto s = ConfigSpec<Groups>("quantization int4").integer_choice("group_size", &Groups::group, {32, 64, 128}, "g");
  EXPECT_EQ(s.parse(R"({"group_size": 64})").group, 64);
  EXPECT_EQ(s.problems(R"({"group_size": 48})"), "quantization int4: \"group_size\" must be 32, 64 or 128, got 48");
  EXPECT_EQ(s.problems(R"({"group_size": "64"})"),
            "quantization int4: \"group_size\" must be 32, 64 or 128, got \"64\"");
  EXPECT_EQ(nlohmann::json::parse(s.schema_json())[0]["values"], (nlohmann::json{32, 64, 128}));
}

TEST(SdkConfig, NoKeysSaysSo) {
  const ConfigSpec<Config> none("attention naive");
  try {
    none.parse(R"({"tile": 4})");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "attention naive: unknown key \"tile\" (this plugin has no options)");
  }
}

TEST(SdkByteSize, ParsesExactlyAndSaysWhy) {
  struct Case {
    const char* text;
    int64_t bytes;  // -1: refused with `why`
    const char* why;
  };
  const Case cases[] = {
      {"4096", 4096, ""},          {"+7", 7, ""},
      {"1KB", 1000, ""},           {"64KiB", 65536, ""},
      {" 64 mib ", 67108864, ""},  {"1.5GB", 1500000000, ""},
      {".5KiB", 512, ""},          {"2TiB", int64_t{2} << 40, ""},
      {"", -1, "empty"},           {"-1", -1, "must not be negative"},
      {"1.5B", -1, "not a whole number of bytes"},
      {"1.", -1, "expected digits after '.'"},
      {"KiB", -1, "expected a number"},
      {"99999999999TiB", -1, "too large"},
  };
  for (const Case& c : cases) {
    int64_t got = -1;
    std::string why;
    const bool ok = loom::sdk::parse_byte_size(c.text, got, why);
    EXPECT_EQ(ok, c.bytes >= 0) << c.text;
    if (ok) EXPECT_EQ(got, c.bytes) << c.text;
    else EXPECT_EQ(why, c.why) << c.text;
  }
  for (int64_t n : {int64_t{0}, int64_t{1536}, int64_t{64} << 20, int64_t{3} << 40})
    EXPECT_EQ(loom::sdk::format_byte_size(n), n == 0 ? "0" : n == 1536 ? "1536" : n == (64 << 20) ? "64MiB" : "3TiB");
}

}  // namespace
