// loom-server (or any program) as a child process, for the tests that run the real binaries:
// ServerProcess starts one and waits for its "serving ... on http://host:port" line; run_command
// runs a shell command to its end and returns its exit status and output.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

namespace loom::test {

class ServerProcess {
 public:
  // Runs `exe args...` in `dir` (empty: this process's directory) with stdout and stderr piped.
  ServerProcess(const std::string& exe, const std::vector<std::string>& args, const std::string& dir = "") {
    int fds[2];
    if (pipe(fds) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fds[1], STDERR_FILENO);
      dup2(fds[1], STDOUT_FILENO);
      close(fds[0]);
      close(fds[1]);
      if (!dir.empty() && chdir(dir.c_str()) != 0) _exit(126);
      std::vector<std::string> argv_text = {exe};
      argv_text.insert(argv_text.end(), args.begin(), args.end());
      std::vector<char*> argv;
      for (std::string& a : argv_text) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(exe.c_str(), argv.data());
      _exit(127);
    }
    close(fds[1]);
    log_ = fdopen(fds[0], "r");
    char line[4096];
    while (std::fgets(line, sizeof line, log_) != nullptr) {
      output_ += line;
      const std::string text(line);
      if (text.find(" on http://") != std::string::npos) {
        port_ = std::stoi(text.substr(text.rfind(':') + 1));
        break;
      }
    }
    // Keep reading so that the server never blocks on a full pipe.
    drain_ = std::thread([this] {
      char buf[4096];
      while (std::fgets(buf, sizeof buf, log_) != nullptr) {
      }
    });
  }
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;
  ~ServerProcess() {
    stop();
    if (drain_.joinable()) drain_.join();
    if (log_ != nullptr) std::fclose(log_);
  }
  // SIGTERM (a drain), then the exit status: -1 when killed by a signal or already stopped.
  int stop() {
    if (pid_ <= 0) return -1;
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  int port() const { return port_; }  // 0 when it never said where it serves
  const std::string& output() const { return output_; }  // up to the "serving" line

 private:
  pid_t pid_ = -1;
  FILE* log_ = nullptr;
  int port_ = 0;
  std::string output_;
  std::thread drain_;
};

struct RunResult {
  int status = -1;     // exit status; -1 when killed by a signal
  std::string output;  // what the command wrote (redirect stderr into it with 2>&1)
};

inline RunResult run_command(const std::string& command) {
  RunResult result;
  FILE* pipe = popen(command.c_str(), "r");
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) result.output.append(buf.data(), n);
  const int raw = pclose(pipe);
  result.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return result;
}

}  // namespace loom::test
