#include "core/engine/kv_staging.hpp"

#include <cstring>
#include <string>

#include "core/common/error.hpp"
#include "core/engine/kv_block_copy.hpp"

namespace loom {

KvStaging::KvStaging(KvPool& pool, int32_t max_slots)
    : pool_ops_(make_kv_copy_ops(pool)), num_pool_blocks_(pool.shape().num_blocks), max_slots_(max_slots) {
  LOOM_CHECK(max_slots_ >= 1, "KvStaging: max_slots must be at least 1");
  ops_ = pool_ops_;
  ops_.host_ctx = this;
  ops_.read_block = &KvStaging::read_block;
  ops_.write_block = &KvStaging::write_block;
}

std::optional<int32_t> KvStaging::acquire() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!free_.empty()) {
    const int32_t slot = free_.back();
    free_.pop_back();
    ++in_use_;
    return slot;
  }
  if (static_cast<int32_t>(slots_.size()) >= max_slots_) return std::nullopt;
  // Uninitialised on purpose: whoever acquires a slot fills it whole before it is read.
  slots_.push_back(std::make_unique_for_overwrite<std::byte[]>(static_cast<size_t>(ops_.bytes_per_block)));
  ++in_use_;
  return static_cast<int32_t>(slots_.size()) - 1;
}

void KvStaging::release(int32_t slot) {
  std::lock_guard<std::mutex> lock(mutex_);
  LOOM_CHECK(slot >= 0 && slot < static_cast<int32_t>(slots_.size()) && in_use_ > 0,
             "staging: release of slot " + std::to_string(slot) + ", which is not in use");
  free_.push_back(slot);
  --in_use_;
}

int32_t KvStaging::slots_in_use() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return in_use_;
}

std::byte* KvStaging::slot_bytes(int32_t slot) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return slot >= 0 && slot < static_cast<int32_t>(slots_.size()) ? slots_[static_cast<size_t>(slot)].get() : nullptr;
}

void KvStaging::stage_from_pool(int32_t pool_block, int32_t slot) {
  LOOM_CHECK(slot_bytes(slot) != nullptr, "staging: slot " + std::to_string(slot) + " is not allocated");
  ErrorBuffer err;
  loom_error_buf buf = err.buf();
  const loom_status s = pool_ops_.read_block(pool_ops_.host_ctx, pool_block, slot_bytes(slot), &buf);
  if (s != LOOM_OK) throw Error("staging: read of pool block " + std::to_string(pool_block) + ": " + err.str(), s);
}

void KvStaging::unstage_to_pool(int32_t slot, int32_t pool_block) {
  LOOM_CHECK(slot_bytes(slot) != nullptr, "staging: slot " + std::to_string(slot) + " is not allocated");
  ErrorBuffer err;
  loom_error_buf buf = err.buf();
  const loom_status s = pool_ops_.write_block(pool_ops_.host_ctx, pool_block, slot_bytes(slot), &buf);
  if (s != LOOM_OK) throw Error("staging: write of pool block " + std::to_string(pool_block) + ": " + err.str(), s);
}

loom_status KvStaging::read_block(void* ctx, int32_t block_id, void* dst, loom_error_buf* err) {
  const auto* self = static_cast<const KvStaging*>(ctx);
  if (block_id < self->num_pool_blocks_) return self->pool_ops_.read_block(self->pool_ops_.host_ctx, block_id, dst, err);
  const std::byte* src = self->slot_bytes(block_id - self->num_pool_blocks_);
  if (src == nullptr) return LOOM_ERR_INVALID_ARGUMENT;
  std::memcpy(dst, src, static_cast<size_t>(self->ops_.bytes_per_block));
  return LOOM_OK;
}

loom_status KvStaging::write_block(void* ctx, int32_t block_id, const void* src, loom_error_buf* err) {
  const auto* self = static_cast<const KvStaging*>(ctx);
  if (block_id < self->num_pool_blocks_) return self->pool_ops_.write_block(self->pool_ops_.host_ctx, block_id, src, err);
  std::byte* dst = self->slot_bytes(block_id - self->num_pool_blocks_);
  if (dst == nullptr) return LOOM_ERR_INVALID_ARGUMENT;
  std::memcpy(dst, src, static_cast<size_t>(self->ops_.bytes_per_block));
  return LOOM_OK;
}

}  // namespace loom
