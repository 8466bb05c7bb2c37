#include "core/server/kv_memory_budget.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/common/error.hpp"
#include "core/config/byte_size.hpp"
#include "core/executor/hf_model.hpp"
#include "core/executor/kv_pool.hpp"
#include "core/executor/llama_model.hpp"
#include "core/formats/gguf_file.hpp"
#include "loom/sdk_kv_quant.hpp"

namespace loom {
namespace {

namespace fs = std::filesystem;

// The plugins' own defaults for keys a table leaves out (paged/radix block_size 16; the
// continuous and static schedulers run up to 256 sequences).
constexpr int32_t kDefaultBlockSize = 16;
constexpr int32_t kDefaultMaxNumSeqs = 256;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

std::string mib(int64_t bytes) {
  std::ostringstream out;
  out.precision(1);
  out << std::fixed << static_cast<double>(bytes) / (1 << 20) << " MiB";
  return out.str();
}

int32_t int_key(const PluginTable& table, const char* key, int32_t fallback) {
  const auto json = nlohmann::json::parse(table.config_json, nullptr, false);
  if (json.is_object() && json.contains(key) && json[key].is_number_integer()) {
    return static_cast<int32_t>(std::clamp<int64_t>(json[key].get<int64_t>(), 1, INT32_MAX));
  }
  return fallback;
}

// The model's shape and files' size, read the way the executor reads them (no weights loaded).
struct ModelFacts {
  LlamaHparams hparams;
  int64_t file_bytes = 0;
};

ModelFacts read_model_facts(const std::string& path) {
  ModelFacts facts;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    facts.hparams = read_hf_hparams(path, read_json_file(path + "/config.json", false));
    for (const auto& entry : fs::directory_iterator(path)) {
      if (entry.path().extension() == ".safetensors") facts.file_bytes += static_cast<int64_t>(entry.file_size());
    }
  } else {
    const GgufFile file = GgufFile::open(path);
    facts.hparams = read_llama_hparams(file);
    facts.file_bytes = static_cast<int64_t>(fs::file_size(path));
  }
  return facts;
}

}  // namespace

KvBudget kv_memory_budget(const KvBudgetInputs& in) {
  LOOM_CHECK(in.block_size > 0 && in.bytes_per_token > 0 && in.max_num_seqs > 0 && in.max_model_len > 0,
             "kv_memory_budget: block_size, bytes_per_token, max_num_seqs and max_model_len must be positive");
  const int64_t block_bytes = in.block_size * in.bytes_per_token + in.bytes_per_block_extra;
  const int64_t one_sequence = ceil_div(in.max_model_len, in.block_size) * block_bytes;
  const int64_t needed = in.max_num_seqs * one_sequence;
  const int64_t share = static_cast<int64_t>(in.memory_utilization * static_cast<double>(in.mem_available));
  const int64_t budget = share - in.model_bytes;
  // One full-length sequence is the floor, unless even that exceeds the machine's memory (a huge
  // max_model_len): then the budget is all there is, and requests are held to what it fits.
  const int64_t one_floor = in.mem_available > 0 && one_sequence > in.mem_available ? std::max(budget, int64_t{0})
                                                                                    : one_sequence;
  const int64_t floor = std::min(needed, std::max(one_floor, kMinKvMemory));

  const std::string what = std::to_string(in.max_num_seqs) + " seqs x " + std::to_string(in.max_model_len) +
                           " tokens x " + std::to_string(in.bytes_per_token) + " B/token";
  std::ostringstream fraction;
  fraction << in.memory_utilization;
  const std::string spare = fraction.str() + " x " + mib(in.mem_available) +
                            " available - " + mib(in.model_bytes) + " model = " + mib(budget);
  KvBudget out;
  if (budget >= needed) {
    out.kv_memory = needed;
    out.reason = "all that " + what + " can use (" + spare + " would allow more)";
  } else if (budget >= floor) {
    out.kv_memory = budget;
    out.reason = spare + " (less than the " + mib(needed) + " that " + what + " could use)";
  } else {
    out.kv_memory = floor;
    out.reason = "the floor of " + mib(floor) + ": " + spare + " is too little";
  }
  return out;
}

std::optional<int64_t> available_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024;
  }
  return std::nullopt;
}

std::optional<std::string> apply_kv_memory_budget(Config& config) {
  if (has_plugin_key(config.cache, "kv_memory") || has_plugin_key(config.cache, "num_blocks")) return std::nullopt;
  const ModelFacts model = read_model_facts(config.model.path);
  const LlamaHparams& hp = model.hparams;
  const loom_dtype dtype = sdk::kv::dtype_from_name(config.kv_dtype.c_str());
  LOOM_CHECK(dtype != LOOM_DTYPE_INVALID, "[cache] kv_dtype \"" + config.kv_dtype + "\" is not a KV dtype");

  KvBudgetInputs in;
  const std::optional<int64_t> available = available_memory_bytes();
  in.mem_available = available.value_or(0);  // unknown: the floor
  in.model_bytes = model.file_bytes;
  in.memory_utilization = config.memory_utilization;
  in.bytes_per_token = KvPool::bytes_per_token(hp.n_layers, hp.n_kv_heads, hp.head_dim, dtype);
  in.bytes_per_block_extra = KvPool::scale_bytes_per_block(hp.n_layers, hp.n_kv_heads, dtype);
  in.block_size = int_key(config.cache, "block_size", kDefaultBlockSize);
  in.max_num_seqs = int_key(config.scheduler, "max_num_seqs", kDefaultMaxNumSeqs);
  in.max_model_len = config.model.max_model_len > 0 ? config.model.max_model_len : hp.context_length;
  if (hp.sliding_window > 0) in.max_model_len = std::min(in.max_model_len, hp.sliding_window);
  const KvBudget budget = kv_memory_budget(in);
  set_plugin_key(config.cache, "kv_memory", "\"" + format_byte_size(budget.kv_memory) + "\"");
  return "KV cache: " + mib(budget.kv_memory) + ", " + budget.reason +
         " (set [cache] kv_memory or --kv-cache-memory to choose)";
}

}  // namespace loom
