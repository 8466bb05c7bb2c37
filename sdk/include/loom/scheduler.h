/* Scheduler plugins: which requests run each step and how many tokens each advances.
 * "Schedule tokens, not phases": a prefill chunk, one decode token and k+1 verify tokens are all
 * just num_new_tokens for a request whose num_computed_tokens lags its num_tokens. */
#ifndef LOOM_SCHEDULER_H
#define LOOM_SCHEDULER_H

#include "loom/cache.h"
#include "loom/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_SCHEDULER_IFACE_MAJOR 1
#define LOOM_SCHEDULER_IFACE_MINOR 0

typedef struct loom_scheduler_create_args {
  uint32_t struct_size;
  int32_t max_model_len;  /* longest sequence the model accepts */
} loom_scheduler_create_args;

/* A cache instance as the host hands it to another plugin: call vtable->fn(self, ...). */
typedef struct loom_cache_handle {
  void* self;
  const loom_cache_vtable* vtable;
} loom_cache_handle;

/* What schedule() may consult. Valid for the duration of the call. */
typedef struct loom_sched_context {
  uint32_t struct_size;
  loom_cache_handle cache;
  void* host_ctx;
  /* Fills *out with the request's current state (token counts change between steps). */
  loom_status (*get_request)(void* host_ctx, uint64_t request_id, loom_request_view* out);
  int64_t now_us;  /* steady-clock microseconds at the start of this step */
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
  /* Requests whose blocks the scheduler freed to make room; the host resets them to recompute
   * (num_computed_tokens = 0). They stay in the scheduler's queue. */
  uint64_t* preempted;
  int32_t preempted_capacity;
  int32_t num_preempted;
  /* Requests that can never run (e.g. too long for the whole pool); the host finishes them with
   * an error and calls remove_request. */
  uint64_t* rejected;
  int32_t rejected_capacity;
  int32_t num_rejected;
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
  /* Decides this step: fills out->scheduled (and preempted/rejected), allocating or appending
   * KV room through ctx->cache for every scheduled token. */
  loom_status (*schedule)(void* self, const loom_sched_context* ctx, loom_sched_output* out,
                          loom_error_buf* err);
  /* Queue depth and counters. */
  loom_status (*stats)(void* self, loom_sched_stats* out, loom_error_buf* err);
} loom_scheduler_vtable;

#ifdef __cplusplus
}
#endif

#endif /* LOOM_SCHEDULER_H */
