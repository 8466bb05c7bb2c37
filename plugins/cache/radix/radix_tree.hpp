// cache/radix: the prefix index, a radix tree over token ids with one subtree per cache_salt.
//
// Matching walks the tree token by token, but K/V lives in blocks, so only block-aligned
// prefixes are reusable: every edge holds a whole number of blocks (its tokens and the block ids
// covering them), only full committed blocks are inserted, and nodes split only at block
// boundaries. Children are keyed by the tokens of their first block, which is what makes a block
// boundary the only place two branches can part.
//
// Block-table groups (cache interface 1.5): every block position of an edge holds one block per
// group (a group's block holds K/V of that group's layers). A windowed group's entry may be -1, a
// tombstone: the block was released from the tree while the path stayed, because no query whose
// window reaches it was left (vLLM's hybrid allocator and SGLang's SWA tree do the same). Without
// groups every position holds one block and nothing is a tombstone.
//
// Locking: a node's lock_ref counts the live sequences whose path runs through it (a prefix hit
// locks the matched path, an insert locks the new node). A locked node's full-attention blocks
// are in those sequences' tables, so they are never evicted. Eviction trims unlocked leaves from
// their tail, least recently used leaf first (a logical clock stamped on every node of a path that
// is matched, inserted or released), and a parent left without children becomes a leaf in turn.
// When no unlocked leaf is left, it tombstones the windowed groups' blocks that no table holds
// (they left every live window) in locked nodes, least recently used node first, each node from
// its first position (the oldest tokens): the tree stamps a live path at every commit, so these
// go after every finished request's cached prefix.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "block_pool.hpp"
#include "common/evicted_blocks.hpp"
#include "common/prefix_misses.hpp"

namespace loom::radix {

struct Node {
  uint64_t id = 0;          // creation order: breaks LRU ties deterministically
  Node* parent = nullptr;   // null for a salt's root, which holds no tokens
  std::vector<int32_t> tokens;  // the edge's tokens: positions * block_size of them
  // The K/V blocks covering them, [positions * groups] position-major: position j's block of
  // group g is blocks[j * groups + g]; -1 is a windowed group's tombstone.
  std::vector<int32_t> blocks;
  std::map<std::vector<int32_t>, std::unique_ptr<Node>> children;  // keyed by their first block
  int32_t lock_ref = 0;
  uint64_t last_access = 0;
  uint64_t salt = 0;        // the cache_salt of the subtree (read at its root)
};

// A prefix match: the path's blocks ([length * groups] position-major, tombstones -1), and where
// it ends -- after `node` (null: at the root) and possibly `partial` positions into its child
// `into`, which lock() splits off first.
struct Match {
  int32_t length = 0;  // block positions matched
  std::vector<int32_t> blocks;
  Node* node = nullptr;
  Node* into = nullptr;
  int32_t partial = 0;
};

class RadixTree {
 public:
  // windows: each group's sliding window in tokens (0: full attention), at least one group.
  RadixTree(int32_t block_size, std::vector<int32_t> windows)
      : block_size_(block_size), groups_(windows.size()), windows_(std::move(windows)) {}

  size_t groups() const { return groups_; }

  // Tokens' leading full blocks found in salt's subtree, at most max_blocks of them. No change.
  Match match(uint64_t salt, std::span<const int32_t> tokens, int32_t max_blocks) const;
  // Locks a match's path for one more sequence (splitting a partially matched edge) and stamps
  // it; returns the deepest node now on the path (null when nothing matched).
  Node* lock(const Match& m);
  // Releases one sequence's lock on the path ending at node (null: nothing) and stamps it.
  void unlock(Node* node);
  // Inserts block positions [depth, full) of a sequence whose path so far ends at node (null: the
  // salt's root) after depth positions, from its tables ([groups], a windowed one's released
  // entries -1), locking what it adds or walks into for that sequence; returns the new end of the
  // path. Content another sequence cached first is adopted: the tables' entries are replaced by
  // the tree's blocks (same tokens, same K/V) and their own copies released (*adopted counts the
  // positions); a tombstone the sequence still holds a block for takes that block.
  Node* insert(uint64_t salt, Node* node, int32_t depth, std::span<const int32_t> tokens,
               std::span<std::vector<int32_t>> tables, int32_t full, BlockPool& pool, int32_t* adopted);
  // Frees up to n cached blocks back to the pool (unlocked leaves, LRU first, then tombstones, see
  // the top); returns how many. The chained hash (block_hash.hpp) of each evicted group-0 block's
  // prefix goes into *evicted when it is given. Each evicted block's id, hash and salt (its
  // group's: block_cache::group_salt) go into *spilled when it is given (interface 1.4).
  int32_t evict(int32_t n, BlockPool& pool, block_cache::EvictedHashes* evicted = nullptr,
                block_cache::EvictedBlocks* spilled = nullptr);
  // Whether tokens' first n_blocks full blocks are all cached under some salt other than salt.
  bool cached_under_other_salt(uint64_t salt, std::span<const int32_t> tokens, int32_t n_blocks) const;

  // Throws (LOOM_ERR_INTERNAL) when the tree disagrees with the pool or with the sequences'
  // paths: paths[i] is a live sequence's path end, and each of its tables begins with the path's
  // blocks of that group (a windowed group's entry may be -1 where the sequence released it).
  struct SeqPath {
    Node* node;
    int32_t depth;
    std::span<const std::vector<int32_t>> tables;
  };
  void check(const BlockPool& pool, const std::vector<SeqPath>& paths) const;

  int32_t num_nodes() const;  // excluding the salt roots

 private:
  Node* split(Node* n, int32_t k);
  // Every node below the salts' roots.
  std::vector<Node*> nodes() const;
  int32_t positions(const Node& n) const { return static_cast<int32_t>(n.blocks.size() / groups_); }
  // Trims unlocked leaves (LRU first) until `done` reaches n; tombstone() the rest.
  void evict_leaves(int32_t n, int32_t& done, BlockPool& pool, block_cache::EvictedHashes* evicted,
                    block_cache::EvictedBlocks* spilled);
  void tombstone(int32_t n, int32_t& done, BlockPool& pool, block_cache::EvictedHashes* evicted,
                 block_cache::EvictedBlocks* spilled);
  // The hashes to record for a node's blocks when anything is recorded: [positions * groups],
  // position-major like the node's blocks; empty when nothing is.
  std::vector<uint64_t> node_hashes(const Node* n, bool record) const;
  // Hands one evicted block of group g, chained hash `hash` under the salt's subtree, to the
  // records.
  void note_evicted(int32_t block, size_t g, uint64_t hash, uint64_t salt, block_cache::EvictedHashes* evicted,
                    block_cache::EvictedBlocks* spilled) const;
  std::vector<int32_t> key_at(std::span<const int32_t> tokens, size_t block) const;
  void stamp(Node* n);
  // The chained hashes of group g's blocks on the path from the salt's root down to n, one per
  // position.
  std::vector<uint64_t> path_hashes(const Node* n, size_t g) const;
  void check_node(const Node& n, const BlockPool& pool, std::vector<uint8_t>& seen, int32_t& count) const;

  int32_t block_size_;
  size_t groups_;
  std::vector<int32_t> windows_;  // [groups_]
  uint64_t clock_ = 0;
  uint64_t next_id_ = 0;
  std::map<uint64_t, std::unique_ptr<Node>> roots_;  // one per cache_salt
};

}  // namespace loom::radix
