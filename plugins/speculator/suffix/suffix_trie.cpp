#include "suffix_trie.hpp"

#include <algorithm>

namespace loom::suffix {

SuffixTrie::SuffixTrie(int32_t max_depth) : max_depth_(max_depth), nodes_(1) {}

int32_t SuffixTrie::child(int32_t node, int32_t token) const {
  for (const auto& [t, c] : nodes_[static_cast<size_t>(node)].children)
    if (t == token) return c;
  return -1;
}

int32_t SuffixTrie::step(int32_t node, int32_t token, int32_t delta) {
  int32_t c = child(node, token);
  if (c < 0) {
    if (delta <= 0) return -1;  // removing what was never added: nothing to do
    if (!free_.empty()) {
      c = free_.back();
      free_.pop_back();
      nodes_[static_cast<size_t>(c)] = Node{};
    } else {
      c = static_cast<int32_t>(nodes_.size());
      nodes_.emplace_back();
    }
    nodes_[static_cast<size_t>(c)].depth = nodes_[static_cast<size_t>(node)].depth + 1;
    nodes_[static_cast<size_t>(node)].children.emplace_back(token, c);
  }
  Node& n = nodes_[static_cast<size_t>(c)];
  n.count += delta;
  if (n.count > 0) return c;
  // Its children's counts are <= its own, so they reached 0 before it (count() walks parents
  // first, then children, within one window; a zero child was unlinked then).
  auto& siblings = nodes_[static_cast<size_t>(node)].children;
  siblings.erase(std::find_if(siblings.begin(), siblings.end(), [c](const auto& p) { return p.second == c; }));
  n.children.clear();
  free_.push_back(c);
  return -1;
}

void SuffixTrie::append(int32_t token) {
  std::vector<int32_t> next;
  next.reserve(active_.size() + 1);
  next.push_back(step(0, token, +1));
  for (int32_t node : active_)
    if (nodes_[static_cast<size_t>(node)].depth < max_depth_) next.push_back(step(node, token, +1));
  active_.swap(next);
}

void SuffixTrie::count(std::span<const int32_t> tokens, int32_t delta) {
  // Every window tokens[i .. i + max_depth) counts its prefixes once: each substring of length
  // <= max_depth is the prefix of exactly one window start. Removal walks deepest first so a
  // node reaching 0 has no live child left.
  const size_t n = tokens.size();
  std::vector<int32_t> path;
  for (size_t i = 0; i < n; ++i) {
    const size_t end = std::min(n, i + static_cast<size_t>(max_depth_));
    if (delta > 0) {
      int32_t node = 0;
      for (size_t j = i; j < end; ++j) node = step(node, tokens[j], delta);
      continue;
    }
    path.assign(1, 0);
    for (size_t j = i; j < end; ++j) {
      const int32_t c = child(path.back(), tokens[j]);
      if (c < 0) break;
      path.push_back(c);
    }
    for (size_t d = path.size() - 1; d >= 1; --d) step(path[d - 1], tokens[i + d - 1], delta);
  }
}

Proposal SuffixTrie::propose(std::span<const int32_t> context, int32_t max_tokens, double min_prob) const {
  Proposal best;
  const int32_t len = static_cast<int32_t>(context.size());
  // Leave room below max_depth for the drafts themselves.
  const int32_t longest = std::min(len, std::max(1, max_depth_ - max_tokens));
  for (int32_t m = longest; m >= 1; --m) {
    int32_t node = 0;
    for (int32_t i = len - m; i < len && node >= 0; ++i) node = child(node, context[static_cast<size_t>(i)]);
    if (node < 0 || nodes_[static_cast<size_t>(node)].children.empty()) continue;
    best.match_len = m;
    double prob = 1.0;
    while (static_cast<int32_t>(best.tokens.size()) < max_tokens) {
      const Node& at = nodes_[static_cast<size_t>(node)];
      if (at.children.empty()) break;
      int64_t total = 0;
      std::pair<int32_t, int32_t> pick{-1, -1};
      int32_t pick_count = 0;
      for (const auto& [t, c] : at.children) {
        const int32_t k = nodes_[static_cast<size_t>(c)].count;
        total += k;
        if (k > pick_count || (k == pick_count && t < pick.first)) pick = {t, c}, pick_count = k;
      }
      prob *= static_cast<double>(pick_count) / static_cast<double>(total);
      if (prob < min_prob) break;
      best.tokens.push_back(pick.first);
      best.score += prob;
      node = pick.second;
    }
    return best;
  }
  return best;
}

}  // namespace loom::suffix
