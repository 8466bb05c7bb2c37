// The [speculator] table: the plugin's keys go to the plugin as JSON, num_speculative_tokens and
// adaptive stay with the host; wrong values are refused with file:line; --print-config writes it
// back; --speculative-config (vLLM's JSON) builds the same table from vLLM's key names.
#include <gtest/gtest.h>

#include <string>

#include "core/common/error.hpp"
#include "core/config/cli.hpp"
#include "core/config/config.hpp"
#include "core/config/speculative_config_flag.hpp"

namespace loom {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse_config(text, "/etc/loom/spec.toml");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ConfigSpeculator, AbsentTableMeansOff) {
  const Config c = parse_config("", "");
  EXPECT_FALSE(c.speculator.has_value());
  EXPECT_EQ(c.speculation, SpeculationConfig{});
}

TEST(ConfigSpeculator, HostKeysStayPluginKeysGo) {
  const Config c = parse_config("[speculator]\nplugin = \"ngram\"\nnum_speculative_tokens = 5\nadaptive = false\n"
                                "min_n = 2\nmax_n = 3\n",
                                "");
  ASSERT_TRUE(c.speculator.has_value());
  EXPECT_EQ(*c.speculator, (PluginTable{"ngram", "", R"({"max_n":3,"min_n":2})"}));
  EXPECT_EQ(c.speculation.num_speculative_tokens, 5);
  EXPECT_FALSE(c.speculation.adaptive);
}

TEST(ConfigSpeculator, WrongHostValuesAreRefusedWithTheirPlace) {
  EXPECT_EQ(error_of("[speculator]\nplugin = \"ngram\"\nnum_speculative_tokens = 0\n"),
            "/etc/loom/spec.toml:3:26: speculator.num_speculative_tokens: must be in [1, 16], got 0");
  EXPECT_EQ(error_of("[speculator]\nplugin = \"ngram\"\nadaptive = \"yes\"\n"),
            "/etc/loom/spec.toml:3:12: speculator.adaptive: expected true or false, got a string");
  EXPECT_EQ(error_of("[speculator]\nnum_speculative_tokens = 2\n"),
            "/etc/loom/spec.toml:1:1: speculator.plugin: required: the name of the speculator plugin to load");
}

TEST(ConfigSpeculator, PrintConfigRoundTrips) {
  const Config c = parse_config("[speculator]\nplugin = \"suffix\"\nnum_speculative_tokens = 4\nmin_token_prob = 0.25\n", "");
  const Config again = parse_config(to_toml(c), "");
  EXPECT_EQ(again.speculator, c.speculator);
  EXPECT_EQ(again.speculation, c.speculation);
}

TEST(ConfigSpeculator, VllmSpeculativeConfigFlag) {
  Config c;
  apply_speculative_config(c, R"({"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_min": 2,
                                  "prompt_lookup_max": 6})");
  ASSERT_TRUE(c.speculator.has_value());
  EXPECT_EQ(*c.speculator, (PluginTable{"ngram", "", R"({"max_n":6,"min_n":2})"}));
  EXPECT_EQ(c.speculation.num_speculative_tokens, 5);
  apply_speculative_config(c, R"({"method": "suffix", "suffix_decoding_min_token_prob": 0.3, "adaptive": false})");
  EXPECT_EQ(*c.speculator, (PluginTable{"suffix", "", R"({"min_token_prob":0.3})"}));
  EXPECT_FALSE(c.speculation.adaptive);
  try {
    apply_speculative_config(c, R"({"method": "eagle3"})");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "--speculative-config: method \"eagle3\" has no speculator here (valid: ngram, suffix, draft_model)");
  }
  // A draft model, as vLLM spells it: with the method, or a "model" alone.
  apply_speculative_config(c, R"({"method": "draft_model", "model": "d.gguf", "num_speculative_tokens": 4})");
  EXPECT_EQ(*c.speculator, (PluginTable{"draft", "", R"({"model":"d.gguf"})"}));
  EXPECT_EQ(c.speculation.num_speculative_tokens, 4);
  apply_speculative_config(c, R"({"model": "e.gguf", "quantization": "int8"})");
  EXPECT_EQ(*c.speculator, (PluginTable{"draft", "", R"({"model":"e.gguf","quantization":"int8"})"}));
  try {
    apply_speculative_config(c, R"({"method": "ngram", "num_speculative_tokens": 0, "prompt_lookup_maxx": 4})");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("\"num_speculative_tokens\" must be an integer in [1, 16], got 0"), std::string::npos) << m;
    EXPECT_NE(m.find("unknown key \"prompt_lookup_maxx\""), std::string::npos) << m;
  }
}

TEST(ConfigSpeculator, CliFlagReachesTheConfig) {
  const char* argv[] = {"loom-server", "--speculative-config", R"({"method": "ngram", "num_speculative_tokens": 2})"};
  const CliOptions o = parse_cli(3, const_cast<char**>(argv));
  Config c;
  apply_overrides(c, o);
  ASSERT_TRUE(c.speculator.has_value());
  EXPECT_EQ(c.speculator->plugin, "ngram");
  EXPECT_EQ(c.speculation.num_speculative_tokens, 2);
}

}  // namespace
}  // namespace loom
