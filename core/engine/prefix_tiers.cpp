#include "core/engine/prefix_tiers.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "core/common/logging.hpp"

namespace loom {
namespace {

// Tier keys of prefix blocks: the cache's chain hash with the top bit clear (swap keys set it).
constexpr uint64_t kPrefixKeyMask = ~(uint64_t{1} << 63);

}  // namespace

PrefixTiers::PrefixTiers(const CacheHandle& cache, KvStaging& staging, std::vector<const LoadedPlugin*> tiers,
                         int32_t block_size)
    : cache_(&cache),
      block_size_(block_size),
      num_groups_(cache.num_groups()),
      restores_(cache.gives_group_hashes()),
      staging_(&staging),
      hashes_(static_cast<size_t>(cache.num_groups())) {
  if (!restores_)
    LOOM_LOG_WARN("cache_offload: cache '{}' has {} block-table groups but no group_block_hashes (cache interface "
                  "1.6), so the tiers cannot find its other groups' blocks: evicted prefix blocks are spilled, "
                  "never restored",
                  cache.name(), num_groups_);
  std::vector<OffloadTier*> raw;
  for (const LoadedPlugin* t : tiers) {
    tiers_.push_back(std::make_unique<OffloadTier>(*t, staging.bytes_per_block()));
    raw.push_back(tiers_.back().get());
  }
  worker_ = std::make_unique<TierCopyWorker>(std::move(raw), staging);
}

PrefixTiers::~PrefixTiers() {
  try {
    // What the pool still caches goes down too, in rounds as large as the staging allows.
    spill_evicted();
    for (;;) {
      worker_->wait_idle();
      const int32_t room = std::max(1, static_cast<int32_t>(cache_->layout().num_blocks));
      if (cache_->evict_cached(room) == 0) break;
      spill_evicted();
    }
    worker_->wait_idle();
  } catch (const std::exception& e) {
    LOOM_LOG_WARN("cache_offload: spilling the pool at shutdown failed: {}", e.what());
  }
  for (auto& [id, s] : staged_) drop_staged(s);
}

void PrefixTiers::spill_evicted() { spill(cache_->take_evicted()); }

void PrefixTiers::spill(std::span<const loom_evicted_block> evicted) {
  for (const loom_evicted_block& b : evicted) {
    const std::optional<int32_t> slot = staging_->acquire();
    if (!slot) {
      ++decisions_.spill_dropped;
      continue;
    }
    staging_->stage_from_pool(b.block_id, *slot);
    loom_offload_entry entry{};
    entry.struct_size = sizeof(entry);
    entry.key = b.hash & kPrefixKeyMask;
    entry.prefix_hash = b.hash;
    entry.salt = b.salt;
    entry.num_tokens = b.num_tokens;
    worker_->spill(entry, *slot);
    ++decisions_.spilled;
  }
}

bool PrefixTiers::hold(const loom_request_view& req) {
  if (!restores_ || req.num_computed_tokens != 0 || held_.count(req.request_id) != 0) return false;
  size_t blocks = SIZE_MAX;
  for (int32_t g = 0; g < num_groups_; ++g) {
    cache_->group_block_hashes(req, g, hashes_[static_cast<size_t>(g)]);
    blocks = std::min(blocks, hashes_[static_cast<size_t>(g)].size());
  }
  const auto pool = static_cast<size_t>(cache_->match_prefix(req) / block_size_);
  if (pool >= blocks) return false;
  // Only the first missing block is probed here (an index lookup in each tier, per group); the
  // worker fetches as far as the tiers go.
  for (const std::vector<uint64_t>& group : hashes_) {
    const uint64_t first = group[pool] & kPrefixKeyMask;
    if (std::none_of(tiers_.begin(), tiers_.end(), [&](const auto& t) { return t->contains(first); })) return false;
  }
  // Block-major, so the fetch, which stops at the first key no tier holds, ends on whole blocks
  // but for the last one (release_held drops its part).
  std::vector<uint64_t> keys;
  for (size_t i = pool; i < blocks; ++i)
    for (const std::vector<uint64_t>& group : hashes_) keys.push_back(group[i] & kPrefixKeyMask);
  worker_->fetch(req.request_id, static_cast<int32_t>(pool), std::move(keys));
  held_.insert(req.request_id);
  return true;
}

std::vector<uint64_t> PrefixTiers::release_held() {
  std::vector<uint64_t> ready;
  for (FetchResult& r : worker_->take_done()) {
    decisions_.recompute_load_failed += r.load_failures;
    if (r.out_of_staging) ++decisions_.recompute_no_staging;
    Staged s{r.first_block, std::move(r.slots)};
    // A block whose every group came back is restorable; a part of one is not.
    while (s.slots.size() % static_cast<size_t>(num_groups_) != 0) {
      staging_->release(s.slots.back());
      s.slots.pop_back();
    }
    if (held_.erase(r.request_id) == 0) {  // finished or aborted while fetching
      drop_staged(s);
      continue;
    }
    if (s.slots.empty()) {
      ready.push_back(r.request_id);
      continue;
    }
    if (const auto old = staged_.find(r.request_id); old != staged_.end()) drop_staged(old->second);
    staged_[r.request_id] = std::move(s);
    ready.push_back(r.request_id);
  }
  return ready;
}

void PrefixTiers::drop_staged(Staged& s) {
  for (int32_t& slot : s.slots) {
    if (slot >= 0) staging_->release(slot);
    slot = -1;
  }
}

int32_t PrefixTiers::restore(const RequestState& req, int32_t num_new_tokens) {
  const auto it = staged_.find(req.id);
  if (it == staged_.end()) return 0;
  Staged& s = it->second;
  const auto groups = static_cast<size_t>(num_groups_);
  const int32_t end_block = s.first_block + static_cast<int32_t>(s.slots.size() / groups);
  auto finish = [&](int64_t TierDecisions::*unused_reason) {
    for (int32_t slot : s.slots) decisions_.*unused_reason += slot >= 0 ? 1 : 0;
    drop_staged(s);
    staged_.erase(it);
  };
  const int32_t computed = req.num_computed_tokens;
  // Prompt logprobs need every row computed; a mid-block start (a fork, a swap-in) cannot use
  // whole staged blocks; a pool hit that no longer reaches the staged blocks leaves a gap.
  if (req.sampling.prompt_logprobs.has_value() || computed % block_size_ != 0) {
    finish(&TierDecisions::recompute_not_needed);
    return 0;
  }
  const int32_t at = computed / block_size_;
  if (at < s.first_block) {
    finish(&TierDecisions::recompute_prefix_lost);
    return 0;
  }
  if (at >= end_block) {  // the pool holds them all by now (another request computed them)
    finish(&TierDecisions::recompute_not_needed);
    return 0;
  }
  // The request's last token must run through the model (its logits are sampled). Restoring
  // costs the step no compute, so it is not held to the scheduler's chunk: when the staged
  // blocks reach past the chunk, the table grows to hold them and the chunk's own tokens, which
  // are then computed after them; without room, the chunk bounds it.
  const int32_t wanted = std::max(0, std::min(end_block - at, (req.num_tokens() - 1 - computed) / block_size_));
  int32_t take = std::max(0, std::min(wanted, num_new_tokens / block_size_));
  if (wanted * block_size_ > num_new_tokens - (num_new_tokens % block_size_) && wanted > take) {
    const int32_t room = std::min(wanted * block_size_ + num_new_tokens, req.num_tokens() - computed);
    loom_request_view view = req.view();
    if (room > num_new_tokens && cache_->append(view, room)) {
      take = wanted;
      spill_evicted();  // growing may have evicted blocks, which the copies below overwrite
    }
  }
  // Each group's staged block into the same position of that group's table.
  for (size_t g = 0; g < groups; ++g) {
    const std::span<const int32_t> table = cache_->group_block_table(req.id, static_cast<int32_t>(g));
    for (int32_t b = at; b < at + take; ++b) {
      int32_t& slot = s.slots[static_cast<size_t>(b - s.first_block) * groups + g];
      staging_->unstage_to_pool(slot, table[static_cast<size_t>(b)]);
      staging_->release(slot);
      slot = -1;
    }
  }
  decisions_.restored += static_cast<int64_t>(take) * num_groups_;
  lower_tier_tokens_ += static_cast<int64_t>(take) * block_size_;
  // Blocks the pool already had (another request computed them meanwhile) are not needed.
  for (size_t i = 0; i < static_cast<size_t>(at - s.first_block) * groups; ++i) {
    int32_t& slot = s.slots[i];
    if (slot >= 0) {
      staging_->release(slot);
      slot = -1;
      ++decisions_.recompute_not_needed;
    }
  }
  if (at + take >= end_block || take == 0) {
    finish(&TierDecisions::recompute_not_needed);
  } else {
    const auto used = static_cast<std::ptrdiff_t>(static_cast<size_t>(at + take - s.first_block) * groups);
    s.slots.erase(s.slots.begin(), s.slots.begin() + used);
    s.first_block = at + take;
  }
  return take * block_size_;
}

void PrefixTiers::release(uint64_t request_id) {
  if (held_.erase(request_id) != 0) worker_->cancel(request_id);  // its slots go back, now or when it ends
  if (const auto it = staged_.find(request_id); it != staged_.end()) {
    drop_staged(it->second);
    staged_.erase(it);
  }
}

void PrefixTiers::read_stats(EngineStats& out) const {
  out.kv_tiers.clear();
  for (const auto& t : tiers_) out.kv_tiers.push_back(t->stats());
  out.kv_tier_decisions = decisions_;
  out.kv_tier_staging_in_use = staging_->slots_in_use();
  out.kv_tier_fetching = static_cast<int32_t>(held_.size());
  // The restored tokens missed in the pool, under the reason the cache gave the lookup: evicted
  // (it spilled them), no_match (a tier filled before a restart) or partial_block (a first chunk
  // shorter than the prefix); they move to lower_tier, so the reasons still sum to the misses.
  int64_t moved = lower_tier_tokens_;
  for (int64_t* reason : {&out.prefix_cache_miss_evicted, &out.prefix_cache_miss_no_match,
                          &out.prefix_cache_miss_partial_block}) {
    const int64_t n = std::min(moved, *reason);
    *reason -= n;
    moved -= n;
  }
  out.prefix_cache_miss_lower_tier = lower_tier_tokens_ - moved;
}

}  // namespace loom
