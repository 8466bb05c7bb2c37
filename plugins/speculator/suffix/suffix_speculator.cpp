// speculator/suffix: suffix decoding (the method vLLM and SGLang ship through Arctic Inference).
// Two depth-bounded suffix tries (suffix_trie.hpp): one per request over its own tokens (prompt
// and output, grown as it is accepted) and one global over the outputs of the last
// max_cached_requests finished requests. Each proposal matches the longest suffix of the
// request's tokens in both, follows the most frequent continuation while its probability stays
// >= min_token_prob, and keeps the draft with the higher expected accepted length. Deterministic
// drafts (no distributions).
#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "loom/sdk.hpp"
#include "loom/sdk_config.hpp"
#include "loom/speculator.h"
#include "suffix_trie.hpp"

namespace {

using loom::suffix::Proposal;
using loom::suffix::SuffixTrie;

struct SuffixConfig {
  int32_t max_depth = 32;
  double min_token_prob = 0.1;
  int32_t max_cached_requests = 1000;
};

class SuffixSpeculator {
 public:
  static const loom::sdk::ConfigSpec<SuffixConfig>& config_spec() {
    static const auto spec =
        loom::sdk::ConfigSpec<SuffixConfig>("speculator suffix")
            .integer("max_depth", &SuffixConfig::max_depth, "longest substring the tries count (match + drafts)", 2,
                     1024)
            .number("min_token_prob", &SuffixConfig::min_token_prob,
                    "stop drafting when the draft's estimated probability falls below this", 0.0, 1.0)
            .integer("max_cached_requests", &SuffixConfig::max_cached_requests,
                     "finished requests' outputs kept in the global trie (0 = per-request tries only)", 0,
                     1 << 24);
    return spec;
  }

  SuffixSpeculator(const loom::sdk::Host& host, const loom_speculator_create_args&, const SuffixConfig& cfg)
      : cfg_(cfg), global_(cfg.max_depth) {
    host.info("suffix tries of depth ", cfg_.max_depth, ", min token probability ", cfg_.min_token_prob,
              ", outputs of the last ", cfg_.max_cached_requests, " requests shared");
  }

  void propose(loom_spec_request* requests, int32_t num_requests) {
    for (int32_t r = 0; r < num_requests; ++r) propose_one(requests[r]);
  }

  void finish(uint64_t request_id, const int32_t* token_ids, int32_t num_tokens, int32_t num_prompt_tokens) {
    local_.erase(request_id);
    if (cfg_.max_cached_requests == 0 || num_tokens <= num_prompt_tokens) return;
    outputs_.emplace_back(token_ids + num_prompt_tokens, token_ids + num_tokens);
    global_.add(outputs_.back());
    while (static_cast<int32_t>(outputs_.size()) > cfg_.max_cached_requests) {
      global_.remove(outputs_.front());
      outputs_.pop_front();
    }
  }

 private:
  struct Local {
    explicit Local(int32_t depth) : trie(depth) {}
    SuffixTrie trie;
    int32_t seen = 0;  // tokens appended to the trie
  };

  void propose_one(loom_spec_request& q) {
    auto it = local_.find(q.request_id);
    if (it == local_.end()) it = local_.emplace(q.request_id, Local(cfg_.max_depth)).first;
    Local& local = it->second;
    if (q.num_tokens < local.seen) {  // never shrinks in the host's use; rebuild if it does
      local = Local(cfg_.max_depth);
    }
    for (; local.seen < q.num_tokens; ++local.seen) local.trie.append(q.token_ids[local.seen]);
    const std::span<const int32_t> context(q.token_ids, static_cast<size_t>(q.num_tokens));
    // The request's own trie also holds the context's own suffixes, which have no continuation
    // yet; propose() skips matches without one.
    Proposal best = local.trie.propose(context, q.max_drafts, cfg_.min_token_prob);
    if (!outputs_.empty()) {
      Proposal shared = global_.propose(context, q.max_drafts, cfg_.min_token_prob);
      if (shared.score > best.score) best = std::move(shared);
    }
    for (size_t i = 0; i < best.tokens.size(); ++i) q.draft_ids[i] = best.tokens[i];
    q.num_drafts = static_cast<int32_t>(best.tokens.size());
  }

  SuffixConfig cfg_;
  std::unordered_map<uint64_t, Local> local_;
  SuffixTrie global_;
  std::deque<std::vector<int32_t>> outputs_;  // oldest first, each counted in global_
};

}  // namespace

LOOM_SPECULATOR_PLUGIN(SuffixSpeculator, "suffix", "0.1.0",
                       "suffix decoding: most frequent continuation in suffix tries of the request and recent outputs");
