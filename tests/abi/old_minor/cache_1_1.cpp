// A cache plugin of interface 1.1: its create args end at max_model_len (1.2 added
// bytes_per_block_extra). A pool of 4 blocks of 4 tokens that answers layout and fits; the rest of
// its 1.1 vtable is there but unsupported.
#include <string>

#include "fixture.hpp"
#include "loom/types.h"

namespace {

struct CacheCreateArgs11 {  // loom_cache_create_args at 1.1
  uint32_t struct_size;
  int32_t n_layers, n_kv_heads, head_dim;
  loom_dtype kv_dtype;
  int64_t bytes_per_token;
  int32_t max_model_len;
};

struct CacheLayout {
  uint32_t struct_size;
  int32_t num_blocks, block_size;
};

using Fn = loom_status (*)();  // a member this fixture does not use (never called by the test)

struct CacheVtable11 {  // loom_cache_vtable at 1.1: layout, fits, then ten members in order
  uint32_t struct_size;
  loom_status (*layout)(void* self, CacheLayout* out, loom_error_buf* err);
  loom_status (*fits)(void* self, int32_t max_total_tokens, int32_t* ok, loom_error_buf* err);
  Fn match_prefix, can_allocate, allocate, append, commit, free, block_table, usage, fork, take_block_copies;
};

constexpr int32_t kBlocks = 4, kBlockSize = 4;

loom_status layout(void*, CacheLayout* out, loom_error_buf*) {
  out->num_blocks = kBlocks;
  out->block_size = kBlockSize;
  return LOOM_OK;
}

// The capability-check rule: LOOM_OK with *ok = 0 and the reason in err, from one call.
loom_status fits(void*, int32_t max_total_tokens, int32_t* ok, loom_error_buf* err) {
  *ok = max_total_tokens <= kBlocks * kBlockSize ? 1 : 0;
  if (*ok == 0) loom_fixture::say(err, ("old_minor holds 16 tokens, not " + std::to_string(max_total_tokens)).c_str());
  return LOOM_OK;
}

loom_status unsupported() { return LOOM_ERR_UNSUPPORTED; }

const CacheVtable11 kTable = {sizeof(CacheVtable11), &layout, &fits, nullptr, &unsupported, &unsupported,
                              &unsupported, nullptr, &unsupported, &unsupported, &unsupported, nullptr, nullptr};

struct Stateless {};

LOOM_FIXTURE_CREATE(CacheCreateArgs11, Stateless, &kTable);

}  // namespace

LOOM_FIXTURE_PLUGIN(LOOM_KIND_CACHE, "old_minor", create, loom_fixture::destroy<Stateless>);
