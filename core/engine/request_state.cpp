#include "core/engine/request_state.hpp"

namespace loom {

RequestState::RequestState(uint64_t id_, GenerateRequest request, const Tokenizer& tokenizer,
                           int64_t now_us, uint64_t seed_, uint64_t group_, int32_t index_)
    : id(id_),
      token_ids(std::move(request.prompt)),
      num_prompt_tokens(static_cast<int32_t>(token_ids.size())),
      max_total_tokens(num_prompt_tokens + request.sampling.max_tokens),
      sampling(std::move(request.sampling)),
      priority(request.priority),
      slo(request.slo),
      tenant_id(request.tenant_id),
      arrival_time_us(now_us),
      sink(std::move(request.sink)),
      group(group_),
      index(index_),
      seed(seed_),
      // A request scoring its prompt must compute every prompt row, so it reads no one else's
      // prefix blocks: a salt of its own (it can still reuse its own after a preemption, whose
      // rows it has recorded already).
      cache_salt(sampling.prompt_logprobs ? (request.cache_salt ^ (0x9E3779B97F4A7C15ULL * (id_ + 1))) | 1
                                                  : request.cache_salt),
      rng(seed_),
      detokenizer(tokenizer, token_ids, /*render_special=*/!sampling.skip_special_tokens),
      stop_checker(sampling.stop, sampling.include_stop_str_in_output) {}

loom_request_view RequestState::view() const {
  loom_request_view v{};
  v.struct_size = sizeof(v);
  v.request_id = id;
  v.token_ids = token_ids.data();
  v.num_tokens = num_tokens();
  v.num_prompt_tokens = num_prompt_tokens;
  v.num_computed_tokens = num_computed_tokens;
  v.max_total_tokens = max_total_tokens;
  // The view's priority is "larger = more urgent"; the API's is vLLM's "lower runs first". The
  // server keeps priorities within +-INT32_MAX, so the negation cannot overflow.
  v.priority = -priority;
  v.arrival_time_us = arrival_time_us;
  v.cache_salt = cache_salt;
  v.ttft_target_ms = slo.ttft_ms;
  v.tpot_target_ms = slo.tpot_ms;
  v.tenant_id = tenant_id;
  return v;
}

}  // namespace loom
