// loom-server as users run it: a broken plugin named in the config stops start-up with one clear
// line and exit status 1 (no crash, no hang); --print-config prints the effective config.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "e2e/server_process.hpp"

namespace {

using loom::test::run_command;
using loom::test::RunResult;

RunResult run_server(const std::string& config_text, const std::string& extra_args = "") {
  // One file per process: ctest runs this binary's tests as parallel processes, and a shared name
  // let one test's server read another's config.
  const auto config =
      std::filesystem::temp_directory_path() / ("loom-e2e-startup-" + std::to_string(getpid()) + ".toml");
  std::ofstream(config) << config_text;
  RunResult result = run_command(std::string("timeout 60 ") + LOOM_SERVER_BIN + " --config " + config.string() +
                                 " " + extra_args + " 2>&1");
  std::filesystem::remove(config);
  return result;
}

std::string config_with_scheduler(const std::string& name) {
  return "[model]\npath = \"" + std::string(LOOM_TEST_DATA) + "/stories260K.gguf\"\n" +
         "[server]\nport = 0\n[plugins]\ndirs = [\"" + LOOM_ABI_PLUGIN_DIR + "\"]\n" +
         "[scheduler]\nplugin = \"" + name + "\"\n";
}

TEST(E2eStartup, BrokenPluginsAreRefusedWithOneClearLine) {
  struct Case {
    std::string plugin;
    std::vector<std::string> parts;  // each must appear in the refusal line
  };
  const std::vector<Case> cases = {
      {"bad_abi", {"scheduler 'bad_abi'", "libloom-scheduler-bad_abi.so", "ABI version"}},
      {"short_desc", {"scheduler 'short_desc'", "struct_size"}},
      {"throws", {"scheduler 'throws'", "create"}},
      {"refuses", {"scheduler 'refuses'", "refused to run on this machine"}},
  };
  for (const Case& c : cases) {
    const RunResult r = run_server(config_with_scheduler(c.plugin));
    EXPECT_EQ(r.status, 1) << c.plugin << ":\n" << r.output;
    for (const std::string& part : c.parts) {
      EXPECT_NE(r.output.find(part), std::string::npos) << c.plugin << " lacks '" << part << "':\n" << r.output;
    }
    EXPECT_EQ(r.output.find("Segmentation"), std::string::npos) << r.output;
  }
}

TEST(E2eStartup, PrintConfigShowsTheEffectiveConfig) {
  const RunResult r = run_server(config_with_scheduler("fcfs"), "--port 9123 --print-config");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("port = 9123"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("plugin = \"fcfs\""), std::string::npos) << r.output;
}

}  // namespace
