// speculator/ngram: prompt-lookup decoding. For n from max_n down to min_n, the request's last n
// tokens are looked for earlier in its own tokens (prompt and output, the latest occurrence
// first); the tokens that followed the first occurrence found are the drafts, copied like an
// overlapping LZ77 copy: when the continuation reaches the end of the context it goes on with the
// drafts themselves, so a repeating stretch is continued for all k drafts. Stateless: each
// proposal scans the request's tokens, O(num_tokens * max_n) per request and step, which stays
// far below a forward pass for the lengths a CPU serves. Deterministic drafts (no
// distributions), so sampled requests verify them as one-hot proposals.
#include <algorithm>
#include <cstdint>
#include <string>

#include "loom/sdk.hpp"
#include "loom/sdk_config.hpp"
#include "loom/speculator.h"

namespace {

struct NgramConfig {
  int32_t min_n = 1;
  int32_t max_n = 4;
};

class NgramSpeculator {
 public:
  static const loom::sdk::ConfigSpec<NgramConfig>& config_spec() {
    static const auto spec =
        loom::sdk::ConfigSpec<NgramConfig>("speculator ngram")
            .integer("min_n", &NgramConfig::min_n, "shortest suffix of the request matched", 1, 64)
            .integer("max_n", &NgramConfig::max_n, "longest suffix of the request matched (tried first)", 1, 64)
            .rule([](const NgramConfig& c, const auto&, std::vector<std::string>& problems) {
              if (c.min_n > c.max_n)
                problems.push_back("\"min_n\" (" + std::to_string(c.min_n) + ") must not exceed \"max_n\" (" +
                                   std::to_string(c.max_n) + ")");
            });
    return spec;
  }

  NgramSpeculator(const loom::sdk::Host& host, const loom_speculator_create_args&, const NgramConfig& cfg)
      : min_n_(cfg.min_n), max_n_(cfg.max_n) {
    host.info("prompt lookup over n-grams of ", min_n_, "..", max_n_, " tokens");
  }

  void propose(loom_spec_request* requests, int32_t num_requests) {
    for (int32_t r = 0; r < num_requests; ++r) propose_one(requests[r]);
  }

 private:
  void propose_one(loom_spec_request& q) const {
    const int32_t len = q.num_tokens;
    const int32_t* t = q.token_ids;
    for (int32_t n = std::min(max_n_, len - 1); n >= min_n_; --n) {
      const int32_t* pattern = t + (len - n);
      // Occurrences starting at i < len - n, latest first (the suffix itself starts at len - n).
      for (int32_t i = len - n - 1; i >= 0; --i) {
        if (!std::equal(pattern, pattern + n, t + i)) continue;
        const int32_t from = i + n;
        for (int32_t j = 0; j < q.max_drafts; ++j) {
          const int32_t src = from + j;
          q.draft_ids[j] = src < len ? t[src] : q.draft_ids[src - len];
        }
        q.num_drafts = q.max_drafts;
        return;
      }
    }
  }

  int32_t min_n_;
  int32_t max_n_;
};

}  // namespace

LOOM_SPECULATOR_PLUGIN(NgramSpeculator, "ngram", "0.1.0",
                       "prompt-lookup decoding: propose what followed the last n tokens earlier in the request");
