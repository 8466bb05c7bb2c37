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
// Block-table groups (interface 1.5): with n_groups > 1 each sequence holds one table per group
// (seq_blocks.hpp releases a windowed group's blocks once they fall out of the window). Each
// group registers and looks up its blocks under its own salt (its K/V are other layers'; interface
// 1.6's group_block_hashes gives those keys to the host, which spills and restores by them), and a
// prefix is matched only as far as every group holds what it reads: a full-attention group the
// whole chain, a windowed group the blocks its window reaches from the hit on.
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
#include "common/window_blocks.hpp"
#include "loom/cache.h"
#include "loom/sdk.hpp"

namespace loom::paged {
namespace {

using sdk::Error;

struct Seq {
  std::vector<std::vector<int32_t>> tables;    // [n_groups] the block tables, group 0 first
  std::vector<std::vector<uint64_t>> hashes;   // [n_groups] chain hashes of the leading full blocks
                                               // known to be computed
  std::vector<std::vector<uint64_t>> contents;  // [n_groups] their content-only chain hashes
  int32_t forked = -1;  // >= 0: made by fork, not yet allocated; shares this many tokens
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
        windows_(kv_pool_config::group_windows(args, kLabel)),
        pool_(pool_size(args, cfg)) {
    host_.info(num_blocks(), " blocks x ", block_size_, " tokens, prefix caching ", prefix_caching_ ? "on" : "off",
               windows_.size() > 1 ? ", " + std::to_string(windows_.size()) + " block-table groups" : "",
               check_invariants_ ? ", invariants checked after every change" : "");
  }

  // Interface 1.5: one group's table.
  loom_block_list group_block_table(uint64_t request_id, int32_t group) const { return table_of(request_id, group); }

  // Leading tokens with registered K/V, leaving at least the last token to compute; for a forked
  // child not yet allocated, the tokens it shares with its parent.
  int32_t match_prefix(const loom_request_view& req) const {
    if (const int32_t forked = forked_tokens(req.request_id); forked >= 0) return forked;
    return matched_blocks(match(req, req.num_tokens)) * block_size_;
  }

  bool can_allocate(const loom_request_view& req, int32_t num_new_tokens) const {
    if (const std::optional<bool> held = held_can_allocate(req, num_new_tokens)) return *held;
    return extra_blocks(req, num_new_tokens, match(req, room(req, num_new_tokens))) <= 0;
  }

  void allocate(const loom_request_view& req, int32_t num_new_tokens, int32_t* num_cached_tokens) {
    if (allocate_held(req, num_new_tokens, num_cached_tokens)) return;
    const GroupHits hits = match(req, room(req, num_new_tokens));
    const int32_t short_by = extra_blocks(req, num_new_tokens, hits);
    if (short_by > 0)
      throw Error(LOOM_ERR_OUT_OF_MEMORY, "cache paged: request " + std::to_string(req.request_id) + " needs " +
                                              std::to_string(short_by) + " more blocks than the " +
                                              std::to_string(pool_.num_available()) + " free or evictable");
    Seq seq = empty_seq();
    for (size_t g = 0; g < hits.size(); ++g) {
      for (const Hit& h : hits[g]) {  // before take(): a hit must not be evicted for the new blocks
        if (h.block >= 0) pool_.acquire(h.block);
        seq.tables[g].push_back(h.block);
        seq.hashes[g].push_back(h.hash);
        seq.contents[g].push_back(h.content);
      }
    }
    const block_cache::Miss why = prefix_caching_ ? miss_reason(req, room(req, num_new_tokens), hits[0])
                                                  : block_cache::Miss::kNoMatch;
    const int32_t need = blocks_for(req, num_new_tokens);
    for (std::vector<int32_t>& table : seq.tables)
      while (static_cast<int32_t>(table.size()) < need) table.push_back(pool_.take());
    seqs_.emplace(req.request_id, std::move(seq));
    const int32_t cached = matched_blocks(hits) * block_size_;
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
    if (n < 0 || n > static_cast<int32_t>(from.tables[0].size()))
      throw Error(LOOM_ERR_INVALID_ARGUMENT, "cache paged: fork of request " + std::to_string(parent.request_id) +
                                                 ": num_computed_tokens " + std::to_string(tokens) + " is outside its " +
                                                 std::to_string(from.tables[0].size()) + " blocks");
    Seq child = empty_seq();
    for (size_t g = 0; g < windows_.size(); ++g) {
      child.tables[g].assign(from.tables[g].begin(), from.tables[g].begin() + n);
      const size_t registered = std::min(from.hashes[g].size(), static_cast<size_t>(tokens / block_size_));
      const auto r = static_cast<std::ptrdiff_t>(registered);
      child.hashes[g].assign(from.hashes[g].begin(), from.hashes[g].begin() + r);
      child.contents[g].assign(from.contents[g].begin(), from.contents[g].begin() + r);
      for (int32_t b : child.tables[g])
        if (b >= 0) pool_.acquire(b);
    }
    child.forked = tokens;
    seqs_.emplace(child_id, std::move(child));
  }

  // Registers every full block the computed tokens now cover, extending each group's chain. A
  // block a window released is past registering, but its hash still links the chain.
  void commit(const loom_request_view& req) {
    Seq& seq = find(req.request_id);
    if (!prefix_caching_ || req.token_ids == nullptr) return;
    const int32_t covered = std::min(req.num_computed_tokens, req.num_tokens) / block_size_;
    for (size_t g = 0; g < windows_.size(); ++g) {
      std::vector<uint64_t>& hashes = seq.hashes[g];
      std::vector<uint64_t>& contents = seq.contents[g];
      const uint64_t salt = block_cache::group_salt(req.cache_salt, g);
      const size_t full = std::min(static_cast<size_t>(std::max(covered, 0)), seq.tables[g].size());
      // A block shared with a fork may be registered by either holder first: same position, same
      // tokens, same hash, so the second register_block does nothing.
      for (size_t i = hashes.size(); i < full; ++i) {
        const uint64_t parent = i == 0 ? kRootHash : hashes[i - 1];
        const std::span<const int32_t> tokens = block_tokens(req, i);
        const uint64_t hash = block_hash(parent, salt, tokens);
        const uint64_t content = block_hash(i == 0 ? block_cache::group_content_root(g) : contents[i - 1], 0, tokens);
        hashes.push_back(hash);
        contents.push_back(content);
        if (seq.tables[g][i] >= 0) pool_.register_block(seq.tables[g][i], hash, parent, salt, content, tokens);
      }
    }
  }

  // Interface 1.4: the registered blocks evicted since the last call, for the host to spill.
#if LOOM_CACHE_IFACE_MINOR >= 4
  loom_evicted_block_list take_evicted() { return block_cache::as_c_list(pool_.take_evicted()); }
#endif
  int32_t evict_cached(int32_t max_blocks) { return pool_.evict_cached(std::max(max_blocks, 0)); }

  void free(uint64_t request_id) {
    const auto it = seqs_.find(request_id);
    if (it == seqs_.end()) return;
    for (const std::vector<int32_t>& blocks : it->second.tables)
      for (auto b = blocks.rbegin(); b != blocks.rend(); ++b)  // tail first: evicted first
        if (*b >= 0) pool_.release(*b);
    seqs_.erase(it);
  }

  // Full consistency check (debug builds, or check_invariants = true): free + cached + used ==
  // total, and every block's refcount equals the number of live tables holding it.
  void after_mutation() const {
    if (!check_invariants_) return;
    std::vector<int32_t> refs(static_cast<size_t>(pool_.num_blocks()), 0);
    for (const auto& [id, seq] : seqs_) {
      if (seq.tables.size() != windows_.size() || seq.hashes.size() != windows_.size() ||
          seq.contents.size() != windows_.size())
        throw Error(LOOM_ERR_INTERNAL, "cache paged: invariant broken: request " + std::to_string(id) + " holds " +
                                           std::to_string(seq.tables.size()) + " tables for " +
                                           std::to_string(windows_.size()) + " groups");
      for (size_t g = 0; g < windows_.size(); ++g) {
        const std::vector<int32_t>& table = seq.tables[g];
        for (size_t i = 0; i < table.size(); ++i) {
          const int32_t b = table[i];
          // Released entries: only a windowed group's, only before every held one.
          const bool released = b == -1 && windows_[g] > 0 && (i == 0 || table[i - 1] == -1);
          if (released) continue;
          if (b < 0 || b >= pool_.num_blocks())
            throw Error(LOOM_ERR_INTERNAL, "cache paged: invariant broken: block id " + std::to_string(b) +
                                               " of request " + std::to_string(id) + " outside the pool");
          ++refs[static_cast<size_t>(b)];
        }
        if (seq.hashes[g].size() > table.size() || seq.contents[g].size() != seq.hashes[g].size())
          throw Error(LOOM_ERR_INTERNAL, "cache paged: invariant broken: request " + std::to_string(id) +
                                             " has more block hashes than blocks");
      }
    }
    pool_.check(refs);
  }

 private:
  struct Hit {
    int32_t block;
    uint64_t hash;
    uint64_t content;
  };

  using GroupHits = std::vector<std::vector<Hit>>;  // [n_groups]

  Seq empty_seq() const {
    Seq seq;
    seq.tables.resize(windows_.size());
    seq.hashes.resize(windows_.size());
    seq.contents.resize(windows_.size());
    return seq;
  }
  // Leading full blocks every group holds (what allocate takes).
  static int32_t matched_blocks(const GroupHits& hits) {
    size_t n = hits[0].size();
    for (const auto& h : hits) n = std::min(n, h.size());
    return static_cast<int32_t>(n);
  }

  static int32_t pool_size(const loom_cache_create_args& args, const kv_pool_config::Config& cfg) {
    kv_pool_config::check_kv_dtype(args, kLabel);
    return kv_pool_config::pool_blocks(args, cfg, kLabel);
  }

  // SeqBlocks' hooks: the pool's take() evicts by itself, and prefix sharing never writes a
  // shared block, so copy-on-write may start at any block.
  int32_t available() const { return pool_.num_available(); }
  void make_free(int32_t) {}
  static size_t first_writable(const Seq&) { return 0; }
  static int32_t committed_blocks(const Seq& seq) { return static_cast<int32_t>(seq.hashes[0].size()); }
  static std::span<std::vector<int32_t>> tables(Seq& seq) { return seq.tables; }
  static std::span<const std::vector<int32_t>> tables(const Seq& seq) { return seq.tables; }
  int32_t window_of(int32_t group) const { return windows_[static_cast<size_t>(group)]; }
  int32_t num_tables() const { return static_cast<int32_t>(windows_.size()); }

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

  // For each group, the registered blocks that hold req's leading full blocks, at most
  // (limit - 1) tokens' worth: the cache never reports every token as cached, so the last one is
  // always computed (it gives the logits). A full-attention group needs the whole chain; a
  // windowed group only the blocks the window of the first computed token reaches (vLLM's
  // sliding-window prefix hit), the older ones -1. The hit is where every group holds what it
  // needs. Only a sequence starting from scratch can match.
  GroupHits match(const loom_request_view& req, int64_t limit) const {
    GroupHits hits(windows_.size());
    if (!prefix_caching_ || req.token_ids == nullptr || req.num_computed_tokens != 0) return hits;
    int64_t max_blocks = lookup_blocks(req, limit);
    for (size_t g = 0; g < windows_.size(); ++g) {  // windowed groups look past an absent block
      const uint64_t salt = block_cache::group_salt(req.cache_salt, g);
      uint64_t parent = kRootHash, content = block_cache::group_content_root(g);
      for (int64_t i = 0; i < max_blocks; ++i) {
        const std::span<const int32_t> tokens = block_tokens(req, static_cast<size_t>(i));
        const uint64_t hash = block_hash(parent, salt, tokens);
        const int32_t block = pool_.lookup(hash, parent, salt, tokens);
        if (block < 0 && windows_[g] == 0) break;
        content = block_hash(content, 0, tokens);
        hits[g].push_back(Hit{block, hash, content});
        parent = hash;
      }
      if (windows_[g] == 0) max_blocks = static_cast<int64_t>(hits[g].size());
    }
    max_blocks = block_cache::longest_held_hit(max_blocks, windows_, block_size_, [&](size_t g, int64_t i) {
      return static_cast<size_t>(i) < hits[g].size() && hits[g][static_cast<size_t>(i)].block >= 0;
    });
    for (size_t g = 0; g < windows_.size(); ++g) {
      hits[g].resize(static_cast<size_t>(max_blocks));
      // What a window does not reach is not held, even where the pool still has it.
      const int64_t first = block_cache::first_block_in_window(max_blocks * block_size_, windows_[g], block_size_);
      for (int64_t i = 0; i < first; ++i) hits[g][static_cast<size_t>(i)].block = -1;
    }
    return hits;
  }

  // How many blocks a new sequence is short of, reusing hits: positive means it cannot be
  // allocated now. Cached hits are counted out of the evictable supply, which they leave.
  int32_t extra_blocks(const loom_request_view& req, int32_t num_new_tokens, const GroupHits& hits) const {
    int32_t evictable_hits = 0, fresh = 0;
    for (const auto& group : hits) {
      for (const Hit& h : group) evictable_hits += h.block >= 0 && pool_.refcount(h.block) == 0 ? 1 : 0;
      fresh += blocks_for(req, num_new_tokens) - static_cast<int32_t>(group.size());
    }
    return fresh - (pool_.num_available() - evictable_hits);
  }

  sdk::Host host_;
  int32_t block_size_;
  bool prefix_caching_;
  bool check_invariants_;
  std::vector<int32_t> windows_;  // [n_groups] each group's sliding window, 0: none
  BlockPool pool_;
  block_cache::PrefixStats stats_;
};

}  // namespace
}  // namespace loom::paged

LOOM_CACHE_PLUGIN(loom::paged::PagedCache, "paged", "0.1.0",
                  "paged KV blocks grown per sequence, with hash-chained prefix caching and LRU eviction");
