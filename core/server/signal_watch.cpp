#include "core/server/signal_watch.hpp"

#include <pthread.h>

#include <csignal>
#include <cstdlib>

#include "core/common/logging.hpp"

namespace loom {
namespace {

sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

}  // namespace

SignalWatch::SignalWatch() {
  const sigset_t set = stop_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  thread_ = std::thread([this] { run(); });
}

SignalWatch::~SignalWatch() {
  // The watcher sits in sigwait: wake it with a signal of its own set, now that nobody waits.
  {
    std::lock_guard lock(mutex_);
    signal_ = -1;
  }
  pthread_kill(thread_.native_handle(), SIGTERM);
  thread_.join();
}

void SignalWatch::serving() {
  std::lock_guard lock(mutex_);
  serving_ = true;
}

int SignalWatch::wait() {
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [&] { return signal_ != 0; });
  return signal_;
}

void SignalWatch::run() {
  const sigset_t set = stop_signals();
  for (;;) {
    int sig = 0;
    if (sigwait(&set, &sig) != 0) continue;
    std::unique_lock lock(mutex_);
    if (signal_ == -1) return;  // the destructor's wake-up
    if (!serving_) {
      LOOM_LOG_WARN("signal {} during start-up: exiting before serving", sig);
      logger().flush();
      std::_Exit(128 + sig);
    }
    if (signal_ != 0) {
      LOOM_LOG_WARN("signal {} again while draining: exiting now", sig);
      logger().flush();
      std::_Exit(128 + sig);
    }
    LOOM_LOG_INFO("signal {}: draining, then shutting down", sig);
    signal_ = sig;
    cv_.notify_all();
  }
}

}  // namespace loom
