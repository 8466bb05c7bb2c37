#include "core/engine/embedding_worker.hpp"

#include <future>

#include "core/common/error.hpp"
#include "core/common/logging.hpp"

namespace loom {

EmbeddingWorker::EmbeddingWorker(const std::string& dir, std::string served_name, int32_t max_batch_tokens,
                                 int32_t threads)
    : name_(std::move(served_name)),
      max_batch_tokens_(max_batch_tokens),
      threads_(std::max(1, threads)),
      encoder_(SentenceEncoder::open(dir, threads_)) {
  LOOM_LOG_INFO("embedding model '{}': {} dims, {} tokens at most, {}", name_, encoder_->dim(), encoder_->max_tokens(),
                encoder_->normalized() ? "normalised" : "not normalised");
  thread_ = std::thread([this] { loop(); });
}

EmbeddingWorker::~EmbeddingWorker() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void EmbeddingWorker::submit(std::vector<std::vector<int32_t>> inputs, std::function<void(EmbeddingResult)> done) {
  Job job{std::move(inputs), std::move(done), 0};
  for (const auto& seq : job.inputs) job.tokens += static_cast<int64_t>(seq.size());
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(job));
  }
  cv_.notify_one();
}

EmbeddingResult EmbeddingWorker::embed(std::vector<std::vector<int32_t>> inputs) {
  auto promise = std::make_shared<std::promise<EmbeddingResult>>();
  std::future<EmbeddingResult> result = promise->get_future();
  submit(std::move(inputs), [promise](EmbeddingResult r) { promise->set_value(std::move(r)); });
  return result.get();
}

EmbeddingStats EmbeddingWorker::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

std::unique_ptr<EmbeddingWorker> make_embedding_worker(const Config& config) {
  const EmbeddingConfig& e = config.embedding;
  const std::string name = e.name.empty() ? model_name_from_path(e.path) : e.name;
  const int32_t threads = config.runtime.threads > 0 ? config.runtime.threads
                                                     : static_cast<int32_t>(std::thread::hardware_concurrency());
  return std::make_unique<EmbeddingWorker>(e.path, name, e.max_batch_tokens, threads);
}

void EmbeddingWorker::loop() {
  for (;;) {
    std::vector<Job> batch;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing left to answer
      int64_t tokens = 0;
      // Whole jobs in arrival order while they fit; the first one always runs.
      while (!queue_.empty() && (batch.empty() || tokens + queue_.front().tokens <= max_batch_tokens_)) {
        tokens += queue_.front().tokens;
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    std::vector<std::vector<int32_t>> seqs;
    for (Job& job : batch)
      for (auto& seq : job.inputs) seqs.push_back(std::move(seq));
    EmbeddingResult all;
    try {
      all.vectors = encoder_->embed(seqs);
    } catch (const std::exception& e) {
      all.error = e.what();
    }
    const size_t dim = static_cast<size_t>(encoder_->dim());
    size_t row = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stats_.batches += 1;
      stats_.requests += static_cast<int64_t>(batch.size());
      stats_.inputs += static_cast<int64_t>(seqs.size());
      for (const auto& s : seqs) stats_.tokens += static_cast<int64_t>(s.size());
    }
    for (Job& job : batch) {
      EmbeddingResult mine;
      mine.error = all.error;
      if (all.error.empty())
        mine.vectors.assign(all.vectors.begin() + static_cast<std::ptrdiff_t>(row * dim),
                            all.vectors.begin() + static_cast<std::ptrdiff_t>((row + job.inputs.size()) * dim));
      row += job.inputs.size();
      job.done(std::move(mine));
    }
  }
}

}  // namespace loom
