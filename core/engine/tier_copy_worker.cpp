#include "core/engine/tier_copy_worker.hpp"

#include <string>

#include "core/common/logging.hpp"

namespace loom {

TierCopyWorker::TierCopyWorker(std::vector<OffloadTier*> tiers, KvStaging& staging)
    : tiers_(std::move(tiers)), staging_(&staging), thread_([this] { run(); }) {}

TierCopyWorker::~TierCopyWorker() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
  for (const FetchResult& r : done_)
    for (int32_t slot : r.slots) staging_->release(slot);
}

void TierCopyWorker::spill(const loom_offload_entry& entry, int32_t slot) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    spills_.push_back(Spill{entry, slot});
  }
  wake_.notify_one();
}

void TierCopyWorker::fetch(uint64_t request_id, int32_t first_block, std::vector<uint64_t> keys) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    fetches_.push_back(Fetch{request_id, first_block, std::move(keys)});
  }
  wake_.notify_one();
}

std::vector<FetchResult> TierCopyWorker::take_done() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<FetchResult> out;
  out.swap(done_);
  return out;
}

void TierCopyWorker::cancel(uint64_t request_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::erase_if(fetches_, [&](const Fetch& f) { return f.request_id == request_id; });
  std::erase_if(done_, [&](const FetchResult& r) {
    if (r.request_id != request_id) return false;
    for (int32_t slot : r.slots) staging_->release(slot);
    return true;
  });
  if (running_fetch_ == request_id) cancelled_.insert(request_id);
  if (spills_.empty() && fetches_.empty() && running_ == 0) idle_.notify_all();
}

void TierCopyWorker::wait_idle() {
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait(lock, [&] { return spills_.empty() && fetches_.empty() && running_ == 0; });
}

int32_t TierCopyWorker::pending() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int32_t>(spills_.size() + fetches_.size()) + running_;
}

void TierCopyWorker::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || !spills_.empty() || !fetches_.empty(); });
    if (!fetches_.empty() && !stopping_) {
      Fetch job = std::move(fetches_.front());
      fetches_.pop_front();
      ++running_;
      running_fetch_ = job.request_id;
      lock.unlock();
      FetchResult result = do_fetch(job);
      lock.lock();
      running_fetch_ = 0;
      if (cancelled_.erase(result.request_id) != 0) {
        for (int32_t slot : result.slots) staging_->release(slot);
      } else {
        done_.push_back(std::move(result));
      }
      --running_;
    } else if (!spills_.empty()) {
      const Spill job = spills_.front();
      spills_.pop_front();
      ++running_;
      lock.unlock();
      do_spill(job);
      lock.lock();
      --running_;
    } else if (stopping_) {
      fetches_.clear();  // nobody waits for them any more
      idle_.notify_all();
      return;
    }
    if (spills_.empty() && fetches_.empty() && running_ == 0) idle_.notify_all();
  }
}

void TierCopyWorker::do_spill(const Spill& job) {
  for (OffloadTier* tier : tiers_) {
    if (tier->contains(job.entry.key)) continue;
    std::string message;
    const loom_status status = tier->save(job.entry, staging_->block_id(job.slot), &message);
    // A full or failing tier loses this block, nothing more: it is recomputed when needed.
    if (status != LOOM_OK && status != LOOM_ERR_OUT_OF_MEMORY)
      LOOM_LOG_WARN("cache_offload '{}': spill of block {:016x} failed: {}", tier->name(), job.entry.key, message);
  }
  staging_->release(job.slot);
}

FetchResult TierCopyWorker::do_fetch(const Fetch& job) {
  FetchResult result;
  result.request_id = job.request_id;
  result.first_block = job.first_block;
  for (uint64_t key : job.keys) {
    const std::optional<int32_t> slot = staging_->acquire();
    if (!slot) {
      result.out_of_staging = true;
      break;
    }
    size_t hit = tiers_.size();
    for (size_t t = 0; t < tiers_.size() && hit == tiers_.size(); ++t) {
      std::string message;
      const loom_status status = tiers_[t]->load(key, staging_->block_id(*slot), &message);
      if (status == LOOM_OK) {
        hit = t;
      } else if (status != LOOM_ERR_NOT_FOUND) {
        ++result.load_failures;
        LOOM_LOG_WARN("cache_offload '{}': restore of block {:016x} failed: {}", tiers_[t]->name(), key, message);
      }
    }
    if (hit == tiers_.size()) {
      staging_->release(*slot);
      break;
    }
    // Found below the top: the faster tiers above get it too, for the next request.
    loom_offload_entry entry{};
    entry.struct_size = sizeof(entry);
    entry.key = key;
    for (size_t t = 0; t < hit; ++t) {
      std::string message;
      (void)tiers_[t]->save(entry, staging_->block_id(*slot), &message);
    }
    result.slots.push_back(*slot);
  }
  return result;
}

}  // namespace loom
