// The loom-server command line: parsing, its errors, default config lookup and overrides.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "core/common/error.hpp"
#include "core/config/cli.hpp"

namespace loom {

void PrintTo(const CliOptions& o, std::ostream* os) {
  *os << "{config=" << o.config_path << ", host=" << o.host.value_or("-")
      << ", port=" << (o.port ? std::to_string(*o.port) : "-")
      << ", log_level=" << o.log_level.value_or("-") << ", model=" << o.model_path.value_or("-")
      << ", threads=" << (o.threads ? std::to_string(*o.threads) : "-")
      << ", print_config=" << o.print_config << ", help=" << o.help << ", version=" << o.version
      << "}";
}

namespace {

namespace fs = std::filesystem;

const std::string kDefault = std::string(LOOM_SOURCE_DIR) + "/configs/default.toml";

CliOptions parse(std::vector<std::string> args,
                 const std::vector<std::string>& defaults = {"/nonexistent/a.toml"}) {
  args.insert(args.begin(), "loom-server");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  return parse_cli(static_cast<int>(args.size()), argv.data(), defaults);
}

std::string error_of(std::vector<std::string> args,
                     const std::vector<std::string>& defaults = {"/nonexistent/a.toml"}) {
  try {
    parse(std::move(args), defaults);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ConfigCli, ParsesEveryOption) {
  const CliOptions o =
      parse({"--config", "c.toml", "--host", "0.0.0.0", "--port", "9000", "--log-level", "debug",
             "--model", "/m/x.gguf", "--threads", "4", "--kv-dtype", "int8", "--quantization", "gguf",
             "--print-config"});
  CliOptions expected;
  expected.config_path = "c.toml";
  expected.host = "0.0.0.0";
  expected.port = 9000;
  expected.log_level = "debug";
  expected.model_path = "/m/x.gguf";
  expected.threads = 4;
  expected.kv_dtype = "int8";
  expected.quantization = "gguf";
  expected.print_config = true;
  EXPECT_EQ(o, expected);
}

TEST(ConfigCli, AcceptsTheEqualsFormShortFlagsAndLastWins) {
  const CliOptions o = parse({"--config=a.toml", "-c", "b.toml", "--port=0", "--port=81",
                              "--host=::1", "--threads=0", "--log-level=off", "-h", "--version"});
  CliOptions expected;
  expected.config_path = "b.toml";
  expected.host = "::1";
  expected.port = 81;
  expected.threads = 0;
  expected.log_level = "off";
  expected.help = true;
  expected.version = true;
  EXPECT_EQ(o, expected);
}

TEST(ConfigCli, ModelPathIsMadeAbsoluteFromTheWorkingDirectory) {
  EXPECT_EQ(parse({"-c", "c.toml", "--model", "models/../m.gguf"}).model_path,
            (fs::current_path() / "m.gguf").string());
}

TEST(ConfigCli, RejectsBadArguments) {
  EXPECT_EQ(error_of({"--frobnicate"}), "unknown option '--frobnicate' (see --help)");
  EXPECT_EQ(error_of({"--frobnicate=1"}), "unknown option '--frobnicate' (see --help)");
  EXPECT_EQ(error_of({"-x"}), "unexpected argument '-x' (see --help)");
  EXPECT_EQ(error_of({"serve"}), "unexpected argument 'serve' (see --help)");
  EXPECT_EQ(error_of({"--port"}), "--port: missing value (see --help)");
  EXPECT_EQ(error_of({"--host="}), "--host: empty value (see --help)");
  EXPECT_EQ(error_of({"--port", "80x"}),
            "--port: expected an integer in 0..65535, got '80x' (see --help)");
  EXPECT_EQ(error_of({"--port=65536"}),
            "--port: expected an integer in 0..65535, got '65536' (see --help)");
  EXPECT_EQ(error_of({"--port=-1"}),
            "--port: expected an integer in 0..65535, got '-1' (see --help)");
  EXPECT_EQ(error_of({"--threads", "-2"}),
            "--threads: expected an integer >= 0, got '-2' (see --help)");
  EXPECT_EQ(error_of({"--threads", "99999999999"}),
            "--threads: expected an integer >= 0, got '99999999999' (see --help)");
  EXPECT_EQ(error_of({"--log-level", "loud"}),
            "--log-level: must be one of trace, debug, info, warn, error, off; got \"loud\" (see "
            "--help)");
  EXPECT_EQ(error_of({"--kv-dtype", "int3"}).rfind("--kv-dtype: ", 0), 0u) << error_of({"--kv-dtype", "int3"});
  EXPECT_EQ(error_of({"--quantization="}), "--quantization: empty value (see --help)");
  EXPECT_EQ(error_of({"--help=yes"}), "--help takes no value (see --help)");
  EXPECT_EQ(error_of({"--print-config=1"}), "--print-config takes no value (see --help)");
}

TEST(ConfigCli, UsesTheFirstDefaultConfigThatExists) {
  EXPECT_EQ(parse({}, {"/nonexistent/a.toml", kDefault, "/nonexistent/b.toml"}).config_path,
            kDefault);
  // A directory is not a config file.
  EXPECT_EQ(parse({}, {LOOM_SOURCE_DIR, kDefault}).config_path, kDefault);
  // --config wins over any default.
  EXPECT_EQ(parse({"--config", "mine.toml"}, {kDefault}).config_path, "mine.toml");
}

TEST(ConfigCli, NoConfigFoundIsAnErrorUnlessHelpOrVersion) {
  EXPECT_EQ(error_of({}, {"/nonexistent/a.toml", "/nonexistent/b.toml"}),
            "no --config given and no default config found (looked for /nonexistent/a.toml, "
            "/nonexistent/b.toml) (see --help)");
  EXPECT_EQ(parse({"--help"}).config_path, "");
  EXPECT_TRUE(parse({"--help"}).help);
  EXPECT_TRUE(parse({"--version"}).version);
}

TEST(ConfigCli, DefaultConfigCandidates) {
  EXPECT_EQ(default_config_candidates("/opt/loom/bin"),
            (std::vector<std::string>{"configs/default.toml", "/opt/loom/configs/default.toml",
                                      "/opt/configs/default.toml",
                                      "/opt/loom/share/loom/configs/default.toml"}));
}

TEST(ConfigCli, ExecutableDirIsThisTestsDirectory) {
  // Tests land in <build>/bin with every other binary.
  EXPECT_EQ(fs::path(executable_dir()).filename(), "bin");
  EXPECT_TRUE(fs::exists(fs::path(executable_dir()) / "test_config_cli"));
}

TEST(ConfigCli, UsageNamesEveryOption) {
  const std::string usage = cli_usage();
  for (const char* flag : {"--config", "--host", "--port", "--log-level", "--model", "--threads",
                           "--kv-dtype", "--quantization", "--print-config", "--help", "--version", "-c,", "-h,"}) {
    EXPECT_NE(usage.find(flag), std::string::npos) << flag;
  }
}

TEST(ConfigCli, ApplyOverridesChangesOnlyWhatWasGiven) {
  Config c = load_config(kDefault);
  const Config original = c;
  apply_overrides(c, CliOptions{.config_path = kDefault});
  EXPECT_EQ(c, original);

  CliOptions o;
  o.host = "0.0.0.0";
  o.port = 0;
  o.log_level = "trace";
  o.threads = 3;
  apply_overrides(c, o);
  Config expected = original;
  expected.server.host = "0.0.0.0";
  expected.server.port = 0;
  expected.log_level = "trace";
  expected.runtime.threads = 3;
  EXPECT_EQ(c, expected);
}

TEST(ConfigCli, KvDtypeAndQuantizationOverrides) {
  Config c = load_config(kDefault);
  c.quantization = PluginTable{"int4", "", R"({"group_size":32})"};
  CliOptions o;
  o.kv_dtype = "fp8_e4m3";
  o.quantization = "int4";  // the same plugin keeps its keys
  apply_overrides(c, o);
  EXPECT_EQ(c.kv_dtype, "fp8_e4m3");
  EXPECT_EQ(c.quantization, (PluginTable{"int4", "", R"({"group_size":32})"}));
  o.quantization = "gguf";  // another plugin starts from an empty table
  apply_overrides(c, o);
  EXPECT_EQ(c.quantization, PluginTable{"gguf"});
}

TEST(ConfigCli, AnotherModelRenamesOnlyADerivedName) {
  Config derived = parse_config("[model]\npath = \"/m/a.gguf\"\n", "/etc/x.toml");
  ASSERT_EQ(derived.model.name, "a");
  apply_overrides(derived, CliOptions{.model_path = "/m/b.gguf"});
  EXPECT_EQ(derived.model.path, "/m/b.gguf");
  EXPECT_EQ(derived.model.name, "b");

  Config named = parse_config("[model]\npath = \"/m/a.gguf\"\nname = \"chat\"\n", "/etc/x.toml");
  apply_overrides(named, CliOptions{.model_path = "/m/b.gguf"});
  EXPECT_EQ(named.model.path, "/m/b.gguf");
  EXPECT_EQ(named.model.name, "chat");

  Config none = parse_config("", "/etc/x.toml");
  apply_overrides(none, CliOptions{.model_path = "/m/c.gguf"});
  EXPECT_EQ(none.model.name, "c");
}

TEST(ConfigCli, LoadEffectiveConfigAppliesOverridesAndChecks) {
  CliOptions o{.config_path = kDefault};
  o.port = 1234;
  const Config c = load_effective_config(o);
  EXPECT_EQ(c.server.port, 1234);
  EXPECT_EQ(c.model.name, "stories260K");

  // A config without a model is complete only with --model.
  const std::string path = testing::TempDir() + "/loom_config_cli_test.toml";
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("[server]\nport = 0\n", f);
    std::fclose(f);
  }
  try {
    load_effective_config(CliOptions{.config_path = path});
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              path + ": model.path: required: set [model] path or pass --model");
  }
  const Config with_model =
      load_effective_config(CliOptions{.config_path = path, .model_path = "/m/tiny.gguf"});
  EXPECT_EQ(with_model.model.path, "/m/tiny.gguf");
  EXPECT_EQ(with_model.model.name, "tiny");
  EXPECT_EQ(with_model.server.port, 0);
  std::remove(path.c_str());
}

TEST(ConfigCli, FindsTheRepositoryDefaultFromABuildTree) {
  // <repo>/<build>/bin/test_config_cli -> <repo>/configs/default.toml, when the build directory
  // sits in the repository (as build-*/ does); elsewhere there is nothing to find.
  bool any = false;
  for (const std::string& c : default_config_candidates(executable_dir().string())) {
    any = any || fs::is_regular_file(c);
  }
  if (!any) GTEST_SKIP() << "build directory is outside the source tree";
  char arg0[] = "loom-server";
  char* argv[] = {arg0, nullptr};
  const CliOptions o = parse_cli(1, argv);
  EXPECT_TRUE(fs::equivalent(o.config_path, kDefault)) << o.config_path;
}

}  // namespace
}  // namespace loom
