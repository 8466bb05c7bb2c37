// A scheduler plugin whose descriptor publishes config_schema, for `loom-plugin inspect`'s
// config-key listing. It schedules nothing; only its descriptor matters.
#include <string_view>

#include "loom/scheduler.h"
#include "loom/sdk.hpp"

namespace {

class SchemaScheduler {
 public:
  SchemaScheduler(const loom::sdk::Host&, std::string_view) {}
  void add_request(const loom_request_view*) {}
  void remove_request(uint64_t) {}
  void schedule(const loom_sched_context*, loom_sched_output* out) {
    out->num_scheduled = out->num_preempted = out->num_rejected = 0;
  }
  void stats(loom_sched_stats* out) { *out = loom_sched_stats{sizeof(loom_sched_stats), 0, 0, 0}; }
};

const loom_plugin_desc* entry() {
  static const loom_plugin_desc desc = [] {
    loom_plugin_desc d = loom::sdk::detail::Plugin<SchemaScheduler, loom_scheduler_vtable>::describe(
        "schema", "2.0.1", "publishes its config keys");
    d.config_schema =
        R"([{"key":"max_num_seqs","type":"integer","default":16,"help":"most requests holding KV blocks"},)"
        R"({"key":"policy","type":"enum","default":"fifo","help":"fifo or lifo"}])";
    return d;
  }();
  return &desc;
}

}  // namespace

BOOST_DLL_ALIAS(entry, loom_plugin_entry_v1)
