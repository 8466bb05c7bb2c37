// cache/radix: matching, splitting, locking, inserting and LRU leaf eviction (see radix_tree.hpp).
#include "radix_tree.hpp"

#include <algorithm>
#include <queue>

#include "common/block_hash.hpp"
#include <string>
#include <tuple>
#include <unordered_map>

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
    while (j < child->blocks.size() && d < limit &&
           std::equal(child->tokens.begin() + static_cast<std::ptrdiff_t>(j * bs),
                      child->tokens.begin() + static_cast<std::ptrdiff_t>((j + 1) * bs),
                      tokens.begin() + static_cast<std::ptrdiff_t>(d * bs))) {
      m.blocks.push_back(child->blocks[j]);
      ++j;
      ++d;
    }
    if (j < child->blocks.size()) {
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
  upper->blocks.assign(n->blocks.begin(), n->blocks.begin() + static_cast<std::ptrdiff_t>(cut));
  upper->lock_ref = n->lock_ref;
  upper->last_access = n->last_access;
  auto& slot = n->parent->children.at(key_at(upper->tokens, 0));
  std::unique_ptr<Node> lower = std::move(slot);
  lower->tokens.erase(lower->tokens.begin(), lower->tokens.begin() + static_cast<std::ptrdiff_t>(cut * bs));
  lower->blocks.erase(lower->blocks.begin(), lower->blocks.begin() + static_cast<std::ptrdiff_t>(cut));
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
                        std::vector<int32_t>& table, int32_t full, BlockPool& pool, int32_t* adopted) {
  if (full <= depth) return node;
  ++clock_;
  const size_t bs = static_cast<size_t>(block_size_);
  const auto token_at = [&](size_t block) { return tokens.begin() + static_cast<std::ptrdiff_t>(block * bs); };
  const auto block_at = [&](size_t block) { return table.begin() + static_cast<std::ptrdiff_t>(block); };
  const size_t last = static_cast<size_t>(full);
  size_t d = static_cast<size_t>(depth);
  Node* end = node;
  while (d < last) {
    // A leaf only this sequence runs through grows in place: a decode that commits block after
    // block keeps one node rather than a chain of one-block nodes.
    if (end != nullptr && end->children.empty() && end->lock_ref == 1) {
      end->tokens.insert(end->tokens.end(), token_at(d), token_at(last));
      end->blocks.insert(end->blocks.end(), block_at(d), block_at(last));
      for (auto b = block_at(d); b != block_at(last); ++b) pool.enter_tree(*b);
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
      child->blocks.assign(block_at(d), block_at(last));
      child->lock_ref = 1;
      for (int32_t b : child->blocks) pool.enter_tree(b);
      end = child.get();
      parent->children.emplace(std::move(key), std::move(child));
      break;
    }
    // Another sequence cached this content first (both computed it before either committed):
    // the sequence adopts the tree's blocks, equal K/V, and lets its own copies go.
    Node* child = found->second.get();
    size_t j = 0;
    while (j < child->blocks.size() && d < last && std::equal(child->tokens.begin() + static_cast<std::ptrdiff_t>(j * bs),
                                                              child->tokens.begin() + static_cast<std::ptrdiff_t>((j + 1) * bs),
                                                              token_at(d))) {
      const int32_t mine = table[d];
      table[d] = child->blocks[j];
      pool.acquire(child->blocks[j]);
      pool.release(mine);
      ++j;
      ++d;
      if (adopted != nullptr) ++*adopted;
    }
    if (j < child->blocks.size()) child = split(child, static_cast<int32_t>(j));
    ++child->lock_ref;  // its ancestors already count this sequence
    end = child;
  }
  stamp(end);
  return end;
}

std::vector<uint64_t> RadixTree::path_hashes(const Node* n) const {
  std::vector<const Node*> path;
  const Node* root = n;
  for (; root->parent != nullptr; root = root->parent) path.push_back(root);
  std::vector<uint64_t> hashes;
  uint64_t h = block_cache::kRootHash;
  const size_t bs = static_cast<size_t>(block_size_);
  for (auto x = path.rbegin(); x != path.rend(); ++x) {
    for (size_t j = 0; j < (*x)->blocks.size(); ++j) {
      h = block_cache::block_hash(h, root->salt, std::span<const int32_t>((*x)->tokens).subspan(j * bs, bs));
      hashes.push_back(h);
    }
  }
  return hashes;
}

bool RadixTree::cached_under_other_salt(uint64_t salt, std::span<const int32_t> tokens, int32_t n_blocks) const {
  for (const auto& [other, root] : roots_) {
    if (other != salt && static_cast<int32_t>(match(other, tokens, n_blocks).blocks.size()) == n_blocks) return true;
  }
  return false;
}

int32_t RadixTree::evict(int32_t n, BlockPool& pool, block_cache::EvictedHashes* evicted,
                         block_cache::EvictedBlocks* spilled) {
  using Item = std::tuple<uint64_t, uint64_t, Node*>;  // last access, id: the oldest on top
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> leaves;
  std::vector<Node*> stack;
  for (const auto& [salt, root] : roots_) stack.push_back(root.get());
  while (!stack.empty()) {
    Node* x = stack.back();
    stack.pop_back();
    for (const auto& [key, c] : x->children) stack.push_back(c.get());
    if (x->parent != nullptr && x->children.empty() && x->lock_ref == 0) leaves.emplace(x->last_access, x->id, x);
  }
  int32_t done = 0;
  while (done < n && !leaves.empty()) {
    Node* leaf = std::get<2>(leaves.top());
    leaves.pop();
    const std::vector<int32_t> key = key_at(leaf->tokens, 0);
    const bool record = evicted != nullptr || spilled != nullptr;
    const std::vector<uint64_t> hashes = record ? path_hashes(leaf) : std::vector<uint64_t>{};
    const Node* root = leaf;
    while (root->parent != nullptr) root = root->parent;
    size_t tail = hashes.size();  // the leaf's last block is the path's last
    // The tail goes first: a prefix's head is what other requests share.
    while (done < n && !leaf->blocks.empty()) {
      if (record) {
        --tail;
        if (evicted != nullptr) evicted->add(hashes[tail]);
        if (spilled != nullptr) spilled->add(leaf->blocks.back(), block_size_, hashes[tail], root->salt);
      }
      pool.leave_tree(leaf->blocks.back());
      leaf->blocks.pop_back();
      leaf->tokens.resize(leaf->tokens.size() - static_cast<size_t>(block_size_));
      ++done;
    }
    if (!leaf->blocks.empty()) break;
    Node* parent = leaf->parent;
    parent->children.erase(key);
    if (parent->parent != nullptr) {
      if (parent->children.empty() && parent->lock_ref == 0) leaves.emplace(parent->last_access, parent->id, parent);
    } else if (parent->children.empty()) {
      std::erase_if(roots_, [&](const auto& entry) { return entry.second.get() == parent; });
    }
  }
  return done;
}

int32_t RadixTree::num_nodes() const {
  int32_t count = 0;
  std::vector<const Node*> stack;
  for (const auto& [salt, root] : roots_) stack.push_back(root.get());
  while (!stack.empty()) {
    const Node* x = stack.back();
    stack.pop_back();
    count += x->parent != nullptr ? 1 : 0;
    for (const auto& [key, c] : x->children) stack.push_back(c.get());
  }
  return count;
}

void RadixTree::check_node(const Node& n, const BlockPool& pool, std::vector<uint8_t>& seen, int32_t& count) const {
  const std::string name = "node " + std::to_string(n.id);
  if (n.tokens.size() != n.blocks.size() * static_cast<size_t>(block_size_))
    broken(name + " has " + std::to_string(n.tokens.size()) + " tokens for " + std::to_string(n.blocks.size()) + " blocks");
  if (n.parent != nullptr && n.blocks.empty()) broken(name + " holds no block");
  for (int32_t b : n.blocks) {
    if (b < 0 || b >= pool.num_blocks()) broken(name + " holds block id " + std::to_string(b) + " outside the pool");
    if (seen[static_cast<size_t>(b)]++) broken("block " + std::to_string(b) + " is in the tree twice");
    if (!pool.in_tree(b)) broken("block " + std::to_string(b) + " of " + name + " is not marked as in the tree");
    if ((n.lock_ref > 0) != (pool.refcount(b) > 0))
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
    std::vector<int32_t> path_blocks;
    for (const Node* x = p.node; x != nullptr && x->parent != nullptr; x = x->parent) {
      ++expected[x];
      depth += static_cast<int32_t>(x->blocks.size());
      path_blocks.insert(path_blocks.begin(), x->blocks.begin(), x->blocks.end());
    }
    if (depth != p.depth || path_blocks.size() > p.table->size() ||
        !std::equal(path_blocks.begin(), path_blocks.end(), p.table->begin()))
      broken("a sequence's table does not begin with the blocks of its tree path");
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
