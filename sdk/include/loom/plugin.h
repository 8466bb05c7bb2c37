/* Loom plugin ABI: the descriptor every plugin exports and the host API it is given.
 *
 * The boundary is C: plain structs of function pointers and opaque handles. No C++ type,
 * exception or ownership crosses it. Every struct starts with `struct_size` so either side can
 * tell which fields the other knows; structs only grow at the end (anything else bumps
 * LOOM_ABI_VERSION). */
#ifndef LOOM_PLUGIN_H
#define LOOM_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "loom/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped on any incompatible change to plugin.h or types.h; the host requires an exact match. */
#define LOOM_ABI_VERSION 1

/* Name of the exported entry symbol (made with BOOST_DLL_ALIAS; see sdk.hpp). */
#define LOOM_PLUGIN_ENTRY_SYMBOL "loom_plugin_entry_v1"

typedef enum loom_plugin_kind {
  LOOM_KIND_ATTENTION = 1,
  LOOM_KIND_QUANTIZATION = 2,
  LOOM_KIND_SCHEDULER = 3,
  LOOM_KIND_CACHE = 4,
  LOOM_KIND_CACHE_OFFLOAD = 5,
  LOOM_KIND_SEMANTIC_CACHE = 6,
  LOOM_KIND_SPECULATOR = 7
} loom_plugin_kind;

typedef enum loom_status {
  LOOM_OK = 0,
  LOOM_ERR_INVALID_ARGUMENT = 1, /* a caller passed something the callee cannot accept */
  LOOM_ERR_UNSUPPORTED = 2,      /* valid, but this implementation does not do it */
  LOOM_ERR_OUT_OF_MEMORY = 3,    /* host memory, device memory or KV blocks ran out */
  LOOM_ERR_NOT_FOUND = 4,        /* unknown id or key */
  LOOM_ERR_CONFIG = 5,           /* the plugin's own config table is wrong */
  LOOM_ERR_INTERNAL = 6          /* a bug or an exception caught at the boundary */
} loom_status;

/* Caller-owned buffer for an error message. The callee writes at most `capacity` bytes,
 * always NUL-terminated, and truncates silently. `data` may be NULL when capacity is 0.
 * Capability checks (cache fits and can_allocate, quantization supports) answer in one call:
 * LOOM_OK with *ok = 0 means "no", and the callee writes the reason into this buffer in that same
 * call. The caller clears the buffer first (an empty text: no reason given) and never calls again
 * to learn why. */
typedef struct loom_error_buf {
  char* data;
  size_t capacity;
} loom_error_buf;

typedef enum loom_log_level {
  LOOM_LOG_TRACE = 0,
  LOOM_LOG_DEBUG = 1,
  LOOM_LOG_INFO = 2,
  LOOM_LOG_WARN = 3,
  LOOM_LOG_ERROR = 4
} loom_log_level;

/* Work item callback for parallel_for: processes items [begin, end) on worker `thread`. */
typedef void (*loom_parallel_fn)(void* ctx, int64_t begin, int64_t end, int32_t thread);

/* What the host offers every plugin. Valid from create() until destroy(). */
typedef struct loom_host_api {
  uint32_t struct_size;
  uint32_t abi_version;
  void* host_ctx; /* opaque; pass back as the first argument of every call below */
  /* Logs one line through the host's logger, prefixed with the plugin's kind and name. */
  void (*log)(void* host_ctx, loom_log_level level, const char* message);
  /* Runs fn over [0, n_items) split across the host's persistent CPU thread pool; returns when all
   * items are done. Calls from inside fn run inline. */
  void (*parallel_for)(void* host_ctx, int64_t n_items, loom_parallel_fn fn, void* ctx);
  /* Number of worker threads parallel_for uses (>= 1). */
  int32_t num_threads;
  /* Number of CUDA devices visible to the host (0 on a CPU-only build or machine). */
  int32_t num_cuda_devices;
} loom_host_api;

/* The descriptor a plugin returns from its entry function. Static storage, never freed. */
typedef struct loom_plugin_desc {
  uint32_t struct_size;
  uint32_t abi_version;     /* LOOM_ABI_VERSION the plugin was built with; must equal the host's */
  loom_plugin_kind kind;
  uint32_t iface_major;     /* the kind's interface version: major must equal the host's, */
  uint32_t iface_minor;     /* minor must not be newer than the host's */
  const char* name;         /* e.g. "naive"; matches `plugin = "..."` in the config */
  const char* version;      /* the plugin's own version string, e.g. "0.1.0" */
  const char* description;  /* one line for listings */
  /* (optional) How well this plugin fits this machine: 0 = cannot run here (reason written to
   * `reason`), higher wins among variants. NULL means 1. */
  int32_t (*score)(const loom_host_api* host, loom_error_buf* reason);
  /* (optional) Checks the plugin's config (JSON object text) without creating anything;
   * writes every problem found, separated by "; ". */
  loom_status (*validate)(const char* config_json, loom_error_buf* err);
  /* Creates an instance. `create_args` is the kind's typed create-args struct (see the kind's
   * header; NULL for kinds without one). On success sets *self and *vtable (the kind's vtable,
   * static storage). */
  loom_status (*create)(const loom_host_api* host, const void* create_args, const char* config_json,
                        void** self, const void** vtable, loom_error_buf* err);
  /* Destroys an instance made by create. Never fails. */
  void (*destroy)(void* self);
  /* ---- descriptors of 1 + 8 pointers end here; what follows is read only when struct_size
   * covers it (LOOM_PLUGIN_DESC_MIN_SIZE is the smallest the host accepts). ---- */
  /* (optional) The plugin's config keys as JSON text, static storage: an array of objects
   * {"key", "type", "default", "help"} (sdk_config.hpp writes it). NULL: not published. */
  const char* config_schema;
} loom_plugin_desc;

/* The first descriptor layout (through `destroy`); older plugins' descriptors are this long. */
#define LOOM_PLUGIN_DESC_MIN_SIZE (offsetof(loom_plugin_desc, config_schema))

/* Type of the exported entry. */
typedef const loom_plugin_desc* (*loom_plugin_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* LOOM_PLUGIN_H */
