// The embedding model's own worker: one thread that takes embedding jobs from HTTP threads (and
// from the semantic cache), packs every job waiting into one encoder batch of at most
// max_batch_tokens tokens (a job is never split), runs it, and hands each job its vectors. The
// generation engine's step never waits on it, nor it on the engine.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/common/thread_pool.hpp"
#include "core/config/config.hpp"
#include "core/executor/sentence_encoder.hpp"

namespace loom {

struct EmbeddingResult {
  std::vector<float> vectors;  // [n_inputs, dim], row i for input i; empty on error
  std::string error;           // set when the encoder refused the batch
};

struct EmbeddingStats {
  int64_t requests = 0;  // jobs finished
  int64_t inputs = 0;    // sequences embedded
  int64_t tokens = 0;    // their tokens
  int64_t batches = 0;   // encoder calls (requests / batches = how much batching happened)
};

class EmbeddingWorker {
 public:
  // Loads the model (throws loom::Error naming the file at fault) and starts the thread.
  // threads: the encoder's thread pool size (>= 1).
  EmbeddingWorker(const std::string& dir, std::string served_name, int32_t max_batch_tokens, int32_t threads);
  ~EmbeddingWorker();  // finishes the jobs queued, then joins
  EmbeddingWorker(const EmbeddingWorker&) = delete;
  EmbeddingWorker& operator=(const EmbeddingWorker&) = delete;

  const std::string& name() const { return name_; }
  int32_t dim() const { return encoder_->dim(); }
  int32_t max_tokens() const { return encoder_->max_tokens(); }
  int32_t vocab_size() const { return encoder_->vocab_size(); }
  // [CLS] text [SEP]; thread-safe.
  std::vector<int32_t> tokenize(std::string_view text) const { return encoder_->tokenize(text); }

  // Queues one job; `done` runs on the worker thread (it must not block). Every sequence must be
  // non-empty and at most max_tokens() long (the caller checks, to answer 400).
  void submit(std::vector<std::vector<int32_t>> inputs, std::function<void(EmbeddingResult)> done);
  // submit() and wait.
  EmbeddingResult embed(std::vector<std::vector<int32_t>> inputs);
  EmbeddingStats stats() const;

 private:
  struct Job {
    std::vector<std::vector<int32_t>> inputs;
    std::function<void(EmbeddingResult)> done;
    int64_t tokens = 0;
  };
  void loop();

  std::string name_;
  int32_t max_batch_tokens_;
  ThreadPool threads_;
  std::unique_ptr<SentenceEncoder> encoder_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  bool stopping_ = false;
  EmbeddingStats stats_;  // guarded by mutex_
  std::thread thread_;
};

// The worker [embedding] describes: its path, its name (default: the directory's), its batch
// limit, and [runtime] threads for its pool.
std::unique_ptr<EmbeddingWorker> make_embedding_worker(const Config& config);

}  // namespace loom
