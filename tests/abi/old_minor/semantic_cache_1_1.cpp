// A semantic_cache plugin of interface 1.1, with its own copy of the 1.1 structs: no create args
// (1.2 added them, with the host's embed callback), a vtable ending at stats. It stores one
// answer and returns it, with similarity 0.5, for any query; needs_embedding says 0 and stats
// counts the answers stored.
#include <algorithm>
#include <cstring>
#include <string>

#include "fixture.hpp"
#include "loom/types.h"

namespace {

struct SemanticAnswer11 {
  uint32_t struct_size;
  char* text;
  size_t capacity;
  size_t length;
  int32_t completion_tokens;
  int32_t finish_reason;
  float similarity;
};

struct SemanticCacheStats11 {
  uint32_t struct_size;
  int64_t entries;
  int64_t evictions;
  int64_t expirations;
};

struct SemanticCacheVtable11 {
  uint32_t struct_size;
  loom_status (*lookup)(void* self, const void* query, int32_t* hit, SemanticAnswer11* answer, loom_error_buf* err);
  loom_status (*store)(void* self, const void* query, const SemanticAnswer11* answer, loom_error_buf* err);
  int32_t (*needs_embedding)(void* self);
  loom_status (*stats)(void* self, SemanticCacheStats11* out, loom_error_buf* err);
};

struct Kept {
  std::string text;
  int64_t stores = 0;
};

loom_status lookup(void* self, const void*, int32_t* hit, SemanticAnswer11* answer, loom_error_buf*) {
  const Kept& kept = *static_cast<Kept*>(self);
  *hit = kept.stores == 0 ? 0 : 1;
  if (*hit != 0) {
    answer->length = kept.text.size();
    std::memcpy(answer->text, kept.text.data(), std::min(kept.text.size(), answer->capacity));
    answer->similarity = 0.5f;
  }
  return LOOM_OK;
}
loom_status store(void* self, const void*, const SemanticAnswer11* answer, loom_error_buf*) {
  auto& kept = *static_cast<Kept*>(self);
  kept.text.assign(answer->text, answer->length);
  ++kept.stores;
  return LOOM_OK;
}
int32_t needs_embedding(void*) { return 0; }
loom_status stats(void* self, SemanticCacheStats11* out, loom_error_buf*) {
  out->entries = static_cast<Kept*>(self)->stores;
  return LOOM_OK;
}

const loom_fixture::Guarded<SemanticCacheVtable11> kTable = {
    {sizeof(SemanticCacheVtable11), &lookup, &store, &needs_embedding, &stats}, reinterpret_cast<const void*>(&lookup)};

LOOM_FIXTURE_CREATE(void, Kept, &kTable.vtable);

}  // namespace

LOOM_FIXTURE_PLUGIN(LOOM_KIND_SEMANTIC_CACHE, "old_minor", create, loom_fixture::destroy<Kept>);
