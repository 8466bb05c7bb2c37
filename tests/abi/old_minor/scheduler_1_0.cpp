// A scheduler plugin of interface 1.0, with its own copy of the 1.0 structs: it counts the
// requests added and reports them as waiting. Built twice: as 1.0, and claiming a minor newer
// than the host's (LOOM_FIXTURE_MINOR), which the host must refuse.
#include <cstdint>

#include "fixture.hpp"
#include "loom/types.h"
#include "loom/scheduler.h"  // only for the host's minor, which the "newer" build claims + 1

namespace {

struct SchedulerCreateArgs10 {
  uint32_t struct_size;
  int32_t max_model_len;
};

struct SchedStats10 {
  uint32_t struct_size;
  int32_t num_waiting, num_running;
  int64_t num_preemptions;
};

struct SchedulerVtable10 {
  uint32_t struct_size;
  loom_status (*add_request)(void* self, const loom_request_view* req, loom_error_buf* err);
  loom_status (*remove_request)(void* self, uint64_t request_id, loom_error_buf* err);
  loom_status (*schedule)(void* self, const void* ctx, void* out, loom_error_buf* err);
  loom_status (*stats)(void* self, SchedStats10* out, loom_error_buf* err);
};

struct Counter {
  int32_t added = 0;
};

loom_status add_request(void* self, const loom_request_view*, loom_error_buf*) {
  ++static_cast<Counter*>(self)->added;
  return LOOM_OK;
}
loom_status remove_request(void* self, uint64_t, loom_error_buf*) {
  --static_cast<Counter*>(self)->added;
  return LOOM_OK;
}
loom_status schedule(void*, const void*, void*, loom_error_buf* err) {
  loom_fixture::say(err, "old_minor does not schedule");
  return LOOM_ERR_UNSUPPORTED;
}
loom_status stats(void* self, SchedStats10* out, loom_error_buf*) {
  out->num_waiting = static_cast<Counter*>(self)->added;
  out->num_running = 0;
  out->num_preemptions = 0;
  return LOOM_OK;
}

const loom_fixture::Guarded<SchedulerVtable10> kTable = {
    {sizeof(SchedulerVtable10), &add_request, &remove_request, &schedule, &stats},
    reinterpret_cast<const void*>(&stats)};

LOOM_FIXTURE_CREATE(SchedulerCreateArgs10, Counter, &kTable.vtable);

}  // namespace

LOOM_FIXTURE_PLUGIN(LOOM_KIND_SCHEDULER, "old_minor", create, loom_fixture::destroy<Counter>);
