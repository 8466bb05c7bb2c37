// cache/radix: the prefix index, a radix tree over token ids with one subtree per cache_salt.
//
// Matching walks the tree token by token, but K/V lives in blocks, so only block-aligned
// prefixes are reusable: every edge holds a whole number of blocks (its tokens and the block ids
// covering them), only full committed blocks are inserted, and nodes split only at block
// boundaries. Children are keyed by the tokens of their first block, which is what makes a block
// boundary the only place two branches can part.
//
// Locking: a node's lock_ref counts the live sequences whose path runs through it (a prefix hit
// locks the matched path, an insert locks the new node). A locked node's blocks are in those
// sequences' tables, so they are never evicted. Eviction trims unlocked leaves from their tail,
// least recently used leaf first (a logical clock stamped on every node of a path that is
// matched, inserted or released), and a parent left without children becomes a leaf in turn.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "block_pool.hpp"
#include "common/evicted_blocks.hpp"
#include "common/prefix_misses.hpp"

namespace loom::radix {

struct Node {
  uint64_t id = 0;          // creation order: breaks LRU ties deterministically
  Node* parent = nullptr;   // null for a salt's root, which holds no tokens
  std::vector<int32_t> tokens;  // the edge's tokens: blocks.size() * block_size of them
  std::vector<int32_t> blocks;  // the K/V blocks covering them
  std::map<std::vector<int32_t>, std::unique_ptr<Node>> children;  // keyed by their first block
  int32_t lock_ref = 0;
  uint64_t last_access = 0;
  uint64_t salt = 0;        // the cache_salt of the subtree (read at its root)
};

// A prefix match: the path's blocks, and where it ends -- after `node` (null: at the root) and
// possibly `partial` blocks into its child `into`, which lock() splits off first.
struct Match {
  std::vector<int32_t> blocks;
  Node* node = nullptr;
  Node* into = nullptr;
  int32_t partial = 0;
};

class RadixTree {
 public:
  explicit RadixTree(int32_t block_size) : block_size_(block_size) {}

  // Tokens' leading full blocks found in salt's subtree, at most max_blocks of them. No change.
  Match match(uint64_t salt, std::span<const int32_t> tokens, int32_t max_blocks) const;
  // Locks a match's path for one more sequence (splitting a partially matched edge) and stamps
  // it; returns the deepest node now on the path (null when nothing matched).
  Node* lock(const Match& m);
  // Releases one sequence's lock on the path ending at node (null: nothing) and stamps it.
  void unlock(Node* node);
  // Inserts blocks [depth, full) of a sequence whose path so far ends at node (null: the salt's
  // root) after depth blocks, locking what it adds or walks into for that sequence; returns the
  // new end of the path. Content another sequence cached first is adopted: the table's entries
  // are replaced by the tree's blocks (same tokens, same K/V) and its own copies released
  // (*adopted counts them).
  Node* insert(uint64_t salt, Node* node, int32_t depth, std::span<const int32_t> tokens,
               std::vector<int32_t>& table, int32_t full, BlockPool& pool, int32_t* adopted);
  // Frees up to n cached blocks back to the pool, LRU leaves first; returns how many. The chained
  // hash (block_hash.hpp) of each evicted block's prefix goes into *evicted when it is given.
  // Each evicted block's id, hash and salt go into *spilled when it is given (interface 1.4).
  int32_t evict(int32_t n, BlockPool& pool, block_cache::EvictedHashes* evicted = nullptr,
                block_cache::EvictedBlocks* spilled = nullptr);
  // Whether tokens' first n_blocks full blocks are all cached under some salt other than salt.
  bool cached_under_other_salt(uint64_t salt, std::span<const int32_t> tokens, int32_t n_blocks) const;

  // Throws (LOOM_ERR_INTERNAL) when the tree disagrees with the pool or with the sequences'
  // paths: paths[i] is a live sequence's path end, its table begins with the path's blocks.
  struct SeqPath {
    Node* node;
    int32_t depth;
    const std::vector<int32_t>* table;
  };
  void check(const BlockPool& pool, const std::vector<SeqPath>& paths) const;

  int32_t num_nodes() const;  // excluding the salt roots

 private:
  Node* split(Node* n, int32_t k);
  std::vector<int32_t> key_at(std::span<const int32_t> tokens, size_t block) const;
  void stamp(Node* n);
  // The chained hashes of every block on the path from the salt's root down to n.
  std::vector<uint64_t> path_hashes(const Node* n) const;
  void check_node(const Node& n, const BlockPool& pool, std::vector<uint8_t>& seen, int32_t& count) const;

  int32_t block_size_;
  uint64_t clock_ = 0;
  uint64_t next_id_ = 0;
  std::map<uint64_t, std::unique_ptr<Node>> roots_;  // one per cache_salt
};

}  // namespace loom::radix
