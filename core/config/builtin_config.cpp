// builtin_config: configs/default.toml's values, compiled in, so `loom-server MODEL` needs no
// file. tests/unit/test_config_builtin.cpp checks that the two agree; change both together.
#include "core/config/config.hpp"

namespace loom {

Config builtin_config() {
  Config c;
  c.attention = PluginTable{"flash_cpu"};
  c.quantization = PluginTable{"auto"};
  c.scheduler = PluginTable{"continuous", "", R"({"max_num_batched_tokens":2048,"max_num_seqs":64,"max_step_ms":25,"max_step_stretch":4,"max_step_stretch_after":16})"};
  // No kv_memory: loom-server sizes the pool from the machine and the model (memory_utilization).
  c.cache = PluginTable{"paged", "", R"({"block_size":16})"};
  c.kv_dtype = "f32";
  c.memory_utilization = 0.9;
  c.slo.calibration_steps = 8;
  return c;
}

}  // namespace loom
