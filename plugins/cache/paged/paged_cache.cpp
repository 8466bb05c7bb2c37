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
//
// Written against the C ABI directly (not sdk.hpp) because fits() must give its reason in the
// error buffer while returning LOOM_OK with *ok = 0.
#include <boost/dll/alias.hpp>

#include <algorithm>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "block_copies.hpp"
#include "block_pool.hpp"
#include "loom/cache.h"
#include "loom/sdk_core.hpp"
#include "block_cache_abi.hpp"
#include "kv_pool_config.hpp"

namespace loom::paged {
namespace {

using sdk::Error;

class PagedCache {
 public:
  static constexpr const char* kLabel = "cache paged";

  PagedCache(const loom_host_api* host, const loom_cache_create_args& args, const kv_pool_config::Config& cfg)
      : host_(host),
        block_size_(cfg.block_size),
        prefix_caching_(cfg.enable_prefix_caching),
#ifdef NDEBUG
        check_invariants_(cfg.check_invariants),
#else
        check_invariants_(true),
#endif
        pool_(pool_size(args, cfg)) {
    host_.info(num_blocks(), " blocks x ", block_size_, " tokens, prefix caching ", prefix_caching_ ? "on" : "off",
               check_invariants_ ? ", invariants checked after every change" : "");
  }

  int32_t num_blocks() const { return pool_.num_blocks(); }
  int32_t block_size() const { return block_size_; }

  bool fits(int32_t max_total_tokens, loom_error_buf* err) const {
    const int64_t capacity = static_cast<int64_t>(num_blocks()) * block_size_;
    if (max_total_tokens <= capacity) return true;
    sdk::write_error(err, "max_total_tokens " + std::to_string(max_total_tokens) + " exceeds the whole KV pool: " +
                              std::to_string(num_blocks()) + " blocks x " + std::to_string(block_size_) +
                              " tokens = " + std::to_string(capacity) + " tokens");
    return false;
  }

  // Leading tokens with registered K/V, leaving at least the last token to compute; for a forked
  // child not yet allocated, the tokens it shares with its parent.
  int32_t match_prefix(const loom_request_view& req) const {
    if (const auto it = seqs_.find(req.request_id); it != seqs_.end() && it->second.forked >= 0)
      return it->second.forked;
    return static_cast<int32_t>(match(req, req.num_tokens).size()) * block_size_;
  }

  bool can_allocate(const loom_request_view& req, int32_t num_new_tokens) const {
    const auto it = seqs_.find(req.request_id);
    if (it != seqs_.end())
      return blocks_short(it->second, write_start(it->second, req), room(req, num_new_tokens)) <= pool_.num_available();
    return extra_blocks(req, num_new_tokens, match(req, room(req, num_new_tokens))) <= 0;
  }

  void allocate(const loom_request_view& req, int32_t num_new_tokens, int32_t* num_cached_tokens) {
    if (const auto it = seqs_.find(req.request_id); it != seqs_.end()) {
      if (it->second.forked < 0)
        throw Error(LOOM_ERR_INVALID_ARGUMENT,
                    "cache paged: request " + std::to_string(req.request_id) + " already holds blocks");
      allocate_forked(req, it->second, num_new_tokens, num_cached_tokens);
      return;
    }
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

  void append(const loom_request_view& req, int32_t num_new_tokens) {
    Seq& seq = find(req.request_id);
    if (seq.forked >= 0)
      throw Error(LOOM_ERR_INVALID_ARGUMENT, "cache paged: forked request " + std::to_string(req.request_id) +
                                                 " must be allocated before it is appended to");
    make_room(seq, req.request_id, req.num_computed_tokens, room(req, num_new_tokens));
  }

  // The child holds the parent's blocks for parent.num_computed_tokens tokens, refcounts + 1, and
  // the parent's chain hashes for the full ones it registered. Takes no block, so never fails
  // for lack of memory.
  void fork(const loom_request_view& parent, uint64_t child_id) {
    const Seq& from = find(parent.request_id);
    if (from.forked >= 0)
      throw Error(LOOM_ERR_INVALID_ARGUMENT, "cache paged: request " + std::to_string(parent.request_id) +
                                                 " is a fork not yet allocated; fork its parent instead");
    if (seqs_.count(child_id) != 0)
      throw Error(LOOM_ERR_INVALID_ARGUMENT, "cache paged: fork child " + std::to_string(child_id) + " already holds blocks");
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

  loom_block_copy_list take_block_copies() { return copies_.take(); }

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

  void free_seq(uint64_t request_id) {
    const auto it = seqs_.find(request_id);
    if (it == seqs_.end()) return;
    const std::vector<int32_t>& blocks = it->second.blocks;
    for (auto b = blocks.rbegin(); b != blocks.rend(); ++b) pool_.release(*b);  // tail first: evicted first
    seqs_.erase(it);
  }

  loom_block_list block_table(uint64_t request_id) const {
    const auto it = seqs_.find(request_id);
    if (it == seqs_.end())
      throw Error(LOOM_ERR_NOT_FOUND, "cache paged: request " + std::to_string(request_id) + " holds no blocks");
    return loom_block_list{it->second.blocks.data(), static_cast<int32_t>(it->second.blocks.size())};
  }

  void usage(loom_cache_usage* out) const {
    out->total_blocks = pool_.num_blocks();
    out->free_blocks = pool_.num_free();
    out->used_blocks = pool_.num_used();
    out->cached_blocks = pool_.num_cached();
    out->num_seqs = static_cast<int32_t>(seqs_.size());
    stats_.write(out);
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
  struct Seq {
    std::vector<int32_t> blocks;  // the block table
    std::vector<uint64_t> hashes;  // chain hashes of the leading full blocks known to be computed
    std::vector<uint64_t> contents;  // their content-only chain hashes (salt_mismatch misses)
    int32_t forked = -1;           // >= 0: made by fork, not yet allocated; shares this many tokens
  };
  struct Hit {
    int32_t block;
    uint64_t hash;
    uint64_t content;
  };

  static int32_t pool_size(const loom_cache_create_args& args, const kv_pool_config::Config& cfg) {
    int64_t blocks = cfg.num_blocks;
    if (blocks == 0) {
      if (args.bytes_per_token <= 0)
        throw Error(LOOM_ERR_INVALID_ARGUMENT, "cache paged: bytes_per_token must be positive");
      blocks = cfg.kv_memory / (static_cast<int64_t>(cfg.block_size) * args.bytes_per_token);
      if (blocks < 1)
        throw sdk::ConfigError("cache paged: kv_memory " + std::to_string(cfg.kv_memory) +
                               " bytes holds no block of " + std::to_string(cfg.block_size) + " tokens x " +
                               std::to_string(args.bytes_per_token) + " bytes per token");
    }
    return static_cast<int32_t>(std::min<int64_t>(blocks, INT32_MAX));
  }

  Seq& find(uint64_t request_id) {
    const auto it = seqs_.find(request_id);
    if (it == seqs_.end())
      throw Error(LOOM_ERR_NOT_FOUND, "cache paged: request " + std::to_string(request_id) + " holds no blocks");
    return it->second;
  }

  int64_t room(const loom_request_view& req, int32_t num_new_tokens) const {
    return static_cast<int64_t>(req.num_computed_tokens) + num_new_tokens;
  }
  int32_t blocks_for_tokens(int64_t tokens) const {
    return static_cast<int32_t>((std::max<int64_t>(0, tokens) + block_size_ - 1) / block_size_);
  }
  int32_t blocks_for(const loom_request_view& req, int32_t num_new_tokens) const {
    return blocks_for_tokens(room(req, num_new_tokens));
  }

  // Where the next write into seq begins: a forked child's first own token, else the view's.
  static int64_t write_start(const Seq& seq, const loom_request_view& req) {
    return seq.forked >= 0 ? seq.forked : req.num_computed_tokens;
  }

  // Table indices of the blocks a write of tokens [start, end) touches that another table also
  // holds: each needs a fresh block and a copy before it is written.
  std::vector<size_t> shared_written(const Seq& seq, int64_t start, int64_t end) const {
    std::vector<size_t> out;
    const size_t first = static_cast<size_t>(std::max<int64_t>(start, 0) / block_size_);
    const size_t last = std::min(static_cast<size_t>(blocks_for_tokens(end)), seq.blocks.size());
    for (size_t i = first; i < last; ++i)
      if (pool_.refcount(seq.blocks[i]) > 1) out.push_back(i);
    return out;
  }

  // Blocks seq must take to write tokens [start, end): growth plus copy-on-write.
  int32_t blocks_short(const Seq& seq, int64_t start, int64_t end) const {
    const int32_t grow = std::max(0, blocks_for_tokens(end) - static_cast<int32_t>(seq.blocks.size()));
    return grow + static_cast<int32_t>(shared_written(seq, start, end).size());
  }

  // Gives seq its own blocks for tokens [start, end): copies of shared ones, then new ones at the
  // end. LOOM_ERR_OUT_OF_MEMORY (state unchanged) when the free and evictable blocks are short.
  void make_room(Seq& seq, uint64_t id, int64_t start, int64_t end) {
    const int32_t extra = blocks_short(seq, start, end);
    if (extra > pool_.num_available())
      throw Error(LOOM_ERR_OUT_OF_MEMORY, "cache paged: request " + std::to_string(id) + " needs " +
                                              std::to_string(extra) + " more blocks, " +
                                              std::to_string(pool_.num_available()) + " free or evictable");
    for (size_t i : shared_written(seq, start, end)) {
      const int32_t old = seq.blocks[i];
      const int32_t copy = pool_.take();  // old is referenced: take() cannot evict it
      copies_.push(old, copy);
      pool_.release(old);
      seq.blocks[i] = copy;
    }
    while (static_cast<int32_t>(seq.blocks.size()) < blocks_for_tokens(end)) seq.blocks.push_back(pool_.take());
  }

  // A forked child's allocate: its shared tokens are the cached ones. Not a prefix lookup, so
  // the prefix counters do not count it.
  void allocate_forked(const loom_request_view& req, Seq& seq, int32_t num_new_tokens, int32_t* num_cached_tokens) {
    if (req.num_tokens <= seq.forked)
      throw Error(LOOM_ERR_INVALID_ARGUMENT, "cache paged: forked request " + std::to_string(req.request_id) +
                                                 " shares " + std::to_string(seq.forked) + " tokens but its view holds " +
                                                 std::to_string(req.num_tokens) + ": it needs one of its own");
    make_room(seq, req.request_id, seq.forked, room(req, num_new_tokens));
    if (num_cached_tokens != nullptr) *num_cached_tokens = seq.forked;
    seq.forked = -1;
  }

  // Full blocks a lookup limited to `limit` tokens may use (the last token is always computed).
  int64_t lookup_blocks(const loom_request_view& req, int64_t limit) const {
    const int64_t usable = std::min<int64_t>(limit, req.num_tokens) - 1;
    return usable > 0 ? usable / block_size_ : 0;
  }

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
  std::unordered_map<uint64_t, Seq> seqs_;
  block_cache::BlockCopies copies_;
  block_cache::PrefixStats stats_;
};

const loom_plugin_desc kDesc = block_cache::Abi<PagedCache>::descriptor(
    "paged", "paged KV blocks grown per sequence, with hash-chained prefix caching and LRU eviction");

}  // namespace
}  // namespace loom::paged

const loom_plugin_desc* loom_cache_paged_entry() { return &loom::paged::kDesc; }
BOOST_DLL_ALIAS(loom_cache_paged_entry, loom_plugin_entry_v1)
