// SIGINT/SIGTERM for loom-server, from the first line of main(): both are blocked in every thread
// (so a thread started later cannot take them) and one thread waits for them. A signal while
// starting up is logged and ends the process at once (there is nothing to drain yet); once
// serving, the first asks for a graceful stop (wait() returns) and a second ends it at once.
#pragma once

#include <condition_variable>
#include <mutex>
#include <thread>

namespace loom {

class SignalWatch {
 public:
  SignalWatch();  // call before any other thread starts
  ~SignalWatch();
  SignalWatch(const SignalWatch&) = delete;
  SignalWatch& operator=(const SignalWatch&) = delete;

  void serving();  // start-up is over: the next signal asks for a graceful stop
  int wait();      // blocks until that signal; returns its number

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable cv_;
  bool serving_ = false;
  int signal_ = 0;
  std::thread thread_;
};

}  // namespace loom
