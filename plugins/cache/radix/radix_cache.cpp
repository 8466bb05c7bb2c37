// cache/radix: paged KV blocks (each sequence's table grows block by block) with a
// RadixAttention-style prefix cache: a radix tree over token ids, one subtree per cache_salt
// (radix_tree.hpp). The tree matches token by token, but reuse is per block: edges hold whole
// blocks, a match is rounded down to a block boundary, and only full blocks whose K/V is written
// (commit) are inserted. A hit locks the matched path (splitting an edge the match ends inside),
// an insert locks the new node, free unlocks; locked nodes' blocks are in live tables and are
// never evicted. When take() finds no free block the tree evicts unlocked leaves, least recently
// used first, trimming each from its tail.
//
// match_prefix never reports every token: the last one is always computed (it gives the logits).
// Only full blocks are shared through the tree and a sequence writes only past its own computed
// tokens, so prefix sharing never writes a shared block. When two sequences computed the same
// prefix at once, the first commit wins and the second adopts its blocks at commit (equal tokens,
// equal K/V), releasing its own copies: the host reads block tables afresh every step ("valid
// until the next mutating call"), so the swap is invisible to it, and the tree stays free of
// duplicates.
//
// fork (interface 1.1, n > 1 sampling) gives a new child the parent's blocks for its computed
// tokens -- the partial last one and any not yet in the tree too, by refcount -- and a lock on
// the parent's tree path, so eviction cannot take what the child shares. The child is then
// allocated like a new request (its forked tokens reported cached). Whoever first writes into a
// block that is still shared gets a fresh block and a queued copy old -> new (take_block_copies).
// A shared block not yet in the tree is inserted by whichever holder commits it first; the other
// finds it there and "adopts" the very same block.
//
// Block-table groups (interface 1.5): with n_groups > 1 each sequence holds one table per group
// (seq_blocks.hpp releases a windowed group's blocks once they fall out of the window), and each
// tree position holds one block per group (radix_tree.hpp): a released block that is in the tree
// stays cached there until eviction tombstones it. A prefix is matched only as far as every group
// holds what it reads: a full-attention group the whole path, a windowed group the blocks its
// window reaches from the hit on. Each group's evicted blocks carry their group's chained hash,
// which 1.6's group_block_hashes (seq_blocks.hpp) gives the host to spill and restore them by.
//
// Miss counters: allocate (the commit point; match_prefix stays side-effect free) gives a
// lookup's missed tokens one reason, from its first missed full block: evicted when its chained
// hash is in the bounded record of evicted blocks, salt_mismatch when another salt's subtree
// holds those tokens (a walk per other salt, only on a miss), else no_match; partial_block when
// no full block was left to look up (the rest is shorter than a block, or is the last token's
// block, which is always computed).

#include <algorithm>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "block_pool.hpp"
#include "common/block_hash.hpp"
#include "common/evicted_block_list.hpp"
#include "common/kv_pool_config.hpp"
#include "common/seq_blocks.hpp"
#include "common/window_blocks.hpp"
#include "loom/cache.h"
#include "loom/sdk.hpp"
#include "radix_tree.hpp"

namespace loom::radix {
namespace {

using sdk::Error;

struct Seq {
  std::vector<std::vector<int32_t>> tables;  // [n_groups] the block tables, group 0 first
  Node* node = nullptr;         // end of the sequence's locked tree path (null: none)
  int32_t depth = 0;            // block positions on that path: each table's first `depth` entries
  uint64_t salt = 0;
  int32_t forked = -1;          // >= 0: made by fork, not yet allocated; shares this many tokens
};

class RadixCache : public block_cache::SeqBlocks<RadixCache, Seq> {
  friend class block_cache::SeqBlocks<RadixCache, Seq>;

 public:
  static constexpr const char* kLabel = "cache radix";

  RadixCache(const sdk::Host& host, const loom_cache_create_args& args, const kv_pool_config::Config& cfg)
      : host_(host),
        block_size_(cfg.block_size),
        prefix_caching_(cfg.enable_prefix_caching),
        check_invariants_(kv_pool_config::checks_invariants(cfg)),
        windows_(kv_pool_config::group_windows(args, kLabel)),
        pool_(pool_size(args, cfg)),
        tree_(cfg.block_size, windows_),
        evicted_(4 * static_cast<size_t>(pool_.num_blocks())),
        spilled_(static_cast<size_t>(pool_.num_blocks())) {
    host_.info(num_blocks(), " blocks x ", block_size_, " tokens, radix prefix caching ", prefix_caching_ ? "on" : "off",
               windows_.size() > 1 ? ", " + std::to_string(windows_.size()) + " block-table groups" : "",
               check_invariants_ ? ", invariants checked after every change" : "");
  }

  // Interface 1.5: one group's table.
  loom_block_list group_block_table(uint64_t request_id, int32_t group) const { return table_of(request_id, group); }

  // Interface 1.4: the tree blocks evicted since the last call, for the host to spill.
#if LOOM_CACHE_IFACE_MINOR >= 4
  loom_evicted_block_list take_evicted() { return block_cache::as_c_list(spilled_.take()); }
#endif
  int32_t evict_cached(int32_t max_blocks) {
    return max_blocks > 0 ? tree_.evict(max_blocks, pool_, &evicted_, &spilled_) : 0;
  }

  int32_t match_prefix(const loom_request_view& req) const {
    if (const int32_t forked = forked_tokens(req.request_id); forked >= 0) return forked;
    return match(req, req.num_tokens).length * block_size_;
  }

  bool can_allocate(const loom_request_view& req, int32_t num_new_tokens) const {
    if (const std::optional<bool> held = held_can_allocate(req, num_new_tokens)) return *held;
    return extra_blocks(req, num_new_tokens, match(req, room(req, num_new_tokens))) <= 0;
  }

  void allocate(const loom_request_view& req, int32_t num_new_tokens, int32_t* num_cached_tokens) {
    if (allocate_held(req, num_new_tokens, num_cached_tokens)) return;
    Hit m = match(req, room(req, num_new_tokens));
    const int32_t short_by = extra_blocks(req, num_new_tokens, m);
    if (short_by > 0)
      throw Error(LOOM_ERR_OUT_OF_MEMORY, "cache radix: request " + std::to_string(req.request_id) + " needs " +
                                              std::to_string(short_by) + " more blocks than the " +
                                              std::to_string(available()) + " free or evictable");
    const block_cache::Miss why = prefix_caching_ ? miss_reason(req, room(req, num_new_tokens), m)
                                                  : block_cache::Miss::kNoMatch;
    Seq seq;
    seq.tables.resize(windows_.size());
    seq.salt = req.cache_salt;
    if (m.length > 0) {  // locked and held before any eviction below, so the hit cannot be evicted
      seq.node = tree_.lock(m.path);
      seq.depth = m.length;
      for (const std::vector<int32_t>& table : m.tables)
        for (int32_t b : table)
          if (b >= 0) pool_.acquire(b);
      seq.tables = std::move(m.tables);
    }
    grow(seq, blocks_for(req, num_new_tokens));
    seqs_.emplace(req.request_id, std::move(seq));
    const int32_t cached = m.length * block_size_;
    if (prefix_caching_) {
      stats_.add(req.num_tokens, cached, why);
      if (cached > 0)
        host_.debug("request ", req.request_id, ": ", cached, " of ", req.num_tokens, " tokens from the radix cache");
    }
    if (num_cached_tokens != nullptr) *num_cached_tokens = cached;
  }

  // The child holds the parent's blocks for parent.num_computed_tokens tokens (refcounts + 1) and
  // one more lock on the parent's tree path. Takes no block, so never fails for lack of memory.
  void fork(const loom_request_view& parent, uint64_t child_id) {
    const Seq& from = fork_source(parent, child_id);
    const int32_t tokens = parent.num_computed_tokens;
    const int32_t n = tokens >= 0 ? blocks_for_tokens(tokens) : -1;
    if (n < 0 || n > static_cast<int32_t>(from.tables[0].size()) ||
        static_cast<int64_t>(from.depth) * block_size_ > tokens)
      throw Error(LOOM_ERR_INVALID_ARGUMENT, "cache radix: fork of request " + std::to_string(parent.request_id) +
                                                 ": num_computed_tokens " + std::to_string(tokens) + " is outside its " +
                                                 std::to_string(from.tables[0].size()) + " blocks or behind its " +
                                                 std::to_string(from.depth) + " committed ones");
    Seq child;
    child.salt = from.salt;
    child.depth = from.depth;
    child.forked = tokens;
    for (const std::vector<int32_t>& table : from.tables) child.tables.emplace_back(table.begin(), table.begin() + n);
    if (from.node != nullptr) {
      Match path;
      path.node = from.node;
      child.node = tree_.lock(path);
    }
    for (const std::vector<int32_t>& table : child.tables)
      for (int32_t b : table)
        if (b >= 0) pool_.acquire(b);
    seqs_.emplace(child_id, std::move(child));
  }

  // Inserts every full block the computed tokens now cover below the sequence's tree path.
  void commit(const loom_request_view& req) {
    Seq& seq = find(req.request_id);
    if (!prefix_caching_ || req.token_ids == nullptr) return;
    const int32_t covered = std::max(std::min(req.num_computed_tokens, req.num_tokens), 0) / block_size_;
    const int32_t full = std::min(covered, static_cast<int32_t>(seq.tables[0].size()));
    if (full <= seq.depth) return;
    int32_t adopted = 0;
    seq.node = tree_.insert(seq.salt, seq.node, seq.depth, tokens_of(req), seq.tables, full, pool_, &adopted);
    seq.depth = full;
    if (adopted > 0)
      host_.debug("request ", req.request_id, ": ", adopted, " computed blocks were cached by another request first; using those");
  }

  void free(uint64_t request_id) {
    const auto it = seqs_.find(request_id);
    if (it == seqs_.end()) return;
    tree_.unlock(it->second.node);
    for (const std::vector<int32_t>& table : it->second.tables)
      for (int32_t b : table)
        if (b >= 0) pool_.release(b);
    seqs_.erase(it);
  }

  // Full consistency check (debug builds, or check_invariants = true): every block's refcount is
  // the number of live tables holding it, the tree agrees with the pool and with the sequences'
  // locked paths, and no locked block is evictable.
  void after_mutation() const {
    if (!check_invariants_) return;
    std::vector<int32_t> refs(static_cast<size_t>(pool_.num_blocks()), 0);
    std::vector<RadixTree::SeqPath> paths;
    for (const auto& [id, seq] : seqs_) {
      if (seq.tables.size() != windows_.size())
        BlockPool::broken("request " + std::to_string(id) + " holds " + std::to_string(seq.tables.size()) +
                          " tables for " + std::to_string(windows_.size()) + " groups");
      for (size_t g = 0; g < windows_.size(); ++g) {
        const std::vector<int32_t>& table = seq.tables[g];
        for (size_t i = 0; i < table.size(); ++i) {
          const int32_t b = table[i];
          // Released entries: only a windowed group's, only before every held one.
          if (b == -1 && windows_[g] > 0 && (i == 0 || table[i - 1] == -1)) continue;
          if (b < 0 || b >= pool_.num_blocks())
            BlockPool::broken("block id " + std::to_string(b) + " of request " + std::to_string(id) + " outside the pool");
          ++refs[static_cast<size_t>(b)];
        }
      }
      paths.push_back(RadixTree::SeqPath{seq.node, seq.depth, seq.tables});
    }
    int32_t used = 0;
    for (int32_t b = 0; b < pool_.num_blocks(); ++b) {
      if (pool_.refcount(b) != refs[static_cast<size_t>(b)])
        BlockPool::broken("block " + std::to_string(b) + " has refcount " + std::to_string(pool_.refcount(b)) +
                          " but is in " + std::to_string(refs[static_cast<size_t>(b)]) + " tables");
      used += refs[static_cast<size_t>(b)] > 0 ? 1 : 0;
    }
    if (used != pool_.num_used()) BlockPool::broken("used count " + std::to_string(pool_.num_used()) + " != " + std::to_string(used));
    tree_.check(pool_, paths);
  }

 private:
  static int32_t pool_size(const loom_cache_create_args& args, const kv_pool_config::Config& cfg) {
    kv_pool_config::check_kv_dtype(args, kLabel);
    return kv_pool_config::pool_blocks(args, cfg, kLabel);
  }

  // SeqBlocks' hooks. Tree blocks (a table's first `depth`) hold committed tokens, which are
  // never written, so copy-on-write starts past them.
  static int32_t committed_blocks(const Seq& seq) { return seq.depth; }
  int32_t available() const { return pool_.num_free() + pool_.num_cached(); }
  // Evicts unlocked tree leaves until `need` blocks are free; the caller has checked that free +
  // evictable covers it.
  void make_free(int32_t need) {
    if (pool_.num_free() < need) tree_.evict(need - pool_.num_free(), pool_, &evicted_, &spilled_);
  }
  static size_t first_writable(const Seq& seq) { return static_cast<size_t>(seq.depth); }
  static std::span<std::vector<int32_t>> tables(Seq& seq) { return seq.tables; }
  static std::span<const std::vector<int32_t>> tables(const Seq& seq) { return seq.tables; }
  int32_t window_of(int32_t group) const { return windows_[static_cast<size_t>(group)]; }
  int32_t num_tables() const { return static_cast<int32_t>(windows_.size()); }

  // A prefix hit: every group's blocks for its first `length` positions (a windowed group's
  // before its window -1: not held), and the tree path to lock.
  struct Hit {
    int32_t length = 0;
    std::vector<std::vector<int32_t>> tables;  // [n_groups]
    Match path;
  };

  // Why the lookup of req (limited to `limit` tokens) missed what it missed: see the top.
  block_cache::Miss miss_reason(const loom_request_view& req, int64_t limit, const Hit& m) const {
    const int32_t hits = m.length;
    if (req.token_ids == nullptr || hits >= lookup_blocks(req, limit)) return block_cache::Miss::kPartialBlock;
    const std::span<const int32_t> tokens = tokens_of(req);
    const size_t bs = static_cast<size_t>(block_size_);
    uint64_t hash = block_cache::kRootHash;
    for (size_t i = 0; i <= static_cast<size_t>(hits); ++i)
      hash = block_cache::block_hash(hash, req.cache_salt, tokens.subspan(i * bs, bs));
    if (evicted_.contains(hash)) return block_cache::Miss::kEvicted;
    return tree_.cached_under_other_salt(req.cache_salt, tokens, hits + 1) ? block_cache::Miss::kSaltMismatch
                                                                           : block_cache::Miss::kNoMatch;
  }
  static std::span<const int32_t> tokens_of(const loom_request_view& req) {
    return {req.token_ids, static_cast<size_t>(std::max(req.num_tokens, 0))};
  }

  // Grows every table to `need` blocks, evicting cached blocks when the free ones run out. The
  // caller has checked that free + evictable covers it.
  void grow(Seq& seq, int32_t need) {
    int32_t extra = 0;
    for (const std::vector<int32_t>& table : seq.tables) extra += std::max(0, need - static_cast<int32_t>(table.size()));
    if (extra <= 0) return;
    make_free(extra);
    for (std::vector<int32_t>& table : seq.tables)
      while (static_cast<int32_t>(table.size()) < need) table.push_back(pool_.take());
  }

  // The tree's blocks for req's leading full blocks, at most (limit - 1) tokens' worth: the
  // last token is always computed. A full-attention group needs the whole path; a windowed group
  // only the blocks the window of the first computed token reaches (its tombstones before that
  // do not stop a hit). Only a sequence starting from scratch can match.
  Hit match(const loom_request_view& req, int64_t limit) const {
    Hit hit;
    hit.tables.resize(windows_.size());
    if (!prefix_caching_ || req.token_ids == nullptr || req.num_computed_tokens != 0) return hit;
    const std::span<const int32_t> tokens = tokens_of(req);
    Match walked = tree_.match(req.cache_salt, tokens, lookup_blocks(req, limit));
    const size_t groups = windows_.size();
    const int64_t n = block_cache::longest_held_hit(walked.length, windows_, block_size_, [&](size_t g, int64_t i) {
      return walked.blocks[static_cast<size_t>(i) * groups + g] >= 0;
    });
    hit.length = static_cast<int32_t>(n);
    hit.path = n == walked.length ? std::move(walked) : tree_.match(req.cache_salt, tokens, hit.length);
    for (size_t g = 0; g < groups; ++g) {
      const int64_t first = block_cache::first_block_in_window(n * block_size_, windows_[g], block_size_);
      for (int64_t i = 0; i < n; ++i)
        hit.tables[g].push_back(i < first ? -1 : hit.path.blocks[static_cast<size_t>(i) * groups + g]);
    }
    return hit;
  }

  // How many blocks a new sequence is short of, reusing the hit: positive means it cannot be
  // allocated now. Cached hits are counted out of the evictable supply, which they leave.
  int32_t extra_blocks(const loom_request_view& req, int32_t num_new_tokens, const Hit& hit) const {
    int32_t evictable_hits = 0, fresh = 0;
    for (const std::vector<int32_t>& table : hit.tables) {
      for (int32_t b : table) evictable_hits += b >= 0 && pool_.refcount(b) == 0 ? 1 : 0;
      fresh += blocks_for(req, num_new_tokens) - static_cast<int32_t>(table.size());
    }
    return fresh - (available() - evictable_hits);
  }

  sdk::Host host_;
  int32_t block_size_;
  bool prefix_caching_;
  bool check_invariants_;
  std::vector<int32_t> windows_;  // [n_groups] each group's sliding window, 0: none
  BlockPool pool_;
  RadixTree tree_;
  // Chained hashes of evicted blocks, for evicted misses: 4 pools' worth, enough to explain a
  // prompt that returns after a few turnovers of the pool, and bounded.
  block_cache::EvictedHashes evicted_;
  block_cache::EvictedBlocks spilled_;  // evicted blocks not yet taken by the host (1.3)
  block_cache::PrefixStats stats_;
};

}  // namespace
}  // namespace loom::radix

LOOM_CACHE_PLUGIN(loom::radix::RadixCache, "radix", "0.1.0",
                  "paged KV blocks with a radix-tree prefix cache (per cache_salt) and LRU leaf eviction");
