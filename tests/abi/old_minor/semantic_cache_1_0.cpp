// A semantic_cache plugin of interface 1.0 with its own copy of the 1.0 structs: it stores one
// answer and returns it for any query. Built as 1.0 and claiming a newer minor.
#include <algorithm>
#include <cstring>
#include <string>

#include "fixture.hpp"
#include "loom/types.h"
#include "loom/semantic_cache.h"  // only for the host's minor, which the "newer" build claims + 1

namespace {

struct SemanticAnswer10 {
  uint32_t struct_size;
  char* text;
  size_t capacity;
  size_t length;
  int32_t completion_tokens;
  int32_t finish_reason;
};

struct SemanticCacheVtable10 {
  uint32_t struct_size;
  loom_status (*lookup)(void* self, const void* query, int32_t* hit, SemanticAnswer10* answer, loom_error_buf* err);
  loom_status (*store)(void* self, const void* query, const SemanticAnswer10* answer, loom_error_buf* err);
};

loom_status lookup(void* self, const void*, int32_t* hit, SemanticAnswer10* answer, loom_error_buf*) {
  const std::string& kept = *static_cast<std::string*>(self);
  *hit = kept.empty() ? 0 : 1;
  if (*hit != 0) {
    answer->length = kept.size();
    std::memcpy(answer->text, kept.data(), std::min(kept.size(), answer->capacity));
  }
  return LOOM_OK;
}
loom_status store(void* self, const void*, const SemanticAnswer10* answer, loom_error_buf*) {
  static_cast<std::string*>(self)->assign(answer->text, answer->length);
  return LOOM_OK;
}

const loom_fixture::Guarded<SemanticCacheVtable10> kTable = {{sizeof(SemanticCacheVtable10), &lookup, &store},
                                                            reinterpret_cast<const void*>(&lookup)};

LOOM_FIXTURE_CREATE(void, std::string, &kTable.vtable);

}  // namespace

LOOM_FIXTURE_PLUGIN(LOOM_KIND_SEMANTIC_CACHE, "old_minor", create, loom_fixture::destroy<std::string>);
