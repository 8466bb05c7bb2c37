// cache/paged: each sequence holds a table of fixed-size KV blocks that grows block by block as
// it is allocated and appended, so a sequence only ever holds the blocks its tokens need.
//
// Prefix caching: a FULL block is identified by a chained hash over (its parent block's hash,
// the request's cache_salt, its token ids), so equal hashes mean equal whole prefixes. A block is
// registered only in commit(), once num_computed_tokens covers it -- before that its K/V is not
// written. match_prefix walks the chain of a request's leading full blocks through the registry;
// allocate takes those blocks by reference. Only full blocks are shared this way and a sequence
// writes only past its own computed tokens, so prefix sharing never writes a shared block.
// A freed block that is registered stays "cached" (evictable, LRU by free time; within one free
// the tail blocks count as freed first, so a prefix's head outlives its tail).
//
// fork (interface 1.1, n > 1 sampling) shares a sequence's blocks -- the partial last one too --
// with a new child. The child is then allocated like a new request (its forked tokens reported
// cached). Whoever first writes into a block that is still shared gets a fresh block in its table
// and a queued copy old -> new (take_block_copies); the other holder keeps the old block.
//
// Miss counters: allocate (the commit point; match_prefix stays side-effect free) gives a
// lookup's missed tokens one reason, from its first missed full block: evicted when the pool
// recently evicted that hash, salt_mismatch when the same tokens are registered under another
// salt, else no_match; partial_block when the lookup had no full block left it could use (the
// rest is shorter than a block, or is the last token's block, which is always computed).

#include <algorithm>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/block_pool.hpp"
#include "common/evicted_block_list.hpp"
#include "common/kv_pool_config.hpp"
#include "common/seq_blocks.hpp"
#include "loom/cache.h"
#include "loom/sdk.hpp"

namespace loom::paged {
namespace {

using sdk::Error;

struct Seq {
  std::vector<int32_t> blocks;     // the block table
  std::vector<uint64_t> hashes;    // chain hashes of the leading full blocks known to be computed
  std::vector<uint64_t> contents;  // their content-only chain hashes (salt_mismatch misses)
  int32_t forked = -1;             // >= 0: made by fork, not yet allocated; shares this many tokens
};

class PagedCache : public block_cache::SeqBlocks<PagedCache, Seq> {
  friend class block_cache::SeqBlocks<PagedCache, Seq>;

 public:
  static constexpr const char* kLabel = "cache paged";

  PagedCache(const sdk::Host& host, const loom_cache_create_args& args, const kv_pool_config::Config& cfg)
      : host_(host),
        block_size_(cfg.block_size),
        prefix_caching_(cfg.enable_prefix_caching),
        check_invariants_(kv_pool_config::checks_invariants(cfg)),
        pool_(pool_size(args, cfg)) {
    host_.info(num_blocks(), " blocks x ", block_size_, " tokens, prefix caching ", prefix_caching_ ? "on" : "off",
               check_invariants_ ? ", invariants checked after every change" : "");
  }

  // Leading tokens with registered K/V, leaving at least the last token to compute; for a forked
  // child not yet allocated, the tokens it shares with its parent.
  int32_t match_prefix(const loom_request_view& req) const {
    if (const int32_t forked = forked_tokens(req.request_id); forked >= 0) return forked;
    return static_cast<int32_t>(match(req, req.num_tokens).size()) * block_size_;
  }

  bool can_allocate(const loom_request_view& req, int32_t num_new_tokens) const {
    if (const std::optional<bool> held = held_can_allocate(req, num_new_tokens)) return *held;
    return extra_blocks(req, num_new_tokens, match(req, room(req, num_new_tokens))) <= 0;
  }

  void allocate(const loom_request_view& req, int32_t num_new_tokens, int32_t* num_cached_tokens) {
    if (allocate_held(req, num_new_tokens, num_cached_tokens)) return;
    const std::vector<Hit> hits = match(req, room(req, num_new_tokens));
    const int32_t short_by = extra_blocks(req, num_new_tokens, hits);
    if (short_by > 0)
      throw Error(LOOM_ERR_OUT_OF_MEMORY, "cache paged: request " + std::to_string(req.request_id) + " needs " +
                                              std::to_string(short_by) + " more blocks than the " +
                                              std::to_string(pool_.num_available()) + " free or evictable");
    Seq seq;
    for (const Hit& h : hits) {  // before take(): a hit must not be evicted for the new blocks
      pool_.acquire(h.block);
      seq.blocks.push_back(h.block);
      seq.hashes.push_back(h.hash);
      seq.contents.push_back(h.content);
    }
    const block_cache::Miss why = prefix_caching_ ? miss_reason(req, room(req, num_new_tokens), hits)
                                                  : block_cache::Miss::kNoMatch;
    const int32_t need = blocks_for(req, num_new_tokens);
    while (static_cast<int32_t>(seq.blocks.size()) < need) seq.blocks.push_back(pool_.take());
    seqs_.emplace(req.request_id, std::move(seq));
    const int32_t cached = static_cast<int32_t>(hits.size()) * block_size_;
    if (prefix_caching_) {
      stats_.add(req.num_tokens, cached, why);
      if (cached > 0)
        host_.debug("request ", req.request_id, ": ", cached, " of ", req.num_tokens, " tokens from the prefix cache");
    }
    if (num_cached_tokens != nullptr) *num_cached_tokens = cached;
  }

  // The child holds the parent's blocks for parent.num_computed_tokens tokens, refcounts + 1, and
  // the parent's chain hashes for the full ones it registered. Takes no block, so never fails
  // for lack of memory.
  void fork(const loom_request_view& parent, uint64_t child_id) {
    const Seq& from = fork_source(parent, child_id);
    const int32_t tokens = parent.num_computed_tokens;
    const int32_t n = tokens >= 0 ? blocks_for_tokens(tokens) : -1;
    if (n < 0 || n > static_cast<int32_t>(from.blocks.size()))
      throw Error(LOOM_ERR_INVALID_ARGUMENT, "cache paged: fork of request " + std::to_string(parent.request_id) +
                                                 ": num_computed_tokens " + std::to_string(tokens) + " is outside its " +
                                                 std::to_string(from.blocks.size()) + " blocks");
    Seq child;
    child.blocks.assign(from.blocks.begin(), from.blocks.begin() + n);
    const size_t registered = std::min(from.hashes.size(), static_cast<size_t>(tokens / block_size_));
    child.hashes.assign(from.hashes.begin(), from.hashes.begin() + static_cast<std::ptrdiff_t>(registered));
    child.contents.assign(from.contents.begin(), from.contents.begin() + static_cast<std::ptrdiff_t>(registered));
    child.forked = tokens;
    for (int32_t b : child.blocks) pool_.acquire(b);
    seqs_.emplace(child_id, std::move(child));
  }

  // Registers every full block the computed tokens now cover, extending the sequence's chain.
  void commit(const loom_request_view& req) {
    Seq& seq = find(req.request_id);
    if (!prefix_caching_ || req.token_ids == nullptr) return;
    const int32_t covered = std::min(req.num_computed_tokens, req.num_tokens) / block_size_;
    const size_t full = std::min(static_cast<size_t>(std::max(covered, 0)), seq.blocks.size());
    // A block shared with a fork may be registered by either holder first: same position, same
    // tokens, same hash, so the second register_block does nothing.
    for (size_t i = seq.hashes.size(); i < full; ++i) {
      const uint64_t parent = i == 0 ? kRootHash : seq.hashes[i - 1];
      const std::span<const int32_t> tokens = block_tokens(req, i);
      const uint64_t hash = block_hash(parent, req.cache_salt, tokens);
      const uint64_t content = block_hash(i == 0 ? kContentRootHash : seq.contents[i - 1], 0, tokens);
      seq.hashes.push_back(hash);
      seq.contents.push_back(content);
      pool_.register_block(seq.blocks[i], hash, parent, req.cache_salt, content, tokens);
    }
  }

  // Interface 1.4: the registered blocks evicted since the last call, for the host to spill.
#if LOOM_CACHE_IFACE_MINOR >= 4
  loom_evicted_block_list take_evicted() { return block_cache::as_c_list(pool_.take_evicted()); }
#endif
  int32_t evict_cached(int32_t max_blocks) { return pool_.evict_cached(std::max(max_blocks, 0)); }

  // Interface 1.4: the chain hashes match() would look up, for every usable full block.
  int32_t block_hashes(const loom_request_view& req, uint64_t* out, int32_t capacity) const {
    if (!prefix_caching_ || req.token_ids == nullptr) return 0;
    const int32_t n = std::min(lookup_blocks(req, req.num_tokens), capacity);
    uint64_t parent = kRootHash;
    for (int32_t i = 0; i < n; ++i) {
      parent = block_hash(parent, req.cache_salt, block_tokens(req, static_cast<size_t>(i)));
      out[i] = parent;
    }
    return std::max(n, 0);
  }

  void free(uint64_t request_id) {
    const auto it = seqs_.find(request_id);
    if (it == seqs_.end()) return;
    const std::vector<int32_t>& blocks = it->second.blocks;
    for (auto b = blocks.rbegin(); b != blocks.rend(); ++b) pool_.release(*b);  // tail first: evicted first
    seqs_.erase(it);
  }

  // Full consistency check (debug builds, or check_invariants = true): free + cached + used ==
  // total, and every block's refcount equals the number of live tables holding it.
  void after_mutation() const {
    if (!check_invariants_) return;
    std::vector<int32_t> refs(static_cast<size_t>(pool_.num_blocks()), 0);
    for (const auto& [id, seq] : seqs_) {
      for (int32_t b : seq.blocks) {
        if (b < 0 || b >= pool_.num_blocks())
          throw Error(LOOM_ERR_INTERNAL, "cache paged: invariant broken: block id " + std::to_string(b) +
                                             " of request " + std::to_string(id) + " outside the pool");
        ++refs[static_cast<size_t>(b)];
      }
      if (seq.hashes.size() > seq.blocks.size() || seq.contents.size() != seq.hashes.size())
        throw Error(LOOM_ERR_INTERNAL, "cache paged: invariant broken: request " + std::to_string(id) +
                                           " has more block hashes than blocks");
    }
    pool_.check(refs);
  }

 private:
  struct Hit {
    int32_t block;
    uint64_t hash;
    uint64_t content;
  };

  static int32_t pool_size(const loom_cache_create_args& args, const kv_pool_config::Config& cfg) {
    kv_pool_config::check_kv_dtype(args, kLabel);
    return kv_pool_config::pool_blocks(args, cfg, kLabel);
  }

  // SeqBlocks' hooks: the pool's take() evicts by itself, and prefix sharing never writes a
  // shared block, so copy-on-write may start at any block.
  int32_t available() const { return pool_.num_available(); }
  void make_free(int32_t) {}
  static size_t first_writable(const Seq&) { return 0; }
  static int32_t committed_blocks(const Seq& seq) { return static_cast<int32_t>(seq.hashes.size()); }

  // Why the lookup of req (limited to `limit` tokens) missed what it missed: see the top.
  block_cache::Miss miss_reason(const loom_request_view& req, int64_t limit, const std::vector<Hit>& hits) const {
    if (req.token_ids == nullptr || static_cast<int64_t>(hits.size()) >= lookup_blocks(req, limit))
      return block_cache::Miss::kPartialBlock;
    const size_t i = hits.size();
    const std::span<const int32_t> tokens = block_tokens(req, i);
    if (pool_.was_evicted(block_hash(i == 0 ? kRootHash : hits.back().hash, req.cache_salt, tokens)))
      return block_cache::Miss::kEvicted;
    const uint64_t content = block_hash(i == 0 ? kContentRootHash : hits.back().content, 0, tokens);
    return pool_.content_cached(content) ? block_cache::Miss::kSaltMismatch : block_cache::Miss::kNoMatch;
  }

  std::span<const int32_t> block_tokens(const loom_request_view& req, size_t i) const {
    return {req.token_ids + i * static_cast<size_t>(block_size_), static_cast<size_t>(block_size_)};
  }

  // The registered blocks that hold req's leading full blocks, at most (limit - 1) tokens' worth:
  // the cache never reports every token as cached, so the last one is always computed (it gives
  // the logits). Only a sequence starting from scratch can match.
  std::vector<Hit> match(const loom_request_view& req, int64_t limit) const {
    std::vector<Hit> hits;
    if (!prefix_caching_ || req.token_ids == nullptr || req.num_computed_tokens != 0) return hits;
    const int64_t max_blocks = lookup_blocks(req, limit);
    uint64_t parent = kRootHash, content = kContentRootHash;
    for (int64_t i = 0; i < max_blocks; ++i) {
      const std::span<const int32_t> tokens = block_tokens(req, static_cast<size_t>(i));
      const uint64_t hash = block_hash(parent, req.cache_salt, tokens);
      const int32_t block = pool_.lookup(hash, parent, req.cache_salt, tokens);
      if (block < 0) break;
      content = block_hash(content, 0, tokens);
      hits.push_back(Hit{block, hash, content});
      parent = hash;
    }
    return hits;
  }

  // How many blocks a new sequence is short of, reusing hits: positive means it cannot be
  // allocated now. Cached hits are counted out of the evictable supply, which they leave.
  int32_t extra_blocks(const loom_request_view& req, int32_t num_new_tokens, const std::vector<Hit>& hits) const {
    int32_t evictable_hits = 0;
    for (const Hit& h : hits) evictable_hits += pool_.refcount(h.block) == 0 ? 1 : 0;
    const int32_t fresh = blocks_for(req, num_new_tokens) - static_cast<int32_t>(hits.size());
    return fresh - (pool_.num_available() - evictable_hits);
  }

  sdk::Host host_;
  int32_t block_size_;
  bool prefix_caching_;
  bool check_invariants_;
  BlockPool pool_;
  block_cache::PrefixStats stats_;
};

}  // namespace
}  // namespace loom::paged

LOOM_CACHE_PLUGIN(loom::paged::PagedCache, "paged", "0.1.0",
                  "paged KV blocks grown per sequence, with hash-chained prefix caching and LRU eviction");
