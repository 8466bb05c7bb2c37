/* Scheduler plugins: which requests run each step and how many tokens each advances.
 * "Schedule tokens, not phases": a prefill chunk, one decode token and k+1 verify tokens are all
 * just num_new_tokens for a request whose num_computed_tokens lags its num_tokens.
 *
 * Threading and lifetime contract
 * - One thread, the engine thread, makes every call into a scheduler instance (create, the
 *   vtable members, destroy); calls never overlap, so an instance needs no locking.
 * - loom_request_view passed to add_request: valid for the call only (copy what you keep).
 * - loom_sched_context and loom_sched_output: host-owned, valid for one schedule() call only.
 *   The cache handle, get_request and preempt may be called any number of times during it, from
 *   the calling thread only, never after it returns. A request view that get_request fills points
 *   into host memory valid until the next get_request, preempt or cache call.
 *
 * Who owns KV memory (interface 1.1)
 * - The host is the only one that frees blocks or moves their contents. A scheduler may call the
 *   cache's fits, match_prefix, can_allocate, allocate and append; it never calls the cache's
 *   free (the host hands 1.1 schedulers a cache handle whose free refuses).
 * - To make room a scheduler PROPOSES a preemption through ctx->preempt(host_ctx, id, mode, err).
 *   The host carries it out at once, before preempt returns, in call order: with
 *   LOOM_PREEMPT_SWAP it first saves the request's computed tokens' blocks from its live block
 *   table into the cache_offload tier, then (both modes) frees the blocks through the cache and
 *   resets the request to num_computed_tokens = 0 (what the tier kept is restored instead of
 *   recomputed when it is scheduled again). The room is free for the rest of this schedule()
 *   call. The request stays in the scheduler's queues; the host records the preemption itself
 *   (a 1.1 scheduler leaves out->num_preempted at 0). A request preempted in a call must not be
 *   in out->scheduled of that call.
 * - A request that can never run is listed in out->rejected with its reason in
 *   out->rejected_reasons; the host finishes it with that message and calls remove_request.
 *
 * Interface 1.2 adds time: the step-time model (ctx->predicted_step_us), the measured swap cost
 * (ctx->swap_us_per_token) and the request's SLO targets and tenant in loom_request_view. 1.1
 * plugins still load: the host fills their (shorter) request views only up to cache_salt.
 *
 * Interface 1.0 schedulers (no preempt, no reasons) still load: they free a victim's blocks
 * themselves and list it in out->preempted; the host then resets it to recompute (it cannot swap
 * blocks already freed) and asks the cache for a rejected request's reason. */
#ifndef LOOM_SCHEDULER_H
#define LOOM_SCHEDULER_H

#include "loom/cache.h"
#include "loom/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_SCHEDULER_IFACE_MAJOR 1
#define LOOM_SCHEDULER_IFACE_MINOR 2

typedef struct loom_scheduler_create_args {
  uint32_t struct_size;
  int32_t max_model_len;  /* longest sequence the model accepts */
} loom_scheduler_create_args;

/* A cache instance as the host hands it to another plugin: call vtable->fn(self, ...). */
typedef struct loom_cache_handle {
  void* self;
  const loom_cache_vtable* vtable;
} loom_cache_handle;

/* How a preempted request gets its KV back (interface 1.1). */
typedef enum loom_preempt_mode {
  LOOM_PREEMPT_RECOMPUTE = 0, /* blocks freed; its tokens are computed again when rescheduled */
  LOOM_PREEMPT_SWAP = 1       /* blocks saved to the cache_offload tier, then freed; restored from
                                 the tier when rescheduled (only when ctx->swap_available) */
} loom_preempt_mode;

/* What schedule() may consult. Valid for the duration of the call. */
typedef struct loom_sched_context {
  uint32_t struct_size;
  loom_cache_handle cache;
  void* host_ctx;
  /* Fills *out with the request's current state (token counts change between steps). */
  loom_status (*get_request)(void* host_ctx, uint64_t request_id, loom_request_view* out);
  int64_t now_us;  /* steady-clock microseconds at the start of this step */
  /* --- interface 1.1 --- */
  /* Nonzero when a cache_offload tier is configured: LOOM_PREEMPT_SWAP is accepted. */
  int32_t swap_available;
  /* Preempts a running request now (see the contract at the top); mode is a loom_preempt_mode.
   * LOOM_ERR_INVALID_ARGUMENT for an unknown or already preempted id, or SWAP without a tier. */
  loom_status (*preempt)(void* host_ctx, uint64_t request_id, int32_t mode, loom_error_buf* err);
  /* --- interface 1.2 --- */
  /* The host's step-time model, fitted online from measured steps (core/engine/step_time_model):
   * predicted wall microseconds of a step that computes prefill_tokens prompt tokens and
   * decode_tokens decode tokens while attending to kv_tokens context tokens in all. 0 while the
   * host knows nothing yet (no calibration, no step measured). */
  int64_t (*predicted_step_us)(void* host_ctx, int32_t prefill_tokens, int32_t decode_tokens, int64_t kv_tokens);
  /* Measured cost of preempting by swap, microseconds per token (save now plus restore later);
   * 0 = not measured yet. With predicted_step_us it lets a scheduler choose swap or recompute. */
  double swap_us_per_token;
} loom_sched_context;

typedef struct loom_scheduled_request {
  uint64_t request_id;
  int32_t num_new_tokens;     /* tokens to compute this step, after num_cached_tokens */
  int32_t num_cached_tokens;  /* > 0 only on the step a sequence is allocated with a prefix hit:
                                 the host advances num_computed_tokens to it before computing */
} loom_scheduled_request;

/* Arrays are host-owned with the given capacities (each >= the number of live requests). */
typedef struct loom_sched_output {
  uint32_t struct_size;
  loom_scheduled_request* scheduled;
  int32_t scheduled_capacity;
  int32_t num_scheduled;
  /* Interface 1.0 only: requests whose blocks the scheduler freed to make room; the host resets
   * them to recompute. They stay in the scheduler's queue. 1.1 schedulers call ctx->preempt. */
  uint64_t* preempted;
  int32_t preempted_capacity;
  int32_t num_preempted;
  /* Requests that can never run (e.g. too long for the whole pool); the host finishes them with
   * an error and calls remove_request. */
  uint64_t* rejected;
  int32_t rejected_capacity;
  int32_t num_rejected;
  /* --- interface 1.1 --- */
  /* [rejected_capacity, reason_size] chars: row i holds rejected[i]'s reason, NUL-terminated
   * (truncated to reason_size - 1 chars), e.g. the cache's fits message. */
  char* rejected_reasons;
  int32_t reason_size;
} loom_sched_output;

typedef struct loom_sched_stats {
  uint32_t struct_size;
  int32_t num_waiting;
  int32_t num_running;
  int64_t num_preemptions;  /* cumulative */
} loom_sched_stats;

typedef struct loom_scheduler_vtable {
  uint32_t struct_size;
  /* Enqueues a new request (num_computed_tokens == 0). */
  loom_status (*add_request)(void* self, const loom_request_view* req, loom_error_buf* err);
  /* Forgets a finished or aborted request. The host frees its blocks itself. Unknown ids are not
   * an error. */
  loom_status (*remove_request)(void* self, uint64_t request_id, loom_error_buf* err);
  /* Decides this step: fills out->scheduled and out->rejected, allocating or appending KV room
   * through ctx->cache for every scheduled token and preempting through ctx->preempt. */
  loom_status (*schedule)(void* self, const loom_sched_context* ctx, loom_sched_output* out,
                          loom_error_buf* err);
  /* Queue depth and counters. */
  loom_status (*stats)(void* self, loom_sched_stats* out, loom_error_buf* err);
} loom_scheduler_vtable;

#ifdef __cplusplus
}
#endif

#endif /* LOOM_SCHEDULER_H */
