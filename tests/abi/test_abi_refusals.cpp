// The host refuses each deliberately broken plugin (tests/abi/plugins) with one readable line
// naming the kind, the name, the file and the reason -- and keeps working afterwards.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <memory>
#include <sstream>
#include <string>

#include "core/common/log_sinks.hpp"
#include "core/common/logging.hpp"
#include "core/common/thread_pool.hpp"
#include "core/plugin/plugin_host.hpp"
#include "scheduler_harness.hpp"

namespace loom {
namespace {

const std::string kDir = LOOM_ABI_PLUGIN_DIR;
const std::string kBinDir = LOOM_PLUGIN_BIN_DIR;

std::string file_of(const std::string& name, const std::string& dir = kDir) {
  return dir + "/libloom-scheduler-" + name + ".so";
}

PluginSpec spec_of(const std::string& name, const std::string& config = "{}") {
  PluginSpec spec;
  spec.kind = LOOM_KIND_SCHEDULER;
  spec.name = name;
  spec.config_json = config;
  return spec;
}

class AbiRefusals : public ::testing::Test {
 protected:
  std::unique_ptr<LoadedPlugin> create(const PluginSpec& spec) {
    const loom_scheduler_create_args args{sizeof(args), 64};
    return host_.create(spec, &args);
  }

  // The refusal line for spec; fails the test if it loads.
  std::string refusal(const PluginSpec& spec) {
    try {
      create(spec);
    } catch (const Error& e) {
      const std::string line = e.what();
      EXPECT_EQ(line.find('\n'), std::string::npos) << "not one line: " << line;
      return line;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "refused with a " << typeid(e).name()
                    << " instead of loom::Error: " << e.what();
      return e.what();
    }
    ADD_FAILURE() << "plugin '" << spec.name << "' was not refused";
    return "";
  }

  // "plugin scheduler '<name>' (<file>): " starts every refusal.
  static std::string head(const std::string& name) {
    return "plugin scheduler '" + name + "' (" + file_of(name) + "): ";
  }

  ThreadPool pool_{2};
  PluginHost host_{pool_, {kDir}};
};

#define EXPECT_CONTAINS(text, part) \
  EXPECT_NE(std::string(text).find(part), std::string::npos) << "in: " << (text)

TEST_F(AbiRefusals, WrongAbiVersionShowsBothNumbers) {
  const auto m = refusal(spec_of("bad_abi"));
  EXPECT_EQ(m, head("bad_abi") + "ABI version 99 does not match the host's ABI version " +
                   std::to_string(LOOM_ABI_VERSION) + "; rebuild the plugin against this SDK");
}

TEST_F(AbiRefusals, ShortDescriptor) {
  const auto m = refusal(spec_of("short_desc"));
  EXPECT_CONTAINS(m, head("short_desc"));
  EXPECT_CONTAINS(m, "descriptor struct_size 16 is smaller than the " +
                         std::to_string(LOOM_PLUGIN_DESC_MIN_SIZE) + " bytes the host reads");
}

TEST_F(AbiRefusals, CreateThatThrowsCarriesTheExceptionText) {
  EXPECT_EQ(refusal(spec_of("throws")),
            head("throws") + "create failed (internal error): flux capacitor exploded at 88 mph");
}

TEST_F(AbiRefusals, ConfigErrorFromConstructor) {
  EXPECT_EQ(refusal(spec_of("good", R"({"speed":88})")),
            head("good") + "create failed (config error): test scheduler takes no keys, got " +
                R"({"speed":88})");
}

TEST_F(AbiRefusals, ScoreZeroGivesThePluginsReason) {
  EXPECT_EQ(
      refusal(spec_of("refuses")),
      head("refuses") + "refused to run on this machine: needs a quantum accelerator, found none");
}

TEST_F(AbiRefusals, InterfaceMajorMismatchShowsBothVersions) {
  EXPECT_EQ(refusal(spec_of("major_newer")),
            head("major_newer") +
                "scheduler interface 2.2 is incompatible with the host's 1.2 "
                "(major 2 != 1)");
}

TEST_F(AbiRefusals, InterfaceMinorNewerShowsBothVersions) {
  EXPECT_EQ(refusal(spec_of("minor_newer")),
            head("minor_newer") +
                "scheduler interface 1.9 is newer than the host's 1.2 "
                "(minor 9 > 2); update the host");
}

TEST_F(AbiRefusals, KindMismatch) {
  EXPECT_EQ(refusal(spec_of("is_cache")),
            head("is_cache") + "the file holds a cache plugin, not a scheduler plugin");
}

TEST_F(AbiRefusals, NameMismatch) {
  EXPECT_EQ(refusal(spec_of("wrong_name")),
            head("wrong_name") + "the descriptor's name is 'someone_else', not 'wrong_name'");
}

TEST_F(AbiRefusals, ShortVtable) {
  EXPECT_EQ(refusal(spec_of("short_vtable")), head("short_vtable") +
                                                  "vtable struct_size 8 is smaller than the " +
                                                  std::to_string(sizeof(loom_scheduler_vtable)) +
                                                  " bytes of a scheduler 1." + std::to_string(LOOM_SCHEDULER_IFACE_MINOR) + " vtable");
}

TEST_F(AbiRefusals, NullDescriptor) {
  EXPECT_EQ(refusal(spec_of("null_desc")),
            head("null_desc") + "entry function returned no descriptor (NULL)");
}

TEST_F(AbiRefusals, NoEntrySymbol) {
  EXPECT_CONTAINS(refusal(spec_of("no_entry")),
                  head("no_entry") + "no entry symbol 'loom_plugin_entry_v1'");
}

TEST_F(AbiRefusals, UnresolvedSymbolFailsAtLoad) {
  const auto m = refusal(spec_of("undefined"));
  EXPECT_CONTAINS(m, head("undefined") + "cannot load: ");
  EXPECT_CONTAINS(m, "loom_test_symbol_nobody_defines");
}

TEST_F(AbiRefusals, UnknownNameListsEveryPathSearchedAndTheNamesAvailable) {
  const auto m = refusal(spec_of("nope"));
  EXPECT_CONTAINS(m, "plugin scheduler 'nope' (libloom-scheduler-nope.so): not found; searched " +
                         file_of("nope") + ", " + file_of("nope", kBinDir) + "; ");
  EXPECT_CONTAINS(m, "available scheduler plugins: bad_abi, ");
  EXPECT_CONTAINS(m, ", good, ");
  EXPECT_CONTAINS(m, ", priority, ");
}

TEST_F(AbiRefusals, ExplicitPathThatDoesNotExist) {
  PluginSpec spec = spec_of("good");
  spec.path = kDir + "/missing/libloom-scheduler-good.so";
  EXPECT_EQ(refusal(spec), "plugin scheduler 'good' (" + spec.path + "): file not found");
}

TEST_F(AbiRefusals, NameThatIsNotOnePathComponent) {
  EXPECT_CONTAINS(refusal(spec_of("../abi-plugins/good")), "invalid plugin name");
}

TEST_F(AbiRefusals, HostKeepsWorkingAfterRefusals) {
  for (const char* bad : {"bad_abi", "throws", "refuses", "short_vtable", "undefined", "nope"}) {
    refusal(spec_of(bad));
  }
  // Plugins log through the host's logger, prefixed with kind and name.
  std::ostringstream log;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log);
  add_log_sink(sink);
  auto good = create(spec_of("good"));
  remove_log_sink(sink);
  EXPECT_CONTAINS(log.str(), "[scheduler/good] test scheduler 'good' created");

  ASSERT_NE(good, nullptr);
  EXPECT_EQ(good->name(), "good");
  EXPECT_EQ(good->version(), "1.2.3");
  EXPECT_EQ(good->kind(), LOOM_KIND_SCHEDULER);
  EXPECT_EQ(good->file(), file_of("good"));
  EXPECT_THROW(good->vtable<loom_cache_vtable>(), Error);
  test::FakeCache cache(8, 4);
  test::SchedulerHarness h(*good, cache);
  h.add(1, 5, 2, 0, 1);
  h.add(2, 3, 2, 0, 2);
  EXPECT_EQ(h.step().scheduled, (std::vector<std::pair<uint64_t, int32_t>>{{1, 5}, {2, 3}}));
}

TEST_F(AbiRefusals, HighestScoringVariantWinsAndZeroIsSkipped) {
  ThreadPool pool(1);
  const loom_scheduler_create_args args{sizeof(args), 64};
  {
    PluginHost host(pool, {kDir + "/variant_a", kDir + "/variant_b", kDir + "/variant_c"});
    auto p = host.create(spec_of("variant"), &args);
    EXPECT_STREQ(p->desc().description, "variant high");
    EXPECT_EQ(p->file(), kDir + "/variant_c/libloom-scheduler-variant.so");
  }
  {
    PluginHost host(pool, {kDir + "/variant_a", kDir + "/variant_b"});
    EXPECT_STREQ(host.create(spec_of("variant"), &args)->desc().description, "variant low");
  }
  PluginHost host(pool, {kDir + "/variant_a"});
  try {
    host.create(spec_of("variant"), &args);
    ADD_FAILURE() << "a refusing variant was loaded";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "plugin scheduler 'variant' (" + kDir +
                  "/variant_a/libloom-scheduler-variant.so): refused to run on this machine: "
                  "needs a quantum accelerator, found none");
  }
}

// dlopen(RTLD_NOLOAD) succeeds only while the object is mapped.
bool is_mapped(const std::string& file) {
  void* h = dlopen(file.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (h != nullptr) dlclose(h);
  return h != nullptr;
}

TEST_F(AbiRefusals, LibraryStaysLoadedUntilTheLastInstanceIsDestroyed) {
  const std::string file = file_of("good");
  auto a = create(spec_of("good"));
  auto b = create(spec_of("good"));
  EXPECT_TRUE(is_mapped(file));
  a.reset();
  EXPECT_TRUE(is_mapped(file));
  loom_sched_stats st{};
  b->call("stats", &loom_scheduler_vtable::stats, &st);  // still callable
  EXPECT_EQ(st.num_waiting, 0);
  b.reset();
  EXPECT_FALSE(is_mapped(file));
}

TEST_F(AbiRefusals, ListingShowsVersionsAndProblems) {
  const auto infos = host_.list(LOOM_KIND_SCHEDULER);
  bool saw_good = false, saw_bad = false, saw_priority = false;
  for (const auto& info : infos) {
    if (info.name == "good" && info.file == file_of("good")) {
      saw_good = true;
      EXPECT_EQ(info.version, "1.2.3");
      EXPECT_EQ(info.description, "ABI test plugin");
      EXPECT_EQ(info.problem, "");
    }
    if (info.name == "bad_abi") {
      saw_bad = true;
      EXPECT_CONTAINS(info.problem, "ABI version 99");
    }
    if (info.name == "priority") {
      saw_priority = true;
      EXPECT_EQ(info.version, "0.1.0");
      EXPECT_EQ(info.file, file_of("priority", kBinDir));
    }
  }
  EXPECT_TRUE(saw_good && saw_bad && saw_priority);
}

}  // namespace
}  // namespace loom
