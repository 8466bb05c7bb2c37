// parse_config on valid input: defaults, every key, paths, plugin tables as JSON, to_toml.
#include <gtest/gtest.h>

#include <filesystem>
#include <ostream>
#include <string>

#include "core/common/error.hpp"
#include "core/config/config.hpp"

namespace loom {

// Readable failures: gtest prints these instead of raw bytes.
void PrintTo(const PluginTable& t, std::ostream* os) {
  *os << "{plugin=" << t.plugin << ", path=" << t.path << ", config_json=" << t.config_json << "}";
}
void PrintTo(const Config& c, std::ostream* os) { *os << "\n" << to_toml(c); }

namespace {

constexpr const char* kFile = "/etc/loom/test.toml";

TEST(ConfigParse, EmptyFileGivesTheDefaults) {
  const Config c = parse_config("", kFile);
  EXPECT_EQ(c.source_path, kFile);
  EXPECT_EQ(c.model.path, "");
  EXPECT_EQ(c.model.name, "");
  EXPECT_EQ(c.model.max_model_len, 0);
  EXPECT_EQ(c.server.host, "127.0.0.1");
  EXPECT_EQ(c.server.port, 8080);
  EXPECT_EQ(c.server.http_threads, 2);
  EXPECT_EQ(c.server.max_body_bytes, 8 * 1024 * 1024);
  EXPECT_EQ(c.server.api_key, "");
  EXPECT_EQ(c.runtime.device, "cpu");
  EXPECT_EQ(c.runtime.threads, 0);
  EXPECT_EQ(c.runtime.seed, 0u);
  EXPECT_TRUE(c.plugin_dirs.empty());
  EXPECT_EQ(c.log_level, "info");
  EXPECT_EQ(c.attention, (PluginTable{"naive", "", "{}"}));
  EXPECT_EQ(c.quantization, (PluginTable{"auto", "", "{}"}));
  EXPECT_EQ(c.scheduler, (PluginTable{"fcfs", "", "{}"}));
  EXPECT_EQ(c.cache, (PluginTable{"contiguous", "", "{}"}));
  EXPECT_FALSE(c.cache_offload.has_value());
  EXPECT_FALSE(c.semantic_cache.has_value());
  EXPECT_EQ(c, Config{.source_path = kFile});
}

constexpr const char* kFull = R"(
[model]
path = "models/llama.gguf"
name = "my-llama"
max_model_len = 4096
chat_template = "templates/chatml.jinja"

[server]
host = "0.0.0.0"
port = 0
http_threads = 8
max_body_bytes = "1MiB"
api_key = "sk-test"
metrics_prefix = "vllm"

[runtime]
device = "cpu"
threads = 12
seed = 1234

[plugins]
dirs = ["plugins", "/opt/loom/plugins", "../shared/plugins/"]

[logging]
level = "debug"

[attention]
plugin = "flash_cpu"

[quantization]
plugin = "int8"
path = "lib/libloom-quantization-int8.so"

[scheduler]
plugin = "continuous"
max_num_seqs = 64

[cache]
plugin = "paged"
kv_memory = "2GiB"
block_size = 32

[cache_offload]
plugin = "host"

[semantic_cache]
plugin = "exact"
ttl_s = 60
)";

TEST(ConfigParse, ReadsEveryKey) {
  const Config c = parse_config(kFull, kFile);
  EXPECT_EQ(c.model.path, "/etc/loom/models/llama.gguf");
  EXPECT_EQ(c.model.name, "my-llama");
  EXPECT_EQ(c.model.max_model_len, 4096);
  EXPECT_EQ(c.model.chat_template, "/etc/loom/templates/chatml.jinja");
  EXPECT_EQ(c.server.host, "0.0.0.0");
  EXPECT_EQ(c.server.port, 0);
  EXPECT_EQ(c.server.http_threads, 8);
  EXPECT_EQ(c.server.max_body_bytes, 1048576);
  EXPECT_EQ(c.server.api_key, "sk-test");
  EXPECT_EQ(c.server.metrics_prefix, "vllm");
  EXPECT_EQ(c.runtime.device, "cpu");
  EXPECT_EQ(c.runtime.threads, 12);
  EXPECT_EQ(c.runtime.seed, 1234u);
  EXPECT_EQ(c.plugin_dirs, (std::vector<std::string>{"/etc/loom/plugins", "/opt/loom/plugins",
                                                     "/etc/shared/plugins/"}));
  EXPECT_EQ(c.log_level, "debug");
  EXPECT_EQ(c.attention, (PluginTable{"flash_cpu", "", "{}"}));
  EXPECT_EQ(c.quantization,
            (PluginTable{"int8", "/etc/loom/lib/libloom-quantization-int8.so", "{}"}));
  EXPECT_EQ(c.scheduler, (PluginTable{"continuous", "", R"({"max_num_seqs":64})"}));
  EXPECT_EQ(c.cache, (PluginTable{"paged", "", R"({"block_size":32,"kv_memory":"2GiB"})"}));
  EXPECT_EQ(c.memory_utilization, 0.9);  // the default, unused: kv_memory fixes the size
  EXPECT_EQ(c.cache_offload, (PluginTable{"host", "", "{}"}));
  EXPECT_EQ(c.semantic_cache, (PluginTable{"exact", "", R"({"ttl_s":60})"}));
}

TEST(ConfigParse, MaxBodyBytesTakesAnInteger) {
  EXPECT_EQ(parse_config("[server]\nmax_body_bytes = 1024\n", kFile).server.max_body_bytes, 1024);
}

std::string error_of(const std::string& text) {
  try {
    parse_config(text, kFile);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// No CUDA code exists, so a CUDA device is refused in one line saying what is missing, never run
// on the CPU instead (DESIGN.md §5).
TEST(ConfigParse, CudaDevicesAreRefusedSayingWhatIsMissing) {
  EXPECT_EQ(parse_config("[runtime]\ndevice = \"cpu\"\n", kFile).runtime.device, "cpu");
  for (const std::string device : {"cuda", "cuda:0", "cuda:12"}) {
    EXPECT_EQ(error_of("[runtime]\ndevice = \"" + device + "\"\n"),
              "/etc/loom/test.toml:2:10: runtime.device: \"" + device +
                  "\" cannot run: this build has no CUDA kernels and no plugin that runs on CUDA; only "
                  "\"cpu\" runs today");
  }
  Config c{.source_path = kFile};
  c.model.path = "/m.gguf";
  c.runtime.device = "cuda";
  try {
    check_config(c);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "/etc/loom/test.toml: runtime.device: \"cuda\" cannot run: this build has no CUDA "
              "kernels and no plugin that runs on CUDA; only \"cpu\" runs today");
  }
}

TEST(ConfigParse, MetricsPrefixIsLoomOrVllm) {
  EXPECT_EQ(parse_config("", kFile).server.metrics_prefix, "loom");
  EXPECT_EQ(parse_config("[server]\nmetrics_prefix = \"vllm\"\n", kFile).server.metrics_prefix, "vllm");
  EXPECT_EQ(error_of("[server]\nmetrics_prefix = \"sglang\"\n"),
            "/etc/loom/test.toml:2:18: server.metrics_prefix: must be \"loom\" or \"vllm\", got \"sglang\"");
}

TEST(ConfigParse, MemoryUtilizationIsACoreKeyOfTheCacheTable) {
  const Config c = parse_config("[cache]\nplugin = \"paged\"\nmemory_utilization = 0.25\n", kFile);
  EXPECT_EQ(c.memory_utilization, 0.25);
  EXPECT_EQ(c.cache.config_json, "{}");
  EXPECT_EQ(parse_config("", kFile).memory_utilization, 0.9);
  EXPECT_EQ(error_of("[cache]\nplugin = \"paged\"\nmemory_utilization = 1.5\n"),
            "/etc/loom/test.toml:3:22: cache.memory_utilization: must be a fraction in (0, 1], got 1.500000");
  // A fixed size leaves the fraction nothing to do: refused, not ignored; to_toml leaves it out.
  EXPECT_EQ(error_of("[cache]\nplugin = \"paged\"\nkv_memory = \"1MiB\"\nmemory_utilization = 0.5\n"),
            "/etc/loom/test.toml:4:22: cache.memory_utilization: unused when [cache] kv_memory fixes the pool's size; "
            "set one of the two");
  EXPECT_EQ(error_of("[cache]\nplugin = \"paged\"\nmemory_utilization = 0.5\nnum_blocks = 8\n"),
            "/etc/loom/test.toml:3:22: cache.memory_utilization: unused when [cache] num_blocks fixes the pool's size; "
            "set one of the two");
  const Config fixed = parse_config("[cache]\nplugin = \"paged\"\nnum_blocks = 8\n", kFile);
  EXPECT_EQ(to_toml(fixed).find("memory_utilization"), std::string::npos) << to_toml(fixed);
  EXPECT_EQ(parse_config(to_toml(fixed), kFile), fixed);
  EXPECT_EQ(error_of("[cache]\nplugin = \"paged\"\nmemory_utilization = \"half\"\n"),
            "/etc/loom/test.toml:3:22: cache.memory_utilization: expected a number, got a string");
}

TEST(ConfigParse, PathsAreResolvedAgainstTheConfigFile) {
  const std::string text = "[model]\npath = \"../data/./m.gguf\"\n[plugins]\ndirs = [\"p\"]\n";
  const Config c = parse_config(text, "/srv/loom/configs/a.toml");
  EXPECT_EQ(c.model.path, "/srv/loom/data/m.gguf");
  EXPECT_EQ(c.plugin_dirs, std::vector<std::string>{"/srv/loom/configs/p"});

  // Absolute paths stay as they are (normalised).
  const Config abs = parse_config("[model]\npath = \"/models//x/../m.gguf\"\n", kFile);
  EXPECT_EQ(abs.model.path, "/models/m.gguf");

  // A relative config path is taken from the working directory.
  const Config rel = parse_config("[model]\npath = \"m.gguf\"\n", "configs/a.toml");
  EXPECT_EQ(rel.model.path, (std::filesystem::current_path() / "configs/m.gguf").string());

  // No source path: relative to the working directory.
  const Config none = parse_config("[model]\npath = \"m.gguf\"\n", "");
  EXPECT_EQ(none.model.path, (std::filesystem::current_path() / "m.gguf").string());
}

TEST(ConfigParse, ModelNameDefaultsToTheFileName) {
  EXPECT_EQ(parse_config("[model]\npath = \"stories260K.gguf\"\n", kFile).model.name,
            "stories260K");
  EXPECT_EQ(parse_config("[model]\npath = \"/m/Qwen2.5-0.5B/\"\n", kFile).model.name,
            "Qwen2.5-0.5B");
  EXPECT_EQ(model_name_from_path("/m/model.safetensors"), "model");
  EXPECT_EQ(model_name_from_path("/m/pytorch_model.bin"), "pytorch_model");
  EXPECT_EQ(model_name_from_path("/m/llama.Q4_0.gguf"), "llama.Q4_0");
  EXPECT_EQ(model_name_from_path("llama-3"), "llama-3");
}

TEST(ConfigParse, PluginTablesPassEveryOtherKeyAsJson) {
  const Config c = parse_config(R"(
[cache]
plugin = "paged"
kv_memory = "64MiB"
num_blocks = 128
enable_prefix = true
ratio = 0.1
big = 1e300
tiers = [1, 2, 3]
mixed = [1, "a", 2.5, false, [true], { k = "v" }]
day = 1979-05-27
at = 07:32:00
when = 1979-05-27T07:32:00Z
"quoted key" = "x\ty"

[cache.eviction]
policy = "lru"
weights = { hot = 2, cold = -1 }

[[cache.tiers_table]]
size = 1
[[cache.tiers_table]]
size = 2
)",
                                kFile);
  EXPECT_EQ(c.cache.plugin, "paged");
  EXPECT_EQ(c.cache.path, "");
  EXPECT_EQ(c.cache.config_json,
            R"({"at":"07:32:00","big":1e+300,"day":"1979-05-27","enable_prefix":true,)"
            R"("eviction":{"policy":"lru","weights":{"cold":-1,"hot":2}},"kv_memory":"64MiB",)"
            R"("mixed":[1,"a",2.5,false,[true],{"k":"v"}],"num_blocks":128,"quoted key":"x\ty",)"
            R"("ratio":0.1,"tiers":[1,2,3],"tiers_table":[{"size":1},{"size":2}],)"
            R"("when":"1979-05-27T07:32:00Z"})");
}

TEST(ConfigParse, CacheKvDtypeIsReadByTheCoreNotPassedToThePlugin) {
  const Config c = parse_config("[cache]\nplugin = \"paged\"\nkv_dtype = \"int8\"\nblock_size = 16\n", kFile);
  EXPECT_EQ(c.kv_dtype, "int8");
  EXPECT_EQ(c.cache.config_json, R"({"block_size":16})");
  EXPECT_EQ(parse_config(to_toml(c), kFile), c);
  EXPECT_EQ(parse_config("", kFile).kv_dtype, "f32");
  try {
    parse_config("[cache]\nplugin = \"paged\"\nkv_dtype = \"q4\"\n", kFile);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(":3:12: cache.kv_dtype: must be one of f32, f16, bf16, int8, fp8_e4m3; got \"q4\""),
              std::string::npos)
        << e.what();
  }
}

TEST(ConfigParse, EmbeddingTableAndTheSemanticCacheGuardsAreTheCores) {
  const Config c = parse_config("[embedding]\npath = \"models/minilm\"\nmax_batch_tokens = 512\n"
                                "[semantic_cache]\nplugin = \"exact\"\nopt_in = false\ncapacity = 8\n", kFile);
  EXPECT_EQ(c.embedding.path, "/etc/loom/models/minilm");  // relative to the config file
  EXPECT_EQ(c.embedding.name, "");
  EXPECT_EQ(c.embedding.max_batch_tokens, 512);
  EXPECT_FALSE(c.semantic_guards.require_opt_in);
  EXPECT_TRUE(c.semantic_guards.deterministic_only);
  ASSERT_TRUE(c.semantic_cache);
  EXPECT_EQ(c.semantic_cache->config_json, R"({"capacity":8})");  // the guards are not the plugin's
  EXPECT_EQ(parse_config(to_toml(c), kFile), c);
  EXPECT_EQ(parse_config("", kFile).embedding, EmbeddingConfig{});
  try {
    parse_config("[embedding]\npath = \"m\"\nbatch = 1\n[semantic_cache]\nplugin = \"exact\"\nopt_in = 1\n", kFile);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(":3:1: embedding.batch: unknown key"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(":6:10: semantic_cache.opt_in: expected a boolean, got an integer"),
              std::string::npos)
        << e.what();
  }
}

TEST(ConfigParse, ToTomlOfTheDefaults) {
  Config c{.source_path = kFile};
  c.model.path = "/models/m.gguf";
  c.model.name = "m";
  EXPECT_EQ(to_toml(c), R"([model]
path = "/models/m.gguf"
name = "m"
max_model_len = 0

[server]
host = "127.0.0.1"
port = 8080
http_threads = 2
max_body_bytes = 8388608
api_key = ""
metrics_prefix = "loom"
max_json_depth = 64
max_json_elements = 262144
header_timeout = 10
body_timeout = 60
idle_timeout = 60
write_timeout = 60
max_connections = 1024
max_unsent_bytes = 16777216
max_response_bytes = 67108864
drain_timeout = 25
prepare_threads = 2
max_input_tokens = 0
max_total_tokens = 0
max_n = 16
max_best_of = 16
max_stop_sequences = 16
max_stop_length = 256
max_logprobs = 20
request_timeout = 600
metrics_public = false
require_json_content_type = true
special_tokens_in_chat = false
special_tokens_in_prompt = false
cors_allow_origins = []

[runtime]
device = "cpu"
threads = 0
seed = 0
head_top_k = 64

[plugins]
dirs = []

[logging]
level = "info"

[slo]
classes = []
admission = false
ttft_factor = 2.0
max_queue_len = 0
max_queued_tokens = 0
best_effort_priority = 1
goodput_window_s = 60
calibration_steps = 0

[attention]
plugin = "naive"

[quantization]
plugin = "auto"

[scheduler]
plugin = "fcfs"

[cache]
plugin = "contiguous"
kv_dtype = "f32"
memory_utilization = 0.9
)");
  EXPECT_EQ(parse_config(to_toml(c), kFile), c);
}

TEST(ConfigParse, ToTomlRoundTripsAFullConfig) {
  const Config c = parse_config(kFull, kFile);
  EXPECT_EQ(parse_config(to_toml(c), kFile), c);
  // The effective config is absolute, so it reads the same from anywhere.
  EXPECT_EQ(parse_config(to_toml(c), "/elsewhere/x.toml").model, c.model);
}

TEST(ConfigParse, ToTomlRoundTripsAwkwardValues) {
  Config c{.source_path = kFile};
  c.server.api_key = "quote\" backslash\\ tab\t newline\n bell\x07 del\x7f é ✓";
  c.model.path = "/models/with space/\"q\".gguf";
  c.model.name = "naïve model";
  c.plugin_dirs = {"/a b", "/c\\d"};
  c.runtime.seed = 9223372036854775807u;
  c.scheduler.config_json =
      R"({"a b":{"c.d":[1,-2.5,0.1,1e+300,-0.0,true,"s",{"x":[]}]},"e":{},"f":[],"g":12})";
  c.cache_offload = PluginTable{"disk", "/lib/x.so", R"({"dir":"/tmp/kv"})"};
  const std::string text = to_toml(c);
  EXPECT_EQ(parse_config(text, kFile), c) << text;
}

// [cache_offload] core keys (spill, staging_blocks) stay out of the plugin's JSON; each
// [cache_offload.next] is the tier below the one above it, in order, and round-trips.
TEST(ConfigParse, CacheOffloadChainsTheTiersBelow) {
  const Config c = parse_config(R"([cache_offload]
plugin = "host"
capacity = "4GiB"
spill = false
staging_blocks = 64
[cache_offload.next]
plugin = "disk"
dir = "/var/cache/kv"
capacity = "64GiB"
[cache_offload.next.next]
plugin = "disk"
path = "lib/x.so"
dir = "/mnt/slow"
)",
                                kFile);
  EXPECT_EQ(c.cache_offload, (PluginTable{"host", "", R"({"capacity":"4GiB"})"}));
  EXPECT_FALSE(c.cache_offload_spill);
  EXPECT_EQ(c.cache_offload_staging_blocks, 64);
  ASSERT_EQ(c.cache_offload_next.size(), 2u);
  EXPECT_EQ(c.cache_offload_next[0], (PluginTable{"disk", "", R"({"capacity":"64GiB","dir":"/var/cache/kv"})"}));
  EXPECT_EQ(c.cache_offload_next[1], (PluginTable{"disk", "/etc/loom/lib/x.so", R"({"dir":"/mnt/slow"})"}));
  const std::string text = to_toml(c);
  EXPECT_EQ(parse_config(text, kFile), c) << text;
  EXPECT_TRUE(parse_config("[cache_offload]\nplugin = \"host\"\n", kFile).cache_offload_spill) << "spill is on by default";
}

TEST(ConfigParse, LoadsTheDefaultConfigFile) {
  const std::string path = std::string(LOOM_SOURCE_DIR) + "/configs/default.toml";
  const Config c = load_config(path);
  const std::string root = std::filesystem::path(LOOM_SOURCE_DIR).lexically_normal().string();
  EXPECT_EQ(c.source_path, path);
  EXPECT_EQ(c.model.path, root + "/tests/data/stories260K.gguf");
  EXPECT_EQ(c.model.name, "stories260K");
  EXPECT_EQ(c.server.port, 8080);
  EXPECT_EQ(c.server.max_body_bytes, 8 * 1024 * 1024);
  EXPECT_EQ(c.runtime.device, "cpu");
  EXPECT_EQ(c.log_level, "info");
  EXPECT_EQ(c.attention, (PluginTable{"flash_cpu", "", "{}"}));
  EXPECT_EQ(c.quantization, (PluginTable{"auto", "", "{}"}));
  EXPECT_EQ(c.scheduler,
            (PluginTable{"continuous", "", R"({"max_num_batched_tokens":2048,"max_num_seqs":64,"max_step_ms":25,"max_step_stretch":4,"max_step_stretch_after":16})"}));
  EXPECT_EQ(c.cache, (PluginTable{"paged", "", R"({"block_size":16})"}));
  EXPECT_EQ(c.memory_utilization, 0.9);
  EXPECT_FALSE(c.cache_offload.has_value());
  EXPECT_FALSE(c.semantic_cache.has_value());
  EXPECT_NO_THROW(check_config(c));
  EXPECT_EQ(parse_config(to_toml(c), path), c);
}

TEST(ConfigParse, LoadConfigNamesAMissingFile) {
  try {
    load_config("/nonexistent/loom.toml");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "cannot read config file /nonexistent/loom.toml: No such file or directory");
  }
}

TEST(ConfigCheck, AcceptsAValidConfigAndReportsEveryProblem) {
  Config c{.source_path = kFile};
  c.model.path = "/m.gguf";
  EXPECT_NO_THROW(check_config(c));

  c.model.path.clear();
  c.model.max_model_len = -1;
  c.server.host.clear();
  c.server.http_threads = 0;
  c.server.max_body_bytes = 10;
  c.runtime.device = "tpu";
  c.runtime.threads = -2;
  c.runtime.seed = 9223372036854775808u;
  c.log_level = "loud";
  c.cache.plugin = "a/b";
  c.scheduler.config_json = "[1]";
  c.semantic_cache = PluginTable{"", "", "{}"};
  try {
    check_config(c);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "/etc/loom/test.toml: model.path: required: give MODEL (or -m/--model) or set [model] path\n"
              "/etc/loom/test.toml: model.max_model_len: must be >= 0, got -1\n"
              "/etc/loom/test.toml: server.host: must not be empty\n"
              "/etc/loom/test.toml: server.http_threads: must be in 1..256, got 0\n"
              "/etc/loom/test.toml: server.max_body_bytes: must be >= 1024, got 10\n"
              "/etc/loom/test.toml: runtime.device: must be \"cpu\" (the only device that runs today), "
              "got \"tpu\"\n"
              "/etc/loom/test.toml: runtime.threads: must be in 0..1024, got -2\n"
              "/etc/loom/test.toml: runtime.seed: must be <= 9223372036854775807, got "
              "9223372036854775808\n"
              "/etc/loom/test.toml: logging.level: must be one of trace, debug, info, warn, "
              "error, off; got \"loud\"\n"
              "/etc/loom/test.toml: scheduler: plugin config must be a JSON object, got \"[1]\"\n"
              "/etc/loom/test.toml: cache.plugin: must be a plugin name of letters, digits, '_' "
              "or '-', got \"a/b\"\n"
              "/etc/loom/test.toml: semantic_cache.plugin: must be a plugin name of letters, "
              "digits, '_' or '-', got \"\"");
  }
}

}  // namespace
}  // namespace loom
