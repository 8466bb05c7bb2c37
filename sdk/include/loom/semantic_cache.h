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
#define LOOM_SEMANTIC_CACHE_IFACE_MINOR 2

/* Embeds `text` (UTF-8, len bytes) with the host's [embedding] model: writes its L2-normalised
 * sentence embedding to out[embedding_dim]. Thread-safe; may block for the encoder. */
typedef loom_status (*loom_semantic_embed_fn)(void* ctx, const char* text, size_t len, float* out,
                                              loom_error_buf* err);

/* What the host hands create() (1.2; a 1.0 or 1.1 plugin has none and reads none). Valid
 * during create() only: a plugin embeds what it needs there (a calibration set) and keeps no
 * pointer to it. */
typedef struct loom_semantic_cache_create_args {
  uint32_t struct_size;
  int32_t embedding_dim;        /* the [embedding] model's dimension; 0 when the server has none */
  loom_semantic_embed_fn embed; /* NULL when the server has no [embedding] model */
  void* embed_ctx;              /* passed to embed */
} loom_semantic_cache_create_args;

/* One request as the cache sees it: the model, the tenant and the final prompt (after the chat
 * template), plus a canonical text of every parameter that changes the answer. Members after
 * `params` are 1.1: the host fills them and sets struct_size to cover them; a 1.0 plugin reads
 * only the first six. */
typedef struct loom_semantic_query {
  uint32_t struct_size;
  const char* model;
  const char* tenant;       /* tenant and cache salt; "" when the request names neither */
  const char* prompt;       /* the rendered prompt's token ids as decimal text ("1,15043,29892"),
                               prompt_len bytes, not NUL-terminated necessarily */
  size_t prompt_len;
  const char* params;       /* canonical parameters: the request's fields that change the answer
                               (sampling, tools, response format, ...) as sorted JSON */
  /* 1.1 */
  const char* text;         /* what the request asks: the last user turn (chat) or the prompt text
                               (completions), UTF-8, text_len bytes */
  size_t text_len;
  const char* context;      /* a digest of everything else the answer depends on (the other turns,
                               the system prompt, the template); equal contexts are required */
  const float* embedding;   /* [embedding_dim] L2-normalised sentence embedding of `text` by the
                               host's [embedding] model; NULL unless needs_embedding says 1 */
  int32_t embedding_dim;
} loom_semantic_query;

/* A caller-owned buffer for a stored answer. */
typedef struct loom_semantic_answer {
  uint32_t struct_size;
  char* text;               /* written, not NUL-terminated */
  size_t capacity;
  size_t length;            /* set by lookup; when > capacity, call again with a bigger buffer */
  int32_t completion_tokens;
  int32_t finish_reason;    /* 0 = stop, 1 = length */
  /* 1.1 */
  float similarity;         /* set by lookup on a hit: 1 for an exact match, else the cosine */
} loom_semantic_answer;

/* The plugin's own counters (1.1), for /metrics. */
typedef struct loom_semantic_cache_stats {
  uint32_t struct_size;
  int64_t entries;          /* answers held now */
  int64_t evictions;        /* answers dropped to stay within capacity (LRU) */
  int64_t expirations;      /* answers dropped because their TTL passed */
} loom_semantic_cache_stats;

typedef struct loom_semantic_cache_vtable {
  uint32_t struct_size;
  /* Sets *hit to 1 and fills *answer when a stored answer matches the query, else *hit = 0. */
  loom_status (*lookup)(void* self, const loom_semantic_query* query, int32_t* hit,
                        loom_semantic_answer* answer, loom_error_buf* err);
  /* Stores the answer produced for query (the plugin copies what it keeps). */
  loom_status (*store)(void* self, const loom_semantic_query* query,
                       const loom_semantic_answer* answer, loom_error_buf* err);
  /* 1.1 */
  /* (optional) 1 when lookup and store need query->embedding (the host then embeds `text` with
   * its [embedding] model, and refuses to start without one); NULL = 0. */
  int32_t (*needs_embedding)(void* self);
  /* (optional) Fills *out with the plugin's counters; NULL = none reported. */
  loom_status (*stats)(void* self, loom_semantic_cache_stats* out, loom_error_buf* err);
} loom_semantic_cache_vtable;

#ifdef __cplusplus
}
#endif

#endif /* LOOM_SEMANTIC_CACHE_H */
