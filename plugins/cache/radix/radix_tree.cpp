// cache/radix: matching, splitting, locking, inserting, LRU leaf eviction and tombstones (see
// radix_tree.hpp).
#include "radix_tree.hpp"

#include <algorithm>
#include <queue>
#include <string>
#include <tuple>
#include <unordered_map>

#include "common/block_hash.hpp"

namespace loom::radix {
namespace {

[[noreturn]] void broken(const std::string& what) { BlockPool::broken(what); }

}  // namespace

std::vector<int32_t> RadixTree::key_at(std::span<const int32_t> tokens, size_t block) const {
  const auto first = tokens.begin() + static_cast<std::ptrdiff_t>(block * static_cast<size_t>(block_size_));
  return std::vector<int32_t>(first, first + block_size_);
}

Match RadixTree::match(uint64_t salt, std::span<const int32_t> tokens, int32_t max_blocks) const {
  Match m;
  const auto root = roots_.find(salt);
  if (root == roots_.end()) return m;
  const size_t bs = static_cast<size_t>(block_size_);
  const size_t limit = std::min(static_cast<size_t>(std::max(max_blocks, 0)), tokens.size() / bs);
  const Node* n = root->second.get();
  size_t d = 0;
  while (d < limit) {
    const auto c = n->children.find(key_at(tokens, d));
    if (c == n->children.end()) break;
    Node* child = c->second.get();
    // Token by token along the edge; a mismatch inside a block loses that whole block.
    size_t j = 0;
    const size_t edge = static_cast<size_t>(positions(*child));
    while (j < edge && d < limit &&
           std::equal(child->tokens.begin() + static_cast<std::ptrdiff_t>(j * bs),
                      child->tokens.begin() + static_cast<std::ptrdiff_t>((j + 1) * bs),
                      tokens.begin() + static_cast<std::ptrdiff_t>(d * bs))) {
      const auto at = child->blocks.begin() + static_cast<std::ptrdiff_t>(j * groups_);
      m.blocks.insert(m.blocks.end(), at, at + static_cast<std::ptrdiff_t>(groups_));
      ++m.length;
      ++j;
      ++d;
    }
    if (j < edge) {
      m.into = child;
      m.partial = static_cast<int32_t>(j);
      break;
    }
    m.node = child;
    n = child;
  }
  return m;
}

// Cuts n after its first k blocks: a new upper node takes them and n, keeping the rest, becomes
// its only child. n keeps its identity, so sequence paths ending at n still end below the cut.
Node* RadixTree::split(Node* n, int32_t k) {
  const size_t bs = static_cast<size_t>(block_size_);
  const size_t cut = static_cast<size_t>(k);
  auto upper = std::make_unique<Node>();
  upper->id = next_id_++;
  upper->parent = n->parent;
  upper->tokens.assign(n->tokens.begin(), n->tokens.begin() + static_cast<std::ptrdiff_t>(cut * bs));
  const auto cut_blocks = static_cast<std::ptrdiff_t>(cut * groups_);
  upper->blocks.assign(n->blocks.begin(), n->blocks.begin() + cut_blocks);
  upper->lock_ref = n->lock_ref;
  upper->last_access = n->last_access;
  auto& slot = n->parent->children.at(key_at(upper->tokens, 0));
  std::unique_ptr<Node> lower = std::move(slot);
  lower->tokens.erase(lower->tokens.begin(), lower->tokens.begin() + static_cast<std::ptrdiff_t>(cut * bs));
  lower->blocks.erase(lower->blocks.begin(), lower->blocks.begin() + cut_blocks);
  lower->parent = upper.get();
  Node* raw = upper.get();
  raw->children.emplace(key_at(lower->tokens, 0), std::move(lower));
  slot = std::move(upper);
  return raw;
}

void RadixTree::stamp(Node* n) {
  for (Node* p = n; p != nullptr && p->parent != nullptr; p = p->parent) p->last_access = clock_;
}

Node* RadixTree::lock(const Match& m) {
  ++clock_;
  Node* end = m.into != nullptr && m.partial > 0 ? split(m.into, m.partial) : m.node;
  for (Node* p = end; p != nullptr && p->parent != nullptr; p = p->parent) ++p->lock_ref;
  stamp(end);
  return end;
}

void RadixTree::unlock(Node* node) {
  ++clock_;
  for (Node* p = node; p != nullptr && p->parent != nullptr; p = p->parent) {
    if (p->lock_ref <= 0) broken("unlock of node " + std::to_string(p->id) + " that no sequence holds");
    --p->lock_ref;
  }
  stamp(node);
}

Node* RadixTree::insert(uint64_t salt, Node* node, int32_t depth, std::span<const int32_t> tokens,
                        std::span<std::vector<int32_t>> tables, int32_t full, BlockPool& pool, int32_t* adopted) {
  if (full <= depth) return node;
  ++clock_;
  const size_t bs = static_cast<size_t>(block_size_);
  const auto token_at = [&](size_t block) { return tokens.begin() + static_cast<std::ptrdiff_t>(block * bs); };
  // The tables' blocks of positions [from, to), position-major; each held one enters the tree.
  const auto enter = [&](size_t from, size_t to) {
    std::vector<int32_t> out;
    out.reserve((to - from) * groups_);
    for (size_t d = from; d < to; ++d) {
      for (size_t g = 0; g < groups_; ++g) {
        const int32_t b = tables[g][d];
        out.push_back(b);
        if (b >= 0) pool.enter_tree(b);
      }
    }
    return out;
  };
  const size_t last = static_cast<size_t>(full);
  size_t d = static_cast<size_t>(depth);
  Node* end = node;
  while (d < last) {
    // A leaf only this sequence runs through grows in place: a decode that commits block after
    // block keeps one node rather than a chain of one-block nodes.
    if (end != nullptr && end->children.empty() && end->lock_ref == 1) {
      const std::vector<int32_t> added = enter(d, last);
      end->tokens.insert(end->tokens.end(), token_at(d), token_at(last));
      end->blocks.insert(end->blocks.end(), added.begin(), added.end());
      break;
    }
    Node* parent = end;
    if (parent == nullptr) {
      std::unique_ptr<Node>& root = roots_[salt];
      if (!root) {
        root = std::make_unique<Node>();
        root->id = next_id_++;
        root->salt = salt;
      }
      parent = root.get();
    }
    std::vector<int32_t> key = key_at(tokens, d);
    const auto found = parent->children.find(key);
    if (found == parent->children.end()) {
      auto child = std::make_unique<Node>();
      child->id = next_id_++;
      child->parent = parent;
      child->tokens.assign(token_at(d), token_at(last));
      child->blocks = enter(d, last);
      child->lock_ref = 1;
      end = child.get();
      parent->children.emplace(std::move(key), std::move(child));
      break;
    }
    // Another sequence cached this content first (both computed it before either committed):
    // the sequence adopts the tree's blocks, equal K/V, and lets its own copies go. A tombstone
    // takes the block the sequence still holds instead.
    Node* child = found->second.get();
    size_t j = 0;
    const size_t edge = static_cast<size_t>(positions(*child));
    while (j < edge && d < last && std::equal(child->tokens.begin() + static_cast<std::ptrdiff_t>(j * bs),
                                              child->tokens.begin() + static_cast<std::ptrdiff_t>((j + 1) * bs),
                                              token_at(d))) {
      for (size_t g = 0; g < groups_; ++g) {
        int32_t& cached = child->blocks[j * groups_ + g];
        int32_t& mine = tables[g][d];
        if (mine < 0) continue;  // released by a window: the sequence reads it no more
        if (cached < 0) {
          cached = mine;
          pool.enter_tree(mine);
          continue;
        }
        const int32_t own = mine;
        mine = cached;
        pool.acquire(cached);
        pool.release(own);
      }
      ++j;
      ++d;
      if (adopted != nullptr) ++*adopted;
    }
    if (j < edge) child = split(child, static_cast<int32_t>(j));
    ++child->lock_ref;  // its ancestors already count this sequence
    end = child;
  }
  stamp(end);
  return end;
}

std::vector<uint64_t> RadixTree::path_hashes(const Node* n, size_t g) const {
  std::vector<const Node*> path;
  const Node* root = n;
  for (; root->parent != nullptr; root = root->parent) path.push_back(root);
  const uint64_t salt = block_cache::group_salt(root->salt, g);
  std::vector<uint64_t> hashes;
  uint64_t h = block_cache::kRootHash;
  const size_t bs = static_cast<size_t>(block_size_);
  for (auto x = path.rbegin(); x != path.rend(); ++x) {
    for (size_t j = 0; j < static_cast<size_t>(positions(**x)); ++j) {
      h = block_cache::block_hash(h, salt, std::span<const int32_t>((*x)->tokens).subspan(j * bs, bs));
      hashes.push_back(h);
    }
  }
  return hashes;
}

std::vector<uint64_t> RadixTree::node_hashes(const Node* n, bool record) const {
  if (!record) return {};
  const size_t own = static_cast<size_t>(positions(*n));
  std::vector<uint64_t> out(own * groups_);
  for (size_t g = 0; g < groups_; ++g) {
    const std::vector<uint64_t> path = path_hashes(n, g);  // the node's positions end the path
    for (size_t j = 0; j < own; ++j) out[j * groups_ + g] = path[path.size() - own + j];
  }
  return out;
}

bool RadixTree::cached_under_other_salt(uint64_t salt, std::span<const int32_t> tokens, int32_t n_blocks) const {
  for (const auto& [other, root] : roots_) {
    if (other != salt && match(other, tokens, n_blocks).length == n_blocks) return true;
  }
  return false;
}

int32_t RadixTree::evict(int32_t n, BlockPool& pool, block_cache::EvictedHashes* evicted,
                         block_cache::EvictedBlocks* spilled) {
  int32_t done = 0;
  evict_leaves(n, done, pool, evicted, spilled);
  if (done < n) tombstone(n, done, pool, evicted, spilled);
  return done;
}

void RadixTree::evict_leaves(int32_t n, int32_t& done, BlockPool& pool, block_cache::EvictedHashes* evicted,
                             block_cache::EvictedBlocks* spilled) {
  using Item = std::tuple<uint64_t, uint64_t, Node*>;  // last access, id: the oldest on top
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> leaves;
  for (Node* x : nodes())
    if (x->children.empty() && x->lock_ref == 0) leaves.emplace(x->last_access, x->id, x);
  const bool record = evicted != nullptr || spilled != nullptr;
  while (done < n && !leaves.empty()) {
    Node* leaf = std::get<2>(leaves.top());
    leaves.pop();
    const std::vector<int32_t> key = key_at(leaf->tokens, 0);
    const std::vector<uint64_t> hashes = node_hashes(leaf, record);
    const Node* root = leaf;
    while (root->parent != nullptr) root = root->parent;
    const auto drop = [&](size_t i) {
      int32_t& b = leaf->blocks[i];
      if (b < 0) return;
      if (record) note_evicted(b, i % groups_, hashes[i], root->salt, evicted, spilled);
      pool.leave_tree(b);
      b = -1;
      ++done;
    };
    // The tail goes first: a prefix's head is what other requests share. Within a position the
    // windowed groups' blocks go one at a time (a tombstone is a valid state), the rest with the
    // position.
    int32_t pos = positions(*leaf);
    while (done < n && pos > 0) {
      const size_t at = static_cast<size_t>(pos - 1) * groups_;
      for (size_t g = 0; g < groups_ && done < n; ++g)
        if (windows_[g] > 0) drop(at + g);
      const bool held = std::any_of(leaf->blocks.begin() + static_cast<std::ptrdiff_t>(at), leaf->blocks.end(),
                                    [](int32_t b) { return b >= 0; });
      if (held && done >= n) break;
      for (size_t g = 0; g < groups_; ++g) drop(at + g);
      --pos;
      leaf->blocks.resize(at);
      leaf->tokens.resize(static_cast<size_t>(pos) * static_cast<size_t>(block_size_));
    }
    if (pos > 0) break;
    Node* parent = leaf->parent;
    parent->children.erase(key);
    if (parent->parent != nullptr) {
      if (parent->children.empty() && parent->lock_ref == 0) leaves.emplace(parent->last_access, parent->id, parent);
    } else if (parent->children.empty()) {
      std::erase_if(roots_, [&](const auto& entry) { return entry.second.get() == parent; });
    }
  }
}

void RadixTree::tombstone(int32_t n, int32_t& done, BlockPool& pool, block_cache::EvictedHashes* evicted,
                          block_cache::EvictedBlocks* spilled) {
  using Item = std::tuple<uint64_t, uint64_t, Node*>;  // last access, id: the oldest first
  std::vector<Item> holders;  // nodes with a released block of a windowed group
  for (Node* x : nodes()) {
    for (size_t i = 0; i < x->blocks.size(); ++i) {
      const int32_t b = x->blocks[i];
      if (windows_[i % groups_] > 0 && b >= 0 && pool.refcount(b) == 0) {
        holders.emplace_back(x->last_access, x->id, x);
        break;
      }
    }
  }
  std::sort(holders.begin(), holders.end());
  const bool record = evicted != nullptr || spilled != nullptr;
  for (const Item& item : holders) {
    if (done >= n) break;
    Node* x = std::get<2>(item);
    const std::vector<uint64_t> hashes = node_hashes(x, record);
    const Node* root = x;
    while (root->parent != nullptr) root = root->parent;
    for (size_t i = 0; i < x->blocks.size() && done < n; ++i) {
      int32_t& b = x->blocks[i];
      if (windows_[i % groups_] <= 0 || b < 0 || pool.refcount(b) != 0) continue;
      if (record) note_evicted(b, i % groups_, hashes[i], root->salt, evicted, spilled);
      pool.leave_tree(b);
      b = -1;
      ++done;
    }
  }
}

void RadixTree::note_evicted(int32_t block, size_t g, uint64_t hash, uint64_t salt, block_cache::EvictedHashes* evicted,
                             block_cache::EvictedBlocks* spilled) const {
  if (evicted != nullptr && g == 0) evicted->add(hash);  // the miss reasons look at group 0's chain
  if (spilled != nullptr) spilled->add(block, block_size_, hash, block_cache::group_salt(salt, g));
}

std::vector<Node*> RadixTree::nodes() const {
  std::vector<Node*> out;
  std::vector<Node*> stack;
  for (const auto& [salt, root] : roots_) stack.push_back(root.get());
  while (!stack.empty()) {
    Node* x = stack.back();
    stack.pop_back();
    if (x->parent != nullptr) out.push_back(x);
    for (const auto& [key, c] : x->children) stack.push_back(c.get());
  }
  return out;
}

int32_t RadixTree::num_nodes() const { return static_cast<int32_t>(nodes().size()); }

void RadixTree::check_node(const Node& n, const BlockPool& pool, std::vector<uint8_t>& seen, int32_t& count) const {
  const std::string name = "node " + std::to_string(n.id);
  const size_t tokens = static_cast<size_t>(positions(n)) * static_cast<size_t>(block_size_);
  if (n.blocks.size() % groups_ != 0 || n.tokens.size() != tokens)
    broken(name + " has " + std::to_string(n.tokens.size()) + " tokens for " + std::to_string(n.blocks.size()) +
           " blocks of " + std::to_string(groups_) + " groups");
  if (n.parent != nullptr && n.blocks.empty()) broken(name + " holds no block");
  for (size_t i = 0; i < n.blocks.size(); ++i) {
    const int32_t b = n.blocks[i];
    const bool windowed = windows_[i % groups_] > 0;
    if (b == -1 && windowed) continue;  // a tombstone
    if (b < 0 || b >= pool.num_blocks()) broken(name + " holds block id " + std::to_string(b) + " outside the pool");
    if (seen[static_cast<size_t>(b)]++) broken("block " + std::to_string(b) + " is in the tree twice");
    if (!pool.in_tree(b)) broken("block " + std::to_string(b) + " of " + name + " is not marked as in the tree");
    // Only a locked node's blocks are in tables; a windowed group's may have left every table.
    if ((n.lock_ref == 0 && pool.refcount(b) > 0) || (n.lock_ref > 0 && !windowed && pool.refcount(b) == 0))
      broken("block " + std::to_string(b) + " of " + name + " has refcount " + std::to_string(pool.refcount(b)) +
             " but the node's lock_ref is " + std::to_string(n.lock_ref));
    ++count;
  }
  for (const auto& [key, c] : n.children) {
    if (c->parent != &n) broken("node " + std::to_string(c->id) + " has the wrong parent");
    if (c->blocks.empty() || key != key_at(c->tokens, 0)) broken("node " + std::to_string(c->id) + " is filed under a key other than its first block");
    if (c->lock_ref > n.lock_ref && n.parent != nullptr) broken("node " + std::to_string(c->id) + " is locked more than its parent");
    check_node(*c, pool, seen, count);
  }
}

void RadixTree::check(const BlockPool& pool, const std::vector<SeqPath>& paths) const {
  std::unordered_map<const Node*, int32_t> expected;
  for (const SeqPath& p : paths) {
    int32_t depth = 0;
    std::vector<int32_t> path_blocks;  // position-major, like a node's
    for (const Node* x = p.node; x != nullptr && x->parent != nullptr; x = x->parent) {
      ++expected[x];
      depth += positions(*x);
      path_blocks.insert(path_blocks.begin(), x->blocks.begin(), x->blocks.end());
    }
    bool agrees = depth == p.depth && p.tables.size() == groups_;
    for (size_t g = 0; agrees && g < groups_; ++g) {
      agrees = static_cast<size_t>(depth) <= p.tables[g].size();
      for (size_t j = 0; agrees && j < static_cast<size_t>(depth); ++j) {
        const int32_t mine = p.tables[g][j];
        agrees = mine == path_blocks[j * groups_ + g] || (windows_[g] > 0 && mine == -1);
      }
    }
    if (!agrees) broken("a sequence's tables do not begin with the blocks of its tree path");
  }
  std::vector<uint8_t> seen(static_cast<size_t>(pool.num_blocks()), 0);
  int32_t count = 0;
  std::vector<const Node*> stack;
  for (const auto& [salt, root] : roots_) {
    if (root->parent != nullptr || !root->blocks.empty() || root->lock_ref != 0) broken("a salt's root holds tokens or locks");
    check_node(*root, pool, seen, count);
    stack.push_back(root.get());
  }
  while (!stack.empty()) {
    const Node* x = stack.back();
    stack.pop_back();
    for (const auto& [key, c] : x->children) stack.push_back(c.get());
    if (x->parent == nullptr) continue;
    const auto it = expected.find(x);
    if (x->lock_ref != (it == expected.end() ? 0 : it->second))
      broken("node " + std::to_string(x->id) + " has lock_ref " + std::to_string(x->lock_ref) + " but " +
             std::to_string(it == expected.end() ? 0 : it->second) + " sequences run through it");
  }
  int32_t marked = 0;
  for (int32_t b = 0; b < pool.num_blocks(); ++b) {
    marked += pool.in_tree(b) ? 1 : 0;
    if (pool.refcount(b) == 0 && pool.in_tree(b) == pool.is_free(b))
      broken("unreferenced block " + std::to_string(b) + " is not exactly one of free or cached");
    if (pool.refcount(b) > 0 && pool.is_free(b)) broken("block " + std::to_string(b) + " is referenced and free");
  }
  if (marked != count) broken("the pool marks " + std::to_string(marked) + " blocks as cached, the tree holds " + std::to_string(count));
}

}  // namespace loom::radix
