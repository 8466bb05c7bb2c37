// The loom-server command line (CLI11): vLLM's and llama-server's spellings, both value forms,
// errors, and how flags, a config file and the built-in defaults combine.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <string>
#include <vector>

#include "core/common/error.hpp"
#include "core/config/cli.hpp"

namespace loom {

void PrintTo(const CliOptions& o, std::ostream* os) {
  *os << "{config=" << o.config_path << ", model=" << o.model_path.value_or("-")
      << ", name=" << o.served_model_name.value_or("-")
      << ", max_model_len=" << (o.max_model_len ? std::to_string(*o.max_model_len) : "-")
      << ", host=" << o.host.value_or("-") << ", port=" << (o.port ? std::to_string(*o.port) : "-")
      << ", api_key=" << o.api_key.value_or("-") << ", prefix=" << o.metrics_prefix.value_or("-")
      << ", threads=" << (o.threads ? std::to_string(*o.threads) : "-")
      << ", max_num_seqs=" << (o.max_num_seqs ? std::to_string(*o.max_num_seqs) : "-")
      << ", kv_memory=" << (o.kv_memory ? std::to_string(*o.kv_memory) : "-")
      << ", prefix_caching=" << (o.enable_prefix_caching ? std::to_string(*o.enable_prefix_caching) : "-")
      << ", print_config=" << o.print_config << ", help=" << o.help << ", version=" << o.version << "}";
}

namespace {

namespace fs = std::filesystem;

const std::string kDefault = std::string(LOOM_SOURCE_DIR) + "/configs/default.toml";
const std::string kModel = std::string(LOOM_TEST_DATA) + "/stories260K.gguf";

CliOptions parse(std::vector<std::string> args) {
  args.insert(args.begin(), "loom-server");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  return parse_cli(static_cast<int>(args.size()), argv.data());
}

std::string error_of(std::vector<std::string> args) {
  try {
    parse(std::move(args));
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ConfigCli, ParsesTheVllmSpellings) {
  const CliOptions o = parse({"--model", "/m/x.gguf", "--served-model-name", "demo", "--max-model-len", "256",
                              "--max-num-seqs", "8", "--max-num-batched-tokens", "512", "--api-key", "k",
                              "--enable-prefix-caching", "--kv-cache-dtype", "int8", "--kv-cache-memory", "8GiB",
                              "--host", "0.0.0.0", "--port", "9000", "--threads", "4", "--gpu-memory-utilization",
                              "0.5", "--metrics-prefix", "vllm", "--quantization", "gguf", "--log-level", "debug",
                              "--config", "c.toml", "--print-config"});
  CliOptions expected;
  expected.config_path = "c.toml";
  expected.model_path = "/m/x.gguf";
  expected.served_model_name = "demo";
  expected.max_model_len = 256;
  expected.max_num_seqs = 8;
  expected.max_num_batched_tokens = 512;
  expected.api_key = "k";
  expected.enable_prefix_caching = true;
  expected.kv_dtype = "int8";
  expected.kv_memory = int64_t{8} << 30;
  expected.host = "0.0.0.0";
  expected.port = 9000;
  expected.threads = 4;
  expected.memory_utilization = 0.5;
  expected.metrics_prefix = "vllm";
  expected.quantization = "gguf";
  expected.log_level = "debug";
  expected.print_config = true;
  EXPECT_EQ(o, expected);
}

TEST(ConfigCli, ParsesTheLlamaServerShortOnesAndAPositionalModel) {
  CliOptions expected;
  expected.model_path = "/m/x.gguf";
  expected.threads = 3;
  expected.max_num_seqs = 4;
  expected.max_model_len = 2048;
  EXPECT_EQ(parse({"-m", "/m/x.gguf", "-t", "3", "-np", "4", "-c", "2048"}), expected);
  EXPECT_EQ(parse({"/m/x.gguf", "-t3", "-np", "4", "-c2048"}), expected);
}

TEST(ConfigCli, EqualsFormWorksEverywhereAndTheLastRepeatWins) {
  const CliOptions o = parse({"--port=0", "--port=81", "--host=::1", "--threads=0", "--log-level=off",
                              "--kv-dtype=f16", "--metrics_prefix=vllm", "--no-enable-prefix-caching",
                              "--kv-cache-memory=1.5GiB", "--config=a.toml", "--config", "b.toml"});
  CliOptions expected;
  expected.config_path = "b.toml";
  expected.host = "::1";
  expected.port = 81;
  expected.threads = 0;
  expected.log_level = "off";
  expected.kv_dtype = "f16";
  expected.metrics_prefix = "vllm";
  expected.enable_prefix_caching = false;
  expected.kv_memory = int64_t{3} << 29;
  EXPECT_EQ(o, expected);
}

TEST(ConfigCli, HelpAndVersion) {
  EXPECT_TRUE(parse({"--help"}).help);
  EXPECT_TRUE(parse({"-h"}).help);
  EXPECT_TRUE(parse({"--version"}).version);
  EXPECT_EQ(parse({}), CliOptions{});  // nothing given: built-in defaults, no model yet
}

TEST(ConfigCli, ModelPathIsMadeAbsoluteFromTheWorkingDirectory) {
  EXPECT_EQ(parse({"models/../m.gguf"}).model_path, (fs::current_path() / "m.gguf").string());
  EXPECT_EQ(parse({"-m", "m.gguf"}).model_path, (fs::current_path() / "m.gguf").string());
}

TEST(ConfigCli, RejectsBadArguments) {
  EXPECT_EQ(error_of({"--frobnicate"}), "The following argument was not expected: --frobnicate");
  EXPECT_EQ(error_of({"a.gguf", "b.gguf"}), "The following argument was not expected: b.gguf");
  EXPECT_EQ(error_of({"a.gguf", "-m", "b.gguf"}),
            "the model is given twice: as MODEL and as -m/--model; give one");
  EXPECT_EQ(error_of({"--port"}), "--port: 1 required N missing");
  EXPECT_EQ(error_of({"--port", "80x"}), "--port: expected an integer in 0..65535, got '80x'");
  EXPECT_EQ(error_of({"--port=65536"}), "--port: expected an integer in 0..65535, got '65536'");
  EXPECT_EQ(error_of({"--threads", "-2"}), "--threads: expected an integer >= 0, got '-2'");
  EXPECT_EQ(error_of({"--threads", "99999999999"}), "--threads: expected an integer >= 0, got '99999999999'");
  EXPECT_EQ(error_of({"-np", "0"}), "--max-num-seqs: expected an integer >= 1, got '0'");
  EXPECT_EQ(error_of({"--log-level", "loud"}),
            "--log-level: must be one of trace, debug, info, warn, error, off; got \"loud\"");
  EXPECT_EQ(error_of({"--kv-cache-dtype", "int3"}),
            "--kv-cache-dtype: must be one of f32, f16, bf16, int8, fp8_e4m3; got \"int3\"");
  EXPECT_EQ(error_of({"--metrics-prefix", "sglang"}),
            "--metrics-prefix: must be \"loom\" or \"vllm\", got \"sglang\"");
  EXPECT_EQ(error_of({"--kv-cache-memory", "lots"}).rfind("--kv-cache-memory: ", 0), 0u)
      << error_of({"--kv-cache-memory", "lots"});
  EXPECT_EQ(error_of({"--chat-template", "/nonexistent/t.jinja"}),
            "--chat-template: File does not exist: /nonexistent/t.jinja");
}

TEST(ConfigCli, UsageNamesEveryOption) {
  const std::string usage = cli_usage();
  for (const char* flag :
       {"MODEL", "-m,", "--model", "--served-model-name", "-c,", "--max-model-len", "--chat-template",
        "--quantization", "--host", "--port", "--api-key", "--metrics-prefix", "-t,", "--threads",
        "--max-num-seqs", "-np", "--max-num-batched-tokens", "--enable-prefix-caching",
        "--no-enable-prefix-caching", "--kv-cache-memory", "--memory-utilization", "--kv-cache-dtype",
        "--kv-dtype", "--config", "--log-level", "--print-config", "--version", "-h,", "--help"}) {
    EXPECT_NE(usage.find(flag), std::string::npos) << flag << "\n" << usage;
  }
}

TEST(ConfigCli, NoFileMeansTheBuiltInDefaultsPlusTheFlags) {
  const Config c = load_effective_config(parse({kModel, "--served-model-name", "demo", "--max-num-seqs", "8",
                                                "--max-model-len", "256", "--api-key", "k"}));
  Config expected = builtin_config();
  expected.model.path = kModel;
  expected.model.name = "demo";
  expected.model.max_model_len = 256;
  expected.server.api_key = "k";
  expected.scheduler.config_json = R"({"max_num_batched_tokens":2048,"max_num_seqs":8,"max_step_ms":25,"max_step_stretch":4,"max_step_stretch_after":16})";
  EXPECT_EQ(c, expected);
}

TEST(ConfigCli, FlagsOverrideTheFileWhichOverridesTheDefaults) {
  const std::string path = testing::TempDir() + "/loom_config_cli_" + std::to_string(getpid()) + ".toml";
  std::ofstream(path) << "[model]\npath = \"" << kModel << "\"\n[server]\nport = 1\napi_key = \"file\"\n"
                      << "[cache]\nplugin = \"paged\"\nnum_blocks = 64\n";
  const Config c = load_effective_config(parse({"--config", path, "--api-key", "flag", "--kv-cache-memory", "1MiB",
                                                "--enable-prefix-caching", "--max-num-batched-tokens", "128"}));
  EXPECT_EQ(c.model.path, kModel);
  EXPECT_EQ(c.model.name, "stories260K");
  EXPECT_EQ(c.server.port, 1);
  EXPECT_EQ(c.server.api_key, "flag");
  // --kv-cache-memory replaces the file's num_blocks (the plugin refuses both at once).
  EXPECT_EQ(c.cache, (PluginTable{"paged", "", R"({"block_size":16,"enable_prefix_caching":true,"kv_memory":"1MiB"})"}));
  EXPECT_EQ(c.scheduler.config_json, R"({"max_num_batched_tokens":128,"max_num_seqs":64,"max_step_ms":25,"max_step_stretch":4,"max_step_stretch_after":16})");
  std::remove(path.c_str());
}

TEST(ConfigCli, MemoryUtilizationReplacesTheFilesFixedSize) {
  const std::string path = testing::TempDir() + "/loom_config_cli_mu_" + std::to_string(getpid()) + ".toml";
  std::ofstream(path) << "[model]\npath = \"" << kModel << "\"\n[cache]\nplugin = \"paged\"\nnum_blocks = 64\n";
  const Config c = load_effective_config(parse({"--config", path, "--memory-utilization", "0.5"}));
  EXPECT_EQ(c.cache.config_json, R"({"block_size":16})");
  EXPECT_EQ(c.memory_utilization, 0.5);
  try {
    load_effective_config(parse({"--config", path, "--memory-utilization", "0.5", "--kv-cache-memory", "1MiB"}));
    ADD_FAILURE() << "two pool sizes were taken";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "--memory-utilization and --kv-cache-memory both size the KV pool; give one of the two");
  }
  std::remove(path.c_str());
}

TEST(ConfigCli, PluginFlagsGoIntoTheTableOfWhicheverPluginIsChosen) {
  // The contiguous cache has no enable_prefix_caching: its table gets the key anyway, and the
  // plugin's own validation refuses it at start-up (not the command line).
  Config c = builtin_config();
  c.cache = PluginTable{"contiguous"};
  CliOptions o;
  o.enable_prefix_caching = false;
  o.max_num_seqs = 2;
  apply_overrides(c, o);
  EXPECT_EQ(c.cache, (PluginTable{"contiguous", "", R"({"enable_prefix_caching":false})"}));
  EXPECT_EQ(c.scheduler.config_json, R"({"max_num_batched_tokens":2048,"max_num_seqs":2,"max_step_ms":25,"max_step_stretch":4,"max_step_stretch_after":16})");
}

TEST(ConfigCli, ApplyOverridesChangesOnlyWhatWasGiven) {
  Config c = load_config(kDefault);
  const Config original = c;
  apply_overrides(c, CliOptions{.config_path = kDefault});
  EXPECT_EQ(c, original);
}

TEST(ConfigCli, QuantizationOverrideKeepsTheKeysOfTheSamePluginOnly) {
  Config c = load_config(kDefault);
  c.quantization = PluginTable{"int4", "", R"({"group_size":32})"};
  CliOptions o;
  o.quantization = "int4";
  apply_overrides(c, o);
  EXPECT_EQ(c.quantization, (PluginTable{"int4", "", R"({"group_size":32})"}));
  o.quantization = "gguf";
  apply_overrides(c, o);
  EXPECT_EQ(c.quantization, PluginTable{"gguf"});
}

TEST(ConfigCli, AnotherModelRenamesOnlyADerivedName) {
  Config derived = parse_config("[model]\npath = \"/m/a.gguf\"\n", "/etc/x.toml");
  apply_overrides(derived, CliOptions{.model_path = "/m/b.gguf"});
  EXPECT_EQ(derived.model.path, "/m/b.gguf");
  EXPECT_EQ(derived.model.name, "b");

  Config named = parse_config("[model]\npath = \"/m/a.gguf\"\nname = \"chat\"\n", "/etc/x.toml");
  apply_overrides(named, CliOptions{.model_path = "/m/b.gguf"});
  EXPECT_EQ(named.model.name, "chat");
  CliOptions rename{.model_path = "/m/c.gguf"};
  rename.served_model_name = "demo";
  apply_overrides(named, rename);
  EXPECT_EQ(named.model.name, "demo");
}

TEST(ConfigCli, WithoutAModelTheErrorSaysHowToGiveOne) {
  try {
    load_effective_config(CliOptions{});
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "<config>: model.path: required: give MODEL (or -m/--model) or set [model] path");
  }
}

}  // namespace
}  // namespace loom
