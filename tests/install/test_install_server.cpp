// The INSTALLED loom-server (<prefix>/bin, from `cmake --install`) serving the demo model with
// the SDK example scheduler, which was built against the installed prefix only and is named
// through [plugins] dirs; every other plugin comes from <prefix>/lib/loom/plugins.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "e2e/server_process.hpp"
#include "unit/http_test_client.hpp"

namespace {

namespace fs = std::filesystem;

TEST(InstalledServer, LoadsThePluginBuiltAgainstThePrefixAndServes) {
  const fs::path prefix = LOOM_INSTALL_PREFIX;
  const fs::path example = LOOM_INSTALLED_EXAMPLE_DIR;
  ASSERT_TRUE(fs::exists(example / "libloom-scheduler-priority.so"));
  const fs::path config = fs::temp_directory_path() / ("loom-install-" + std::to_string(getpid()) + ".toml");
  std::ofstream(config) << "[model]\npath = \"" << LOOM_TEST_DATA << "/stories260K.gguf\"\nname = \"demo\"\n"
                        << "[server]\nport = 0\n[runtime]\nthreads = 2\n[logging]\nlevel = \"info\"\n"
                        << "[plugins]\ndirs = [\"" << example.string() << "\"]\n"
                        << "[scheduler]\nplugin = \"priority\"\nmax_num_seqs = 4\n"
                        << "[cache]\nplugin = \"paged\"\nkv_memory = \"8MiB\"\n";
  loom::test::ServerProcess server((prefix / "bin" / "loom-server").string(), {"--config", config.string()});
  const int port = server.port();
  ASSERT_NE(port, 0) << server.output();

  const std::string& log = server.output();  // everything up to the "serving" line
  EXPECT_NE(log.find("plugin scheduler 'priority' 0.1.0 loaded from " +
                     (example / "libloom-scheduler-priority.so").string()),
            std::string::npos)
      << log;
  const std::string installed = (prefix / "lib" / "loom" / "plugins").lexically_normal().string();
  EXPECT_NE(log.find("plugin cache 'paged' 0.1.0 loaded from " + installed + "/libloom-cache-paged.so"),
            std::string::npos)
      << log;

  loom::test::HttpTestClient client(static_cast<uint16_t>(port));
  const auto health = client.get("/health");
  EXPECT_EQ(health.status, 200u) << health.body;
  const nlohmann::json body = {{"model", "demo"}, {"prompt", "Once upon a time"}, {"max_tokens", 8},
                               {"temperature", 0}};
  const auto r = client.post("/v1/completions", body.dump());
  ASSERT_EQ(r.status, 200u) << r.body;
  const auto j = nlohmann::json::parse(r.body);
  EXPECT_FALSE(j["choices"][0]["text"].get<std::string>().empty()) << r.body;
  EXPECT_GT(j["usage"]["completion_tokens"].get<int>(), 0) << r.body;
  EXPECT_LE(j["usage"]["completion_tokens"].get<int>(), 8) << r.body;

  EXPECT_EQ(server.stop(), 0);
  fs::remove(config);
}

}  // namespace
