// A depth-bounded suffix trie: every substring of length <= max_depth of the sequences added, with
// how often it occurs. Node 0 is the root (the empty string); a node's count is the number of
// occurrences of its path; a child's count never exceeds its parent's.
//
// Two ways in: append() extends one growing sequence token by token (a request's own tokens,
// O(max_depth) per token: the suffixes ending at the new token each gain one child step), and
// add()/remove() count a whole sequence in or out (finished requests' outputs; a node whose count
// drops to 0 is unlinked and its slot reused).
//
// propose(): the longest suffix of the context (at most max_match tokens) that occurs with a
// continuation, then the most frequent child step by step. The draft's probability is the product
// of each step's share of its parent's continuations; drafting stops before it falls below
// min_prob. score = the sum of those probabilities, the expected number of accepted tokens if the
// shares are right, which picks between tries.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace loom::suffix {

struct Proposal {
  std::vector<int32_t> tokens;
  double score = 0.0;
  int32_t match_len = 0;
};

class SuffixTrie {
 public:
  explicit SuffixTrie(int32_t max_depth);

  // Counts the substrings ending at one more token of the sequence being appended.
  void append(int32_t token);
  // Counts every substring of `tokens` in (delta +1) or out (delta -1; `tokens` must have been added).
  void add(std::span<const int32_t> tokens) { count(tokens, +1); }
  void remove(std::span<const int32_t> tokens) { count(tokens, -1); }

  Proposal propose(std::span<const int32_t> context, int32_t max_tokens, double min_prob) const;

  int32_t max_depth() const { return max_depth_; }
  size_t num_nodes() const { return nodes_.size() - free_.size(); }

 private:
  struct Node {
    int32_t count = 0;
    int32_t depth = 0;
    std::vector<std::pair<int32_t, int32_t>> children;  // (token, node index), unordered
  };

  int32_t child(int32_t node, int32_t token) const;
  // The child of `node` for `token`, made when absent, its count + delta; -1 when it reaches 0
  // (then unlinked).
  int32_t step(int32_t node, int32_t token, int32_t delta);
  void count(std::span<const int32_t> tokens, int32_t delta);

  int32_t max_depth_;
  std::vector<Node> nodes_;
  std::vector<int32_t> free_;    // unlinked node slots
  std::vector<int32_t> active_;  // append(): nodes of the suffixes ending at the last token, shortest first
};

}  // namespace loom::suffix
