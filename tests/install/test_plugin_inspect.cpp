// `loom-plugin inspect` on real plugins: an in-tree one (exact descriptor lines), one the host
// refuses (ABI), one that cannot run here (score 0), one that publishes its config keys.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

#include "loom/plugin.h"
#include "loom/scheduler.h"

namespace {

struct ToolRun {
  int status = -1;
  std::string output;
};

ToolRun run_tool(const std::string& args) {
  const std::string command = std::string(LOOM_PLUGIN_TOOL) + " " + args + " 2>&1";
  ToolRun r;
  FILE* pipe = popen(command.c_str(), "r");
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
  const int raw = pclose(pipe);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return r;
}

const std::string kIface = std::to_string(LOOM_SCHEDULER_IFACE_MAJOR) + "." + std::to_string(LOOM_SCHEDULER_IFACE_MINOR);
const std::string kAbi = std::to_string(LOOM_ABI_VERSION);

#define EXPECT_LINE(out, line) EXPECT_NE((out).find(std::string(line) + "\n"), std::string::npos) << (out)

TEST(PluginInspect, InTreeSchedulerShowsItsDescriptorExactly) {
  const std::string file = std::string(LOOM_PLUGIN_BIN_DIR) + "/libloom-scheduler-fcfs.so";
  const ToolRun r = run_tool("inspect " + file);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output.rfind("file: " + file + "\nkind: scheduler\nname: fcfs\nversion: 0.1.0\n", 0), 0u) << r.output;
  EXPECT_LINE(r.output, "ABI version: " + kAbi + " (host: " + kAbi + ")");
  EXPECT_LINE(r.output, "interface: scheduler " + kIface + " (host: " + kIface + ")");
  EXPECT_LINE(r.output, "accepted by this host: yes");
  EXPECT_LINE(r.output, "score on this machine: 1 (no score function: runs anywhere)");
  EXPECT_NE(r.output.find("\nconfig keys:"), std::string::npos) << r.output;
}

TEST(PluginInspect, PublishedConfigKeysAreListed) {
  const ToolRun r = run_tool("inspect " + std::string(LOOM_SCHEMA_PLUGIN));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_LINE(r.output, "name: schema");
  EXPECT_LINE(r.output, "version: 2.0.1");
  EXPECT_LINE(r.output,
              "config keys:\n"
              "  max_num_seqs (integer, default 16): most requests holding KV blocks\n"
              "  policy (enum, default fifo): fifo or lifo");
}

TEST(PluginInspect, WrongAbiIsShownAndRefused) {
  const std::string file = std::string(LOOM_ABI_PLUGIN_DIR) + "/libloom-scheduler-bad_abi.so";
  const ToolRun r = run_tool("inspect " + file);
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_LINE(r.output, "ABI version: 99 (host: " + kAbi + ")");
  EXPECT_LINE(r.output, "accepted by this host: no: plugin scheduler 'bad_abi' (" + file +
                            "): ABI version 99 does not match the host's ABI version " + kAbi +
                            "; rebuild the plugin against this SDK");
  EXPECT_LINE(r.output, "score on this machine: not computed (the host refuses the plugin)");
  EXPECT_LINE(r.output, "config keys: not published");
}

TEST(PluginInspect, ScoreZeroGivesThePluginsReason) {
  const ToolRun r = run_tool("inspect " + std::string(LOOM_ABI_PLUGIN_DIR) + "/libloom-scheduler-refuses.so");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_LINE(r.output, "accepted by this host: yes");
  EXPECT_LINE(r.output, "score on this machine: 0 (cannot run here: needs a quantum accelerator, found none)");
}

TEST(PluginInspect, NotAPluginIsOneLineAndStatus1) {
  const std::string file = std::string(LOOM_ABI_PLUGIN_DIR) + "/libloom-scheduler-no_entry.so";
  const ToolRun r = run_tool("inspect " + file);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.output, "loom-plugin: plugin scheduler 'no_entry' (" + file + "): no entry symbol '" +
                          LOOM_PLUGIN_ENTRY_SYMBOL +
                          "' (not a Loom plugin, or built without a LOOM_*_PLUGIN macro)\n");
}

TEST(PluginInspect, UnknownKindForNewListsTheKinds) {
  const ToolRun r = run_tool("new planner x /tmp/never-written");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("planner not in {attention,quantization,scheduler,cache,cache_offload,semantic_cache,speculator}"),
            std::string::npos)
      << r.output;
}

}  // namespace
