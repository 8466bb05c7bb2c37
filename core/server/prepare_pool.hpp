// The threads that prepare requests (parse, template, tokenize) off the HTTP I/O threads, so that
// a client sending megabytes of prompt cannot stall /health or other connections ([server]
// prepare_threads). A job's result is handed back to its connection's strand by the caller.
#pragma once

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <cstdint>
#include <functional>

namespace loom {

class PreparePool {
 public:
  explicit PreparePool(int32_t threads) : pool_(static_cast<size_t>(threads > 0 ? threads : 1)) {}
  ~PreparePool() { pool_.join(); }  // lets queued jobs run: they only post to strands
  PreparePool(const PreparePool&) = delete;
  PreparePool& operator=(const PreparePool&) = delete;

  void post(std::function<void()> job) { boost::asio::post(pool_, std::move(job)); }

 private:
  boost::asio::thread_pool pool_;
};

}  // namespace loom
