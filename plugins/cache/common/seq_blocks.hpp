// cache/paged, cache/radix (cache/common): the per-sequence block tables and their copy-on-write (interface
// 1.1 fork). Both caches give every sequence a table of fixed-size blocks that grows block by
// block; fork shares a parent's blocks with a child by refcount, and whoever first writes into
// a block still shared gets a fresh one in its table plus a queued copy old -> new. Only the
// prefix cache behind the tables differs, so that stays in each cache.
//
// Block-table groups (interface 1.5): a sequence may hold one table per group, all from the one
// pool; a group with a sliding window releases the blocks wholly before the window of the next
// token it computes (entry -1) whenever room is made, and everything else (room, copy-on-write,
// trim) acts on every table.
//
// SeqBlocks is a CRTP base. Seq must have `int32_t forked` (>= 0: made by fork, not yet
// allocated; shares this many tokens). Cache must provide (the base is its friend): kLabel
// ("cache paged"), block_size_, prefix_caching_, pool_ (refcount / take / release / counts), stats_
// (block_cache::PrefixStats), static tables(seq) (a span of the sequence's
// std::vector<int32_t> tables, group 0 first, const and not), num_tables() (how many a sequence
// holds), window_of(group) (0: none),
// available() (free + evictable blocks), make_free(n) (makes n blocks free before they are
// taken, or nothing where take() evicts by itself), first_writable(seq) (table index below
// which blocks hold committed tokens that are never written) and committed_blocks(seq) (how many
// leading blocks hold registered prefix tokens; trim never goes below them).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "block_copies.hpp"
#include "block_hash.hpp"
#include "kv_pool_config.hpp"
#include "loom/cache.h"
#include "loom/sdk_core.hpp"
#include "window_blocks.hpp"

namespace loom::block_cache {

template <class Cache, class Seq>
class SeqBlocks {
 public:
  int32_t num_blocks() const { return self().pool_.num_blocks(); }
  int32_t block_size() const { return self().block_size_; }
  // The block-pool caches' keys, every message starting with Cache::kLabel.
  static const sdk::ConfigSpec<kv_pool_config::Config>& config_spec() {
    static const auto spec = kv_pool_config::block_cache_spec(Cache::kLabel);
    return spec;
  }

  loom_cache_layout layout() const { return {sizeof(loom_cache_layout), num_blocks(), block_size()}; }

  // Whether a request of max_total_tokens could ever fit in the whole, empty pool: with several
  // tables, in its share (a prompt prefilled at once fills even a windowed group's table).
  sdk::Verdict fits(int32_t max_total_tokens) const {
    return kv_pool_config::pool_fits(max_total_tokens, num_blocks() / self().num_tables(), block_size());
  }

  loom_block_copy_list take_block_copies() { return copies_.take(); }

  // Block accounting from the pool, and the cache's prefix counters (Cache::stats_).
  void usage(loom_cache_usage* out) const {
    const auto& pool = self().pool_;
    out->total_blocks = pool.num_blocks();
    out->free_blocks = pool.num_free();
    out->used_blocks = pool.num_used();
    out->cached_blocks = pool.num_cached();
    out->num_seqs = static_cast<int32_t>(seqs_.size());
    self().stats_.write(out);
  }

  loom_block_list block_table(uint64_t request_id) const { return table_of(request_id, 0); }

  // Interface 1.4: the chained hashes of req's usable full blocks (at most those that leave its
  // last token to compute), the keys group 0 registers them under; 1.6: the same for one group,
  // under its salt (block_cache::group_salt), the keys take_evicted reports its blocks under.
  int32_t block_hashes(const loom_request_view& req, uint64_t* out, int32_t capacity) const {
    return group_block_hashes(req, 0, out, capacity);
  }
  int32_t group_block_hashes(const loom_request_view& req, int32_t group, uint64_t* out, int32_t capacity) const {
    if (group < 0 || group >= self().num_tables())
      throw sdk::Error(LOOM_ERR_INVALID_ARGUMENT, label() + ": group " + std::to_string(group) + " is outside the " +
                                                      std::to_string(self().num_tables()) + " block-table groups");
    if (!self().prefix_caching_ || req.token_ids == nullptr) return 0;
    const int32_t n = std::min(lookup_blocks(req, req.num_tokens), capacity);
    const uint64_t salt = group_salt(req.cache_salt, static_cast<size_t>(group));
    const size_t bs = static_cast<size_t>(self().block_size_);
    uint64_t parent = kRootHash;
    for (int32_t i = 0; i < n; ++i) {
      parent = block_hash(parent, salt, std::span<const int32_t>(req.token_ids + static_cast<size_t>(i) * bs, bs));
      out[i] = parent;
    }
    return std::max(n, 0);
  }

  void append(const loom_request_view& req, int32_t num_new_tokens) {
    Seq& seq = find(req.request_id);
    if (seq.forked >= 0)
      throw sdk::Error(LOOM_ERR_INVALID_ARGUMENT, label() + ": forked request " + std::to_string(req.request_id) +
                                                      " must be allocated before it is appended to");
    make_room(seq, req.request_id, req.num_computed_tokens, room(req, num_new_tokens));
  }

  // Interface 1.3: the sequence keeps the blocks of its first num_tokens tokens; the tail is
  // released, last block first (so an evictable tail goes before its head). Never below the
  // blocks holding committed (registered) tokens: Cache::committed_blocks(seq).
  void trim(const loom_request_view& req, int32_t num_tokens) {
    Seq& seq = find(req.request_id);
    const int32_t keep = blocks_for_tokens(num_tokens);
    if (seq.forked >= 0 || num_tokens < 0 || keep < Cache::committed_blocks(seq))
      throw sdk::Error(LOOM_ERR_INVALID_ARGUMENT, label() + ": cannot trim request " + std::to_string(req.request_id) +
                                                      " to " + std::to_string(num_tokens) +
                                                      " tokens: below its committed blocks, or a fork not yet allocated");
    for (std::vector<int32_t>& table : Cache::tables(seq)) {
      while (static_cast<int32_t>(table.size()) > keep) {
        if (table.back() >= 0) self().pool_.release(table.back());
        table.pop_back();
      }
    }
  }

 protected:
  // A forked child not yet allocated: the tokens it shares with its parent; else -1.
  int32_t forked_tokens(uint64_t request_id) const {
    const auto it = seqs_.find(request_id);
    return it != seqs_.end() ? it->second.forked : -1;
  }

  // can_allocate for a request that already holds a table (a forked child, or append room);
  // nullopt when it holds none, and the caller looks up its prefix instead.
  std::optional<bool> held_can_allocate(const loom_request_view& req, int32_t num_new_tokens) const {
    const auto it = seqs_.find(req.request_id);
    if (it == seqs_.end()) return std::nullopt;
    const int64_t start = write_start(it->second, req);
    return blocks_short(it->second, start, room(req, num_new_tokens)) - releasable(it->second, start) <=
           self().available();
  }

  // allocate for a request that already holds a table: a forked child gets its own blocks for
  // what it writes, anything else is an error. False when it holds none (a new sequence).
  bool allocate_held(const loom_request_view& req, int32_t num_new_tokens, int32_t* num_cached_tokens) {
    const auto it = seqs_.find(req.request_id);
    if (it == seqs_.end()) return false;
    if (it->second.forked < 0)
      throw sdk::Error(LOOM_ERR_INVALID_ARGUMENT,
                       label() + ": request " + std::to_string(req.request_id) + " already holds blocks");
    allocate_forked(req, it->second, num_new_tokens, num_cached_tokens);
    return true;
  }

  // The parent's table for fork(parent, child_id), after the checks every cache makes.
  const Seq& fork_source(const loom_request_view& parent, uint64_t child_id) {
    const Seq& from = find(parent.request_id);
    if (from.forked >= 0)
      throw sdk::Error(LOOM_ERR_INVALID_ARGUMENT, label() + ": request " + std::to_string(parent.request_id) +
                                                      " is a fork not yet allocated; fork its parent instead");
    if (seqs_.count(child_id) != 0)
      throw sdk::Error(LOOM_ERR_INVALID_ARGUMENT,
                       label() + ": fork child " + std::to_string(child_id) + " already holds blocks");
    return from;
  }

  // One group's table of a held sequence (group 0: block_table's).
  loom_block_list table_of(uint64_t request_id, int32_t group) const {
    const auto it = seqs_.find(request_id);
    if (it == seqs_.end()) throw_not_held(request_id);
    const auto tables = Cache::tables(it->second);
    if (group < 0 || static_cast<size_t>(group) >= tables.size())
      throw sdk::Error(LOOM_ERR_INVALID_ARGUMENT, label() + ": group " + std::to_string(group) + " is outside the " +
                                                      std::to_string(tables.size()) + " block-table groups");
    const std::vector<int32_t>& t = tables[static_cast<size_t>(group)];
    return loom_block_list{t.data(), static_cast<int32_t>(t.size())};
  }

  Seq& find(uint64_t request_id) {
    const auto it = seqs_.find(request_id);
    if (it == seqs_.end()) throw_not_held(request_id);
    return it->second;
  }

  static int64_t room(const loom_request_view& req, int32_t num_new_tokens) {
    return static_cast<int64_t>(req.num_computed_tokens) + num_new_tokens;
  }
  int32_t blocks_for_tokens(int64_t tokens) const {
    const int32_t bs = self().block_size_;
    return static_cast<int32_t>((std::max<int64_t>(0, tokens) + bs - 1) / bs);
  }
  int32_t blocks_for(const loom_request_view& req, int32_t num_new_tokens) const {
    return blocks_for_tokens(room(req, num_new_tokens));
  }

  // Full blocks a lookup limited to `limit` tokens may use (the last token is always computed).
  int32_t lookup_blocks(const loom_request_view& req, int64_t limit) const {
    const int64_t usable = std::min<int64_t>(limit, req.num_tokens) - 1;
    return usable > 0 ? static_cast<int32_t>(usable / self().block_size_) : 0;
  }

  std::unordered_map<uint64_t, Seq> seqs_;
  BlockCopies copies_;

 private:
  const Cache& self() const { return static_cast<const Cache&>(*this); }
  Cache& self() { return static_cast<Cache&>(*this); }
  static std::string label() { return Cache::kLabel; }

  // Leading blocks of a group's table that no query from position `start` on reads: those wholly
  // before start - window + 1 (none without a window).
  int32_t out_of_window(size_t group, int64_t start) const {
    return static_cast<int32_t>(
        first_block_in_window(start, self().window_of(static_cast<int32_t>(group)), self().block_size_));
  }

  // Blocks a write from `start` would release and so make available: held entries out of their
  // window that no other table shares.
  int32_t releasable(const Seq& seq, int64_t start) const {
    int32_t n = 0;
    const auto tables = Cache::tables(seq);
    for (size_t g = 0; g < tables.size(); ++g) {
      const size_t end = std::min(static_cast<size_t>(out_of_window(g, start)), tables[g].size());
      for (size_t i = 0; i < end; ++i) n += tables[g][i] >= 0 && self().pool_.refcount(tables[g][i]) == 1 ? 1 : 0;
    }
    return n;
  }

  // Releases every group's blocks out of the window of a write from `start`.
  void release_out_of_window(Seq& seq, int64_t start) {
    auto tables = Cache::tables(seq);
    for (size_t g = 0; g < tables.size(); ++g) {
      const size_t end = std::min(static_cast<size_t>(out_of_window(g, start)), tables[g].size());
      for (size_t i = 0; i < end; ++i) {
        if (tables[g][i] < 0) continue;
        self().pool_.release(tables[g][i]);
        tables[g][i] = -1;
      }
    }
  }

  [[noreturn]] static void throw_not_held(uint64_t request_id) {
    throw sdk::Error(LOOM_ERR_NOT_FOUND, label() + ": request " + std::to_string(request_id) + " holds no blocks");
  }

  // Where the next write into seq begins: a forked child's first own token, else the view's.
  static int64_t write_start(const Seq& seq, const loom_request_view& req) {
    return seq.forked >= 0 ? seq.forked : req.num_computed_tokens;
  }

  // Indices in one of seq's tables of the blocks a write of tokens [start, end) touches that
  // another table also holds: each needs a fresh block and a copy before it is written.
  std::vector<size_t> shared_written(const Seq& seq, const std::vector<int32_t>& table, int64_t start,
                                     int64_t end) const {
    std::vector<size_t> out;
    const size_t first = std::max(static_cast<size_t>(std::max<int64_t>(start, 0) / self().block_size_),
                                  self().first_writable(seq));
    const size_t last = std::min(static_cast<size_t>(blocks_for_tokens(end)), table.size());
    for (size_t i = first; i < last; ++i)
      if (table[i] >= 0 && self().pool_.refcount(table[i]) > 1) out.push_back(i);
    return out;
  }

  // Blocks seq must take to write tokens [start, end), over all its tables: growth plus
  // copy-on-write.
  int32_t blocks_short(const Seq& seq, int64_t start, int64_t end) const {
    int32_t n = 0;
    for (const std::vector<int32_t>& table : Cache::tables(seq)) {
      n += std::max(0, blocks_for_tokens(end) - static_cast<int32_t>(table.size()));
      n += static_cast<int32_t>(shared_written(seq, table, start, end).size());
    }
    return n;
  }

  // Gives seq its own blocks for tokens [start, end): copies of shared ones, then new ones at the
  // end. LOOM_ERR_OUT_OF_MEMORY (state unchanged) when the free and evictable blocks are short.
  // Windowed groups first release what falls out of their windows (which counts as available).
  void make_room(Seq& seq, uint64_t id, int64_t start, int64_t end) {
    const int32_t extra = blocks_short(seq, start, end) - releasable(seq, start);
    if (extra > self().available())
      throw sdk::Error(LOOM_ERR_OUT_OF_MEMORY, label() + ": request " + std::to_string(id) + " needs " +
                                                   std::to_string(extra) + " more blocks, " +
                                                   std::to_string(self().available()) + " free or evictable");
    release_out_of_window(seq, start);
    self().make_free(blocks_short(seq, start, end));
    auto& pool = self().pool_;
    for (std::vector<int32_t>& table : Cache::tables(seq)) {
      for (size_t i : shared_written(seq, table, start, end)) {
        const int32_t old = table[i];
        const int32_t copy = pool.take();  // old is referenced: take() cannot evict it
        copies_.push(old, copy);
        pool.release(old);  // still held by the other table
        table[i] = copy;
      }
      while (static_cast<int32_t>(table.size()) < blocks_for_tokens(end)) table.push_back(pool.take());
    }
  }

  // A forked child's allocate: its shared tokens are the cached ones. Not a prefix lookup, so
  // the prefix counters do not count it.
  void allocate_forked(const loom_request_view& req, Seq& seq, int32_t num_new_tokens, int32_t* num_cached_tokens) {
    if (req.num_tokens <= seq.forked)
      throw sdk::Error(LOOM_ERR_INVALID_ARGUMENT, label() + ": forked request " + std::to_string(req.request_id) +
                                                      " shares " + std::to_string(seq.forked) +
                                                      " tokens but its view holds " + std::to_string(req.num_tokens) +
                                                      ": it needs one of its own");
    make_room(seq, req.request_id, seq.forked, room(req, num_new_tokens));
    if (num_cached_tokens != nullptr) *num_cached_tokens = seq.forked;
    seq.forked = -1;
  }
};

}  // namespace loom::block_cache
