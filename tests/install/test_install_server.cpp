// The INSTALLED loom-server (<prefix>/bin, from `cmake --install`) serving the demo model with
// the SDK example scheduler, which was built against the installed prefix only and is named
// through [plugins] dirs; every other plugin comes from <prefix>/lib/loom/plugins.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "unit/http_test_client.hpp"

namespace {

namespace fs = std::filesystem;

// A child process whose stderr is collected by a reader thread (so a full pipe never blocks it).
class ServerProcess {
 public:
  ServerProcess(const std::string& exe, const std::string& config) {
    int fds[2];
    if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fds[1], STDERR_FILENO);
      dup2(fds[1], STDOUT_FILENO);
      close(fds[0]);
      close(fds[1]);
      execl(exe.c_str(), exe.c_str(), "--config", config.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(fds[1]);
    reader_ = std::thread([this, fd = fds[0]] {
      char buf[4096];
      ssize_t n;
      while ((n = read(fd, buf, sizeof(buf))) > 0) {
        std::lock_guard<std::mutex> lock(mu_);
        log_.append(buf, static_cast<size_t>(n));
      }
      close(fd);
    });
  }
  ~ServerProcess() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (reader_.joinable()) reader_.join();
  }

  std::string log() {
    std::lock_guard<std::mutex> lock(mu_);
    return log_;
  }

  // The port from "serving '<model>' on http://<host>:<port>", or 0 after timeout or exit.
  uint16_t wait_for_port(std::chrono::seconds timeout) {
    const std::regex serving("serving '[^']*' on http://[^:]+:([0-9]+)");
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      std::smatch m;
      const std::string text = log();
      if (std::regex_search(text, m, serving)) return static_cast<uint16_t>(std::stoi(m[1].str()));
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        return 0;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return 0;
  }

  // SIGTERM (a drain), then the exit status.
  int stop() {
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
    exited_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

 private:
  pid_t pid_ = -1;
  bool exited_ = false;
  std::thread reader_;
  std::mutex mu_;
  std::string log_;
};

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
  ServerProcess server((prefix / "bin" / "loom-server").string(), config.string());
  const uint16_t port = server.wait_for_port(std::chrono::seconds(60));
  ASSERT_NE(port, 0) << server.log();

  const std::string log = server.log();
  EXPECT_NE(log.find("plugin scheduler 'priority' 0.1.0 loaded from " +
                     (example / "libloom-scheduler-priority.so").string()),
            std::string::npos)
      << log;
  const std::string installed = (prefix / "lib" / "loom" / "plugins").lexically_normal().string();
  EXPECT_NE(log.find("plugin cache 'paged' 0.1.0 loaded from " + installed + "/libloom-cache-paged.so"),
            std::string::npos)
      << log;

  loom::test::HttpTestClient client(port);
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

  EXPECT_EQ(server.stop(), 0) << server.log();
  fs::remove(config);
}

}  // namespace
