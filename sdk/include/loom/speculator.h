/* Speculator plugins: propose draft tokens for running requests. The engine runs the target model
 * over the last token plus the drafts in one step (k + 1 positions), keeps the longest prefix the
 * target agrees with (greedy: equal argmax; sampled: rejection sampling, which keeps the target's
 * distribution exactly) plus one token of its own, and rolls the rejected tokens' KV back. A
 * speculator never sees logits or KV: it proposes from tokens (prompt lookup, suffix statistics,
 * or a draft model the host runs for it) and is told how many of its drafts were accepted.
 *
 * Threads and lifetimes. The host creates, calls and destroys an instance from one thread at a
 * time (start-up, then the engine thread), never concurrently. Pointers passed into a call (the
 * request array, their token ids, the output buffers, the error buffer) are valid for that call
 * only; a plugin copies what it keeps. The loom_host_api and the create args live until destroy().
 * A request id is proposed for between its first decode step and finish(); it may be preempted
 * and resumed in between (its token ids then stay the same accepted tokens). */
#ifndef LOOM_SPECULATOR_H
#define LOOM_SPECULATOR_H

#include "loom/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_SPECULATOR_IFACE_MAJOR 1
#define LOOM_SPECULATOR_IFACE_MINOR 1

/* 1.1: draft models the host runs for a plugin (a second model file through the host's executor,
 * attention and quantization plugins, with a KV pool of its own), so a speculator can propose
 * from a small model without linking an executor. Positions of a sequence are 0, 1, ...; each
 * forward call first keeps the sequence's positions [0, keep) (rolling back what was computed
 * after them, rejected drafts included) and then appends its tokens. */
typedef struct loom_draft_seq {
  uint64_t seq_id;           /* the plugin's key, e.g. the request id */
  int32_t keep;              /* 0 .. positions the host holds for seq_id (0 for a new one) */
  const int32_t* token_ids;  /* [num_tokens] >= 1, appended at positions keep .. */
  int32_t num_tokens;
} loom_draft_seq;

typedef struct loom_draft_model_api {
  uint32_t struct_size;
  void* ctx; /* pass back as the first argument of every call below */
  /* Loads the model at `path` (GGUF file or Hugging Face directory; relative to the working
   * directory) with options_json {"quantization", "attention", "kv_dtype", "kv_tokens"}, every
   * key optional (defaults: the quantization plugin claiming its weights, the target's attention
   * plugin and KV dtype, 16384 positions in all). Refused (LOOM_ERR_INVALID_ARGUMENT) when its
   * tokenizer's vocabulary is not the target's token for token. */
  loom_status (*open)(void* ctx, const char* path, const char* options_json, void** model, loom_error_buf* err);
  /* One forward step of num_seqs sequences together: logits [num_seqs, vocab_size] of each one's
   * last token. ok[i] = 0 where sequence i did not fit in the KV pool: it was dropped (as by
   * release) and its logits row is unset; the others ran. */
  loom_status (*forward)(void* ctx, void* model, const loom_draft_seq* seqs, int32_t num_seqs, float* logits,
                         int32_t* ok, loom_error_buf* err);
  /* Drops seq_id's positions (unknown ids are ignored). */
  void (*release)(void* ctx, void* model, uint64_t seq_id);
  /* Frees the model; it must not be used after. */
  void (*close)(void* ctx, void* model);
} loom_draft_model_api;

typedef struct loom_speculator_create_args {
  uint32_t struct_size;
  int32_t vocab_size;              /* token ids are in [0, vocab_size) */
  int32_t max_model_len;           /* longest sequence the model accepts */
  int32_t num_speculative_tokens;  /* k: the most drafts the host ever asks for per request */
  /* 1.1 (read only when struct_size covers it): the host's draft models, valid until destroy();
   * NULL where the host runs none. */
  const loom_draft_model_api* draft_models;
} loom_speculator_create_args;

/* One running request the host asks drafts for, and the plugin's answer. */
typedef struct loom_spec_request {
  uint32_t struct_size;
  uint64_t request_id;
  const int32_t* token_ids;  /* [num_tokens] prompt then accepted output, the last one not yet computed */
  int32_t num_tokens;
  int32_t num_prompt_tokens;
  int32_t max_drafts;        /* propose at most this many (1 .. num_speculative_tokens) */
  /* Written by the plugin. */
  int32_t* draft_ids;        /* [max_drafts] the proposed continuation of token_ids */
  int32_t num_drafts;        /* 0 .. max_drafts; 0 = nothing to propose this step */
  /* [max_drafts, vocab_size] (may be NULL: the host wants no distributions). A plugin that samples
   * its drafts writes row i = the distribution draft_ids[i] was drawn from and sets has_probs = 1;
   * otherwise its drafts count as deterministic (all the draft's mass on draft_ids[i]). */
  float* draft_probs;
  int32_t has_probs;
} loom_spec_request;

typedef struct loom_speculator_vtable {
  uint32_t struct_size;
  /* Fills draft_ids/num_drafts (and optionally draft_probs/has_probs) of each of the
   * num_requests requests. The host has set num_drafts = 0 and has_probs = 0 before the call. */
  loom_status (*propose)(void* self, loom_spec_request* requests, int32_t num_requests, loom_error_buf* err);
  /* (optional) After verification: of the num_drafts drafts last proposed for request_id, the
   * target accepted the first num_accepted (0 .. num_drafts). */
  loom_status (*observe)(void* self, uint64_t request_id, int32_t num_drafts, int32_t num_accepted,
                         loom_error_buf* err);
  /* (optional) The request ended (finished, aborted or failed) with these tokens: the plugin drops
   * what it keeps for it, and may keep its output for other requests (cross-request state). */
  loom_status (*finish)(void* self, uint64_t request_id, const int32_t* token_ids, int32_t num_tokens,
                        int32_t num_prompt_tokens, loom_error_buf* err);
} loom_speculator_vtable;

#ifdef __cplusplus
}
#endif

#endif /* LOOM_SPECULATOR_H */
