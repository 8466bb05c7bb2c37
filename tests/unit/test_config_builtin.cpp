// builtin_config(): configs/default.toml's values compiled in, and a file layered on top of them.
#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "core/config/config.hpp"

namespace loom {

void PrintTo(const Config& c, std::ostream* os) { *os << "\n" << to_toml(c); }

namespace {

constexpr const char* kFile = "/etc/loom/test.toml";

// default.toml is the documented reference; loom-server runs with builtin_config() when given no
// file. They must agree on everything but the model (default.toml names the bundled demo).
TEST(ConfigBuiltin, EqualsWhatDefaultTomlDocumentsExceptTheModel) {
  Config documented = load_config(std::string(LOOM_SOURCE_DIR) + "/configs/default.toml");
  EXPECT_FALSE(documented.model.path.empty());
  documented.source_path.clear();
  documented.model.path.clear();
  documented.model.name.clear();
  EXPECT_EQ(documented, builtin_config());
}

TEST(ConfigBuiltin, TheBuiltInDefaults) {
  const Config c = builtin_config();
  EXPECT_EQ(c.model, ModelConfig{});
  EXPECT_EQ(c.server, ServerConfig{});
  EXPECT_EQ(c.server.metrics_prefix, "loom");
  EXPECT_EQ(c.attention, (PluginTable{"flash_cpu", "", "{}"}));
  EXPECT_EQ(c.quantization, (PluginTable{"auto", "", "{}"}));
  EXPECT_EQ(c.scheduler,
            (PluginTable{"continuous", "", R"({"max_num_batched_tokens":2048,"max_num_seqs":64,"max_step_ms":25,"max_step_stretch":4,"max_step_stretch_after":16})"}));
  // No kv_memory: loom-server sizes the pool at start-up from memory_utilization.
  EXPECT_EQ(c.cache, (PluginTable{"paged", "", R"({"block_size":16})"}));
  EXPECT_EQ(c.kv_dtype, "f32");
  EXPECT_EQ(c.memory_utilization, 0.9);
  // Admission off, no class targets; the step-time model calibrated with 8 steps at start-up.
  SloConfig slo;
  slo.calibration_steps = 8;
  EXPECT_EQ(c.slo, slo);
}

TEST(ConfigBuiltin, AFileOnlyAddsToTheBase) {
  const Config base = builtin_config();
  const Config c = parse_config(
      "[server]\nport = 9000\n[scheduler]\nplugin = \"continuous\"\nmax_num_seqs = 8\n"
      "[cache]\nplugin = \"paged\"\nkv_memory = \"1MiB\"\n",
      kFile, base);
  Config expected = base;
  expected.source_path = kFile;
  expected.server.port = 9000;
  expected.scheduler.config_json = R"({"max_num_batched_tokens":2048,"max_num_seqs":8,"max_step_ms":25,"max_step_stretch":4,"max_step_stretch_after":16})";
  expected.cache.config_json = R"({"block_size":16,"kv_memory":"1MiB"})";
  EXPECT_EQ(c, expected);
}

TEST(ConfigBuiltin, ATableNamingAnotherPluginReplacesTheBaseKeys) {
  const Config c = parse_config("[scheduler]\nplugin = \"fcfs\"\n[cache]\nplugin = \"contiguous\"\n", kFile,
                                builtin_config());
  EXPECT_EQ(c.scheduler, (PluginTable{"fcfs", "", "{}"}));
  EXPECT_EQ(c.cache, (PluginTable{"contiguous", "", "{}"}));
  EXPECT_EQ(c.memory_utilization, 0.9);  // a core key of [cache], not the plugin's
}

TEST(ConfigBuiltin, AModelPathRenamesOnlyADerivedName) {
  Config base = builtin_config();
  base.model.path = "/m/a.gguf";
  base.model.name = "a";
  EXPECT_EQ(parse_config("[model]\npath = \"/m/b.gguf\"\n", kFile, base).model.name, "b");
  base.model.name = "chat";
  EXPECT_EQ(parse_config("[model]\npath = \"/m/b.gguf\"\n", kFile, base).model.name, "chat");
}

TEST(ConfigBuiltin, PluginKeysSetInCode) {
  PluginTable t{"paged", "", R"({"block_size":16,"num_blocks":4})"};
  set_plugin_key(t, "kv_memory", "\"8GiB\"");
  set_plugin_key(t, "num_blocks", std::nullopt);
  EXPECT_EQ(t.config_json, R"({"block_size":16,"kv_memory":"8GiB"})");
  EXPECT_TRUE(has_plugin_key(t, "kv_memory"));
  EXPECT_FALSE(has_plugin_key(t, "num_blocks"));
  EXPECT_EQ(merge_plugin_tables(t, PluginTable{"paged", "/x.so", R"({"block_size":32})"}),
            (PluginTable{"paged", "/x.so", R"({"block_size":32,"kv_memory":"8GiB"})"}));
  EXPECT_EQ(merge_plugin_tables(t, PluginTable{"radix"}), PluginTable{"radix"});
}

}  // namespace
}  // namespace loom
