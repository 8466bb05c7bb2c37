// Kind names both ways, and the loader's search: file names, search order, listings and the
// refusal lines for missing or unloadable files (no real plugin needed).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/common/error.hpp"
#include "core/plugin/plugin_kind.hpp"
#include "core/plugin/plugin_loader.hpp"

namespace loom {
namespace {
namespace fs = std::filesystem;

TEST(PluginKind, NamesBothWays) {
  const std::vector<std::pair<loom_plugin_kind, std::string>> expected = {
      {LOOM_KIND_ATTENTION, "attention"},         {LOOM_KIND_QUANTIZATION, "quantization"},
      {LOOM_KIND_SCHEDULER, "scheduler"},         {LOOM_KIND_CACHE, "cache"},
      {LOOM_KIND_CACHE_OFFLOAD, "cache_offload"}, {LOOM_KIND_SEMANTIC_CACHE, "semantic_cache"},
      {LOOM_KIND_SPECULATOR, "speculator"}};
  ASSERT_EQ(all_kinds().size(), expected.size());
  for (const auto& [kind, name] : expected) {
    EXPECT_EQ(kind_name(kind), name);
    EXPECT_EQ(parse_kind(name), kind);
    EXPECT_EQ(find_kind(name), kind);
  }
  EXPECT_EQ(kind_name(static_cast<loom_plugin_kind>(99)), "unknown(99)");
  EXPECT_EQ(find_kind("Scheduler"), std::nullopt);
}

TEST(PluginKind, UnknownNameListsTheValidOnes) {
  try {
    parse_kind("schedular");
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "unknown plugin kind 'schedular' (valid: attention, quantization, scheduler, "
                 "cache, cache_offload, semantic_cache, speculator)");
  }
}

TEST(PluginKind, HostSizesAndVersions) {
  const KindInfo& info = kind_info(LOOM_KIND_CACHE);
  EXPECT_EQ(info.iface_major, static_cast<uint32_t>(LOOM_CACHE_IFACE_MAJOR));
  EXPECT_EQ(info.iface_minor, static_cast<uint32_t>(LOOM_CACHE_IFACE_MINOR));
  // Cache 1.0 ends at usage; 1.1 adds fork/take_block_copies; 1.2 the create args' last member;
  // 1.3 trim; 1.4 take_evicted, block_hashes and evict_cached; 1.5 group_block_table and the
  // create args' n_groups and group_windows; 1.6 group_block_hashes.
  EXPECT_EQ(info.version(0).vtable_size, offsetof(loom_cache_vtable, fork));
  EXPECT_EQ(info.version(1).vtable_size, offsetof(loom_cache_vtable, trim));
  EXPECT_EQ(info.version(1).create_args_size, offsetof(loom_cache_create_args, bytes_per_block_extra));
  EXPECT_EQ(info.version(2).vtable_size, offsetof(loom_cache_vtable, trim));
  EXPECT_EQ(info.version(2).create_args_size, offsetof(loom_cache_create_args, n_groups));
  EXPECT_EQ(info.version(3).vtable_size, offsetof(loom_cache_vtable, take_evicted));
  EXPECT_EQ(info.version(4).vtable_size, offsetof(loom_cache_vtable, group_block_table));
  EXPECT_EQ(info.version(4).create_args_size, offsetof(loom_cache_create_args, n_groups));
  EXPECT_EQ(info.version(5).vtable_size, offsetof(loom_cache_vtable, group_block_hashes));
  EXPECT_EQ(info.version(5).create_args_size, sizeof(loom_cache_create_args));
  EXPECT_EQ(info.version(6).vtable_size, sizeof(loom_cache_vtable));
  EXPECT_EQ(info.version(6).create_args_size, sizeof(loom_cache_create_args));
  // Speculator 1.1 adds the host's draft models to the create args.
  EXPECT_EQ(kind_info(LOOM_KIND_SPECULATOR).version(0).create_args_size,
            offsetof(loom_speculator_create_args, draft_models));
  EXPECT_EQ(kind_info(LOOM_KIND_SPECULATOR).version(1).create_args_size, sizeof(loom_speculator_create_args));
  // Cache offload 1.0 ends at usage (create args at the copy ops); 1.1 adds save_entry and the
  // fingerprint and KV layout.
  const KindInfo& offload = kind_info(LOOM_KIND_CACHE_OFFLOAD);
  EXPECT_EQ(offload.version(0).vtable_size, offsetof(loom_cache_offload_vtable, save_entry));
  EXPECT_EQ(offload.version(0).create_args_size, offsetof(loom_cache_offload_create_args, model_fingerprint));
  EXPECT_EQ(offload.version(1).create_args_size, sizeof(loom_cache_offload_create_args));
  EXPECT_EQ(kind_info(LOOM_KIND_ATTENTION).version(0).vtable_size, offsetof(loom_attention_vtable, forward_rope_k));
  EXPECT_EQ(kind_info(LOOM_KIND_QUANTIZATION).version(1).vtable_size,
            offsetof(loom_quantization_vtable, linear_group));
  EXPECT_EQ(kind_info(LOOM_KIND_QUANTIZATION).version(4).vtable_size,
            offsetof(loom_quantization_vtable, linear_top_k));
  EXPECT_EQ(kind_info(LOOM_KIND_SEMANTIC_CACHE).version(0).create_args_size, 0u);
  EXPECT_EQ(kind_info(LOOM_KIND_SEMANTIC_CACHE).version(2).create_args_size, sizeof(loom_semantic_cache_create_args));
  EXPECT_THROW(kind_info(static_cast<loom_plugin_kind>(0)), Error);
}

// The table itself: a row per minor 0..host minor, oldest first; sizes never shrink from one
// minor to the next (structs only grow at the end), and the newest row is what the host has.
TEST(PluginKind, EveryKindHasARowPerMinorThatOnlyGrows) {
  for (const KindInfo& info : all_kinds()) {
    ASSERT_EQ(info.versions.size(), info.iface_minor + 1u) << info.name;
    for (uint32_t m = 0; m <= info.iface_minor; ++m) {
      EXPECT_EQ(info.version(m).minor, m) << info.name;
      EXPECT_GT(info.version(m).vtable_size, sizeof(uint32_t)) << info.name;
      if (m == 0) continue;
      EXPECT_GE(info.version(m).vtable_size, info.version(m - 1).vtable_size) << info.name << " 1." << m;
      EXPECT_GE(info.version(m).create_args_size, info.version(m - 1).create_args_size) << info.name << " 1." << m;
      // Scheduler 1.1 grew only structs the host owns and fills (loom_sched_context, _output);
      // 1.2 too (the context, and the request view the host fills to the plugin's struct_size).
      if (info.kind == LOOM_KIND_SCHEDULER && (m == 1 || m == 2)) continue;
      EXPECT_TRUE(info.version(m).vtable_size > info.version(m - 1).vtable_size ||
                  info.version(m).create_args_size > info.version(m - 1).create_args_size)
          << info.name << " 1." << m << " grows nothing";
    }
  }
  EXPECT_EQ(kind_info(LOOM_KIND_ATTENTION).versions.back().vtable_size, sizeof(loom_attention_vtable));
  EXPECT_EQ(kind_info(LOOM_KIND_QUANTIZATION).versions.back().vtable_size, sizeof(loom_quantization_vtable));
  EXPECT_EQ(kind_info(LOOM_KIND_SCHEDULER).versions.back().vtable_size, sizeof(loom_scheduler_vtable));
  EXPECT_EQ(kind_info(LOOM_KIND_CACHE).versions.back().vtable_size, sizeof(loom_cache_vtable));
  EXPECT_EQ(kind_info(LOOM_KIND_CACHE_OFFLOAD).versions.back().vtable_size, sizeof(loom_cache_offload_vtable));
  EXPECT_EQ(kind_info(LOOM_KIND_SEMANTIC_CACHE).versions.back().vtable_size, sizeof(loom_semantic_cache_vtable));
  EXPECT_EQ(kind_info(LOOM_KIND_SPECULATOR).versions.back().vtable_size, sizeof(loom_speculator_vtable));
}

// The growth rule, the same for every kind: any minor up to the host's loads with its own (smaller)
// vtable; a newer minor or another major is refused with both versions named; a vtable shorter
// than its minor's row is refused.
TEST(PluginKind, GrowthRuleIsTheSameForEveryKind) {
  for (const KindInfo& info : all_kinds()) {
    const std::string k(info.name);
    const std::string host = std::to_string(info.iface_major) + "." + std::to_string(info.iface_minor);
    for (uint32_t m = 0; m <= info.iface_minor; ++m) {
      EXPECT_EQ(version_refusal(info.kind, info.iface_major, m), std::nullopt) << k << " 1." << m;
      EXPECT_EQ(vtable_refusal(info.kind, m, info.version(m).vtable_size), std::nullopt) << k << " 1." << m;
      EXPECT_EQ(vtable_refusal(info.kind, m, info.version(m).vtable_size - 1),
                "vtable struct_size " + std::to_string(info.version(m).vtable_size - 1) + " is smaller than the " +
                    std::to_string(info.version(m).vtable_size) + " bytes of a " + k + " 1." + std::to_string(m) +
                    " vtable");
    }
    const uint32_t newer = info.iface_minor + 1;
    EXPECT_EQ(version_refusal(info.kind, info.iface_major, newer),
              k + " interface 1." + std::to_string(newer) + " is newer than the host's " + host + " (minor " +
                  std::to_string(newer) + " > " + std::to_string(info.iface_minor) + "); update the host");
    EXPECT_EQ(version_refusal(info.kind, info.iface_major + 1, 0),
              k + " interface 2.0 is incompatible with the host's " + host + " (major 2 != 1)");
  }
}

// A scratch directory with empty files standing in for plugins.
class LoaderDirs : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("loom_test_plugin_kind_" +
             std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "a");
    fs::create_directories(root_ / "b");
    touch(root_ / "a" / "libloom-cache-fake_paged.so");
    touch(root_ / "b" / "libloom-cache-fake_radix.so");
    touch(root_ / "b" / "libloom-cache-fake_paged.so");
    touch(root_ / "b" / "libloom-cache_offload-host.so");  // another kind: not a cache
    touch(root_ / "b" / "libloom-cache-.so");              // no name: ignored
    touch(root_ / "b" / "README.txt");
  }
  void TearDown() override { fs::remove_all(root_); }
  static void touch(const fs::path& p) { std::ofstream(p) << "not an ELF file"; }
  std::string dir(const char* sub) const { return (root_ / sub).string(); }

  fs::path root_;
};

// The names a listing must show: the fakes made here plus the in-tree plugins of that kind built
// next to the test executable (the loader always searches there too).
std::vector<std::string> with_built_plugins(const std::string& kind, std::vector<std::string> names) {
  const std::string prefix = "libloom-" + kind + "-";
  for (const auto& entry : fs::directory_iterator(executable_dir())) {
    const std::string file = entry.path().filename().string();
    if (file.rfind(prefix, 0) == 0 && file.size() > prefix.size() + 3 && file.ends_with(".so")) {
      names.push_back(file.substr(prefix.size(), file.size() - prefix.size() - 3));
    }
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

TEST_F(LoaderDirs, SearchOrderIsConfigDirsThenExecutableDir) {
  PluginLoader loader({dir("a"), dir("b"), dir("a")});
  const auto& dirs = loader.search_dirs();
  ASSERT_EQ(dirs.size(), 3u);  // the duplicate is dropped
  EXPECT_EQ(dirs[0], fs::path(dir("a")));
  EXPECT_EQ(dirs[1], fs::path(dir("b")));
  EXPECT_EQ(dirs[2], executable_dir());
  EXPECT_EQ(PluginLoader::file_name(LOOM_KIND_CACHE_OFFLOAD, "disk"),
            "libloom-cache_offload-disk.so");
}

TEST_F(LoaderDirs, AvailableNamesAndVariants) {
  PluginLoader loader({dir("a"), dir("b")});
  EXPECT_EQ(loader.available(LOOM_KIND_CACHE), with_built_plugins("cache", {"fake_paged", "fake_radix"}));
  EXPECT_EQ(loader.available(LOOM_KIND_CACHE_OFFLOAD), with_built_plugins("cache_offload", {"host"}));
  PluginSpec spec{LOOM_KIND_CACHE, "fake_paged", "", "{}"};
  const auto found = loader.locate(spec);
  ASSERT_EQ(found.size(), 2u);  // one per dir, in search order
  EXPECT_EQ(found[0], root_ / "a" / "libloom-cache-fake_paged.so");
  EXPECT_EQ(found[1], root_ / "b" / "libloom-cache-fake_paged.so");
}

TEST_F(LoaderDirs, MissingNameListsEveryPathAndTheAvailableNames) {
  PluginLoader loader({dir("a"), dir("b")});
  try {
    loader.locate(PluginSpec{LOOM_KIND_CACHE, "radixx", "", "{}"});
    FAIL() << "found";
  } catch (const Error& e) {
    const std::string exe = (executable_dir() / "libloom-cache-radixx.so").string();
    EXPECT_EQ(std::string(e.what()),
              "plugin cache 'radixx' (libloom-cache-radixx.so): not found; searched " + dir("a") +
                  "/libloom-cache-radixx.so, " + dir("b") + "/libloom-cache-radixx.so, " + exe +
                  "; available cache plugins: " + join(with_built_plugins("cache", {"fake_paged", "fake_radix"})));
    EXPECT_EQ(e.code(), LOOM_ERR_NOT_FOUND);
  }
}

TEST_F(LoaderDirs, NotAnElfFileIsRefusedWithTheLoadersReason) {
  PluginLoader loader({dir("a")});
  const auto file = root_ / "a" / "libloom-cache-fake_paged.so";
  try {
    loader.open(LOOM_KIND_CACHE, "paged", file);
    FAIL() << "loaded";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind("plugin cache 'paged' (" + file.string() + "): cannot load: ", 0), 0u) << m;
    // dlopen's own words, not a generic code
    EXPECT_TRUE(m.find("file too short") != std::string::npos ||
                m.find("invalid ELF header") != std::string::npos)
        << m;
  }
}

TEST_F(LoaderDirs, ExplicitPath) {
  PluginLoader loader({});
  const std::string file = dir("b") + "/libloom-cache-fake_radix.so";
  EXPECT_EQ(loader.locate(PluginSpec{LOOM_KIND_CACHE, "radix", file, "{}"}),
            (std::vector<fs::path>{file}));
  try {
    loader.locate(PluginSpec{LOOM_KIND_CACHE, "radix", file + ".missing", "{}"});
    FAIL() << "found";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "plugin cache 'radix' (" + file + ".missing): file not found");
  }
}

TEST(PluginRefusal, IsOneLine) {
  EXPECT_EQ(plugin_refusal(LOOM_KIND_ATTENTION, "naive", "/x/libloom-attention-naive.so",
                           "create failed: line one\nline two"),
            "plugin attention 'naive' (/x/libloom-attention-naive.so): create failed: line one "
            "line two");
}

}  // namespace
}  // namespace loom
