// speculator "faults": a real speculator (`inner`, e.g. libloom-speculator-ngram.so) with one
// injected fault (fault_plan.hpp) in propose, observe or finish. "bad_value" in propose gives the
// first request of the call one draft more than it may have, its first draft a token id outside
// the vocabulary.
#include "fault_plan.hpp"
#include "loom/sdk.hpp"
#include "loom/speculator.h"

namespace {

using loom::fault::Fault;

class FaultySpeculator
    : public loom::fault::Wrapper<loom_speculator_vtable, loom_speculator_create_args, LOOM_KIND_SPECULATOR> {
 public:
  FaultySpeculator(const loom::sdk::Host& host, const loom_speculator_create_args& args, std::string_view json)
      : Wrapper(host, args, json), vocab_size_(args.vocab_size) {}

  loom_status propose(loom_spec_request* requests, int32_t num_requests) {
    const Fault f = plan_.at("propose");
    if (f == Fault::kError) return LOOM_ERR_INTERNAL;
    inner_.call(vt().propose, requests, num_requests);
    if (f == Fault::kBadValue && num_requests > 0) {
      loom_spec_request& r = requests[0];
      r.draft_ids[0] = vocab_size_;
      r.num_drafts = r.max_drafts + 1;
    }
    return LOOM_OK;
  }
  loom_status observe(uint64_t id, int32_t num_drafts, int32_t num_accepted) {
    if (plan_.at("observe") == Fault::kError) return LOOM_ERR_INTERNAL;
    if (vt().observe != nullptr) inner_.call(vt().observe, id, num_drafts, num_accepted);
    return LOOM_OK;
  }
  loom_status finish(uint64_t id, const int32_t* tokens, int32_t num_tokens, int32_t num_prompt_tokens) {
    if (plan_.at("finish") == Fault::kError) return LOOM_ERR_INTERNAL;
    if (vt().finish != nullptr) inner_.call(vt().finish, id, tokens, num_tokens, num_prompt_tokens);
    return LOOM_OK;
  }

 private:
  int32_t vocab_size_;
};

}  // namespace

LOOM_SPECULATOR_PLUGIN(FaultySpeculator, "faults", "0.1.0", "a speculator that fails on a chosen call (tests)");
