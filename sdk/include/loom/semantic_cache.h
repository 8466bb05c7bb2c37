/* Semantic-cache plugins: return a stored answer for a repeated or near-identical request
 * before it reaches the engine.
 *
 * Threads and lifetimes. lookup and store come from the server's request threads, several at
 * once: an instance is thread-safe. destroy() comes once, after every call has returned. A query's
 * strings and an answer's buffer are valid for one call; store copies what it keeps. */
#ifndef LOOM_SEMANTIC_CACHE_H
#define LOOM_SEMANTIC_CACHE_H

#include "loom/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_SEMANTIC_CACHE_IFACE_MAJOR 1
#define LOOM_SEMANTIC_CACHE_IFACE_MINOR 0

/* One request as the cache sees it: the model, the tenant and the final prompt text (after the
 * chat template), plus a canonical text of the sampling parameters that change the answer. */
typedef struct loom_semantic_query {
  uint32_t struct_size;
  const char* model;
  const char* tenant;       /* "" when the server has no tenants */
  const char* prompt;       /* UTF-8, prompt_len bytes, not NUL-terminated necessarily */
  size_t prompt_len;
  const char* params;       /* canonical sampling parameters, e.g. "max_tokens=16;temperature=0" */
} loom_semantic_query;

/* A caller-owned buffer for a stored answer. */
typedef struct loom_semantic_answer {
  uint32_t struct_size;
  char* text;               /* written, not NUL-terminated */
  size_t capacity;
  size_t length;            /* set by lookup; when > capacity, call again with a bigger buffer */
  int32_t completion_tokens;
  int32_t finish_reason;    /* 0 = stop, 1 = length */
} loom_semantic_answer;

typedef struct loom_semantic_cache_vtable {
  uint32_t struct_size;
  /* Sets *hit to 1 and fills *answer when a stored answer matches the query, else *hit = 0. */
  loom_status (*lookup)(void* self, const loom_semantic_query* query, int32_t* hit,
                        loom_semantic_answer* answer, loom_error_buf* err);
  /* Stores the answer produced for query (the plugin copies what it keeps). */
  loom_status (*store)(void* self, const loom_semantic_query* query,
                       const loom_semantic_answer* answer, loom_error_buf* err);
} loom_semantic_cache_vtable;

#ifdef __cplusplus
}
#endif

#endif /* LOOM_SEMANTIC_CACHE_H */
