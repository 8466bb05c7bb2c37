// loom-server's default KV-cache size. When [cache] sets neither kv_memory nor num_blocks, the
// pool gets what the machine can spare, like vLLM's --gpu-memory-utilization:
//   kv_memory = memory_utilization x MemAvailable - model file bytes,
// capped at what max_num_seqs sequences of max_model_len tokens can ever hold (so a tiny model
// gets a tiny pool and many test servers fit on one machine), and floored at the smaller of that
// cap and max(one full-length sequence, 16 MiB), so a short machine still serves. It is decided
// here, before the engine exists, by writing kv_memory into the [cache] table; the cache plugin
// turns the bytes into blocks as it always does.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/config/config.hpp"

namespace loom {

struct KvBudgetInputs {
  int64_t mem_available = 0;      // bytes the OS says it can give (MemAvailable)
  int64_t model_bytes = 0;        // the model files' size: the weights will take about that much
  double memory_utilization = 0;  // fraction of mem_available for weights + KV
  int64_t bytes_per_token = 0;    // K and V of every layer for one token
  int64_t bytes_per_block_extra = 0;  // per-block scales (int8/fp8 KV)
  int32_t block_size = 0;         // tokens per block
  int32_t max_num_seqs = 0;
  int32_t max_model_len = 0;
};

struct KvBudget {
  int64_t kv_memory = 0;  // bytes
  std::string reason;     // how it was chosen, for the start-up log
};

inline constexpr int64_t kMinKvMemory = 16LL << 20;

KvBudget kv_memory_budget(const KvBudgetInputs& in);

// MemAvailable from /proc/meminfo in bytes; nullopt where it cannot be read.
std::optional<int64_t> available_memory_bytes();

// When config.cache has neither kv_memory nor num_blocks: reads the model's shape (GGUF metadata
// or config.json), computes the budget with this machine's available memory and writes kv_memory
// into config.cache. Returns the line to log; nullopt when the config sets the size itself.
// Throws loom::Error when the model cannot be read.
std::optional<std::string> apply_kv_memory_budget(Config& config);

}  // namespace loom
