// speculator/draft: draft-model speculation. A second model file that shares the target's
// tokenizer (the host refuses any other) proposes k tokens per request by greedy decoding, k
// forward steps batched across every request asking for drafts. The host runs the model
// (speculator interface 1.1, loom_draft_model_api) with a KV pool of its own; this plugin only
// keeps, per request, the tokens whose KV the draft holds. Each proposal keeps the longest prefix
// they share with the request's tokens (accepted drafts stay, rejected ones are rolled back),
// computes the rest (the whole prompt on the first call) and then the drafts. Drafts are
// deterministic (no distributions): sampled requests verify them as one-hot proposals, which
// rejection sampling keeps lossless.
#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "loom/sdk.hpp"
#include "loom/sdk_config.hpp"
#include "loom/speculator.h"

namespace {

struct DraftConfig {
  std::string model;
  std::string quantization;
  std::string attention;
  std::string kv_dtype;
  int64_t kv_tokens = 16384;
};

class DraftSpeculator {
 public:
  static const loom::sdk::ConfigSpec<DraftConfig>& config_spec() {
    static const auto spec =
        loom::sdk::ConfigSpec<DraftConfig>("speculator draft")
            .string("model", &DraftConfig::model, "the draft model: a GGUF file or Hugging Face directory (required)")
            .string("quantization", &DraftConfig::quantization,
                    "its quantization plugin (default: the one that claims its weights)")
            .string("attention", &DraftConfig::attention, "its attention plugin (default: the target's)")
            .string("kv_dtype", &DraftConfig::kv_dtype, "its KV cache element type (default: the target's)")
            .integer("kv_tokens", &DraftConfig::kv_tokens,
                     "its KV pool, in positions of all requests together; a request that does not fit is not drafted",
                     16, int64_t{1} << 30);
    return spec;
  }

  DraftSpeculator(const loom::sdk::Host& host, const loom_speculator_create_args& args, const DraftConfig& cfg)
      : vocab_(args.vocab_size) {
    if (!loom::sdk::covers(args, &loom_speculator_create_args::draft_models) || args.draft_models == nullptr)
      throw loom::sdk::Error(LOOM_ERR_UNSUPPORTED,
                             "speculator draft needs a host that runs draft models (speculator interface 1.1)");
    if (cfg.model.empty()) throw loom::sdk::ConfigError("speculator draft: \"model\" (the draft model's path) is required");
    api_ = args.draft_models;
    nlohmann::json options = {{"kv_tokens", cfg.kv_tokens}};
    if (!cfg.kv_dtype.empty()) options["kv_dtype"] = cfg.kv_dtype;
    if (!cfg.quantization.empty()) options["quantization"] = cfg.quantization;
    if (!cfg.attention.empty()) options["attention"] = cfg.attention;
    char message[1024] = "";
    loom_error_buf err{message, sizeof message};
    const loom_status status = api_->open(api_->ctx, cfg.model.c_str(), options.dump().c_str(), &model_, &err);
    if (status != LOOM_OK) throw loom::sdk::Error(status, "speculator draft: " + std::string(message));
    host.info("draft model ", cfg.model, " proposes up to ", args.num_speculative_tokens, " tokens per request");
  }
  ~DraftSpeculator() { api_->close(api_->ctx, model_); }
  DraftSpeculator(const DraftSpeculator&) = delete;
  DraftSpeculator& operator=(const DraftSpeculator&) = delete;

  void propose(loom_spec_request* requests, int32_t num_requests) {
    // Step 0: every asking request's tokens the draft does not hold yet.
    seqs_.clear();
    owner_.clear();
    int32_t steps = 0;
    for (int32_t r = 0; r < num_requests; ++r) {
      loom_spec_request& q = requests[r];
      if (q.max_drafts < 1 || q.num_tokens < 1) continue;
      std::vector<int32_t>& held = held_[q.request_id];
      const auto shared = std::mismatch(held.begin(), held.end(), q.token_ids, q.token_ids + q.num_tokens);
      // At least the last token is computed again: its logits are the first draft's.
      const int32_t keep = std::min(static_cast<int32_t>(shared.first - held.begin()), q.num_tokens - 1);
      held.assign(q.token_ids, q.token_ids + q.num_tokens);
      seqs_.push_back(loom_draft_seq{q.request_id, keep, q.token_ids + keep, q.num_tokens - keep});
      owner_.push_back(r);
      steps = std::max(steps, q.max_drafts);
    }
    for (int32_t j = 0; j < steps && !seqs_.empty(); ++j) {
      forward();
      next_.clear();
      next_owner_.clear();
      for (size_t i = 0; i < seqs_.size(); ++i) {
        loom_spec_request& q = requests[owner_[i]];
        if (ok_[i] == 0) {  // the draft's pool had no room: the host dropped it; the drafts so far stand
          held_.erase(q.request_id);
          continue;
        }
        q.draft_ids[j] = argmax(logits_.data() + i * static_cast<size_t>(vocab_));
        q.num_drafts = j + 1;
        if (j + 1 >= q.max_drafts) continue;
        std::vector<int32_t>& held = held_[q.request_id];
        next_.push_back(loom_draft_seq{q.request_id, static_cast<int32_t>(held.size()), q.draft_ids + j, 1});
        next_owner_.push_back(owner_[i]);
        held.push_back(q.draft_ids[j]);
      }
      seqs_.swap(next_);
      owner_.swap(next_owner_);
    }
  }

  void finish(uint64_t request_id, const int32_t*, int32_t, int32_t) {
    api_->release(api_->ctx, model_, request_id);
    held_.erase(request_id);
  }

 private:
  void forward() {
    logits_.resize(seqs_.size() * static_cast<size_t>(vocab_));
    ok_.assign(seqs_.size(), 0);
    char message[1024] = "";
    loom_error_buf err{message, sizeof message};
    const loom_status status = api_->forward(api_->ctx, model_, seqs_.data(), static_cast<int32_t>(seqs_.size()),
                                             logits_.data(), ok_.data(), &err);
    if (status != LOOM_OK) {
      // The draft's state is unknown after a failed step: start every request over.
      for (const auto& [id, held] : held_) api_->release(api_->ctx, model_, id);
      held_.clear();
      throw loom::sdk::Error(status, "speculator draft: " + std::string(message));
    }
  }

  // The draft's greedy choice; the lowest id among equal logits.
  int32_t argmax(const float* row) const {
    int32_t best = 0;
    for (int32_t t = 1; t < vocab_; ++t)
      if (row[t] > row[best]) best = t;
    return best;
  }

  int32_t vocab_;
  const loom_draft_model_api* api_ = nullptr;
  void* model_ = nullptr;
  std::unordered_map<uint64_t, std::vector<int32_t>> held_;  // per request: the tokens the draft's KV holds
  std::vector<loom_draft_seq> seqs_, next_;                   // this draft step's sequences, the next one's
  std::vector<int32_t> owner_, next_owner_;                   // their requests' indices
  std::vector<float> logits_;                                 // [seqs, vocab]
  std::vector<int32_t> ok_;                                   // [seqs]
};

}  // namespace

LOOM_SPECULATOR_PLUGIN(DraftSpeculator, "draft", "0.1.0",
                       "draft-model speculation: a smaller model with the target's tokenizer proposes greedily");
