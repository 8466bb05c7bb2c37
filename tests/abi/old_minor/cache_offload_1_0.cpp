// A cache_offload plugin of interface 1.0 with its own copy of the 1.0 structs: it remembers which
// keys were saved (without copying blocks). Built as 1.0 and claiming a newer minor.
#include <cstdint>
#include <set>

#include "fixture.hpp"
#include "loom/types.h"
#include "loom/cache_offload.h"  // only for the host's minor, which the "newer" build claims + 1

namespace {

struct KvCopyOps10 {
  uint32_t struct_size;
  void* host_ctx;
  int64_t bytes_per_block;
  void* read_block;
  void* write_block;
};

struct CacheOffloadCreateArgs10 {
  uint32_t struct_size;
  KvCopyOps10 copy;
};

struct CacheOffloadVtable10 {
  uint32_t struct_size;
  loom_status (*save)(void* self, uint64_t key, int32_t block_id, loom_error_buf* err);
  loom_status (*load)(void* self, uint64_t key, int32_t block_id, loom_error_buf* err);
  loom_status (*contains)(void* self, uint64_t key, int32_t* present, loom_error_buf* err);
  loom_status (*drop)(void* self, uint64_t key, loom_error_buf* err);
  loom_status (*usage)(void* self, void* out, loom_error_buf* err);
};

using Keys = std::set<uint64_t>;

loom_status save(void* self, uint64_t key, int32_t, loom_error_buf*) {
  static_cast<Keys*>(self)->insert(key);
  return LOOM_OK;
}
loom_status load(void* self, uint64_t key, int32_t, loom_error_buf* err) {
  if (static_cast<Keys*>(self)->count(key) != 0) return LOOM_OK;
  loom_fixture::say(err, "not stored");
  return LOOM_ERR_NOT_FOUND;
}
loom_status contains(void* self, uint64_t key, int32_t* present, loom_error_buf*) {
  *present = static_cast<Keys*>(self)->count(key) != 0 ? 1 : 0;
  return LOOM_OK;
}
loom_status drop(void* self, uint64_t key, loom_error_buf*) {
  static_cast<Keys*>(self)->erase(key);
  return LOOM_OK;
}
loom_status usage(void*, void*, loom_error_buf*) { return LOOM_ERR_UNSUPPORTED; }

const loom_fixture::Guarded<CacheOffloadVtable10> kTable = {
    {sizeof(CacheOffloadVtable10), &save, &load, &contains, &drop, &usage}, reinterpret_cast<const void*>(&save)};

LOOM_FIXTURE_CREATE(CacheOffloadCreateArgs10, Keys, &kTable.vtable);

}  // namespace

LOOM_FIXTURE_PLUGIN(LOOM_KIND_CACHE_OFFLOAD, "old_minor", create, loom_fixture::destroy<Keys>);
