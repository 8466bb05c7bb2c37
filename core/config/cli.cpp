#include "core/config/cli.hpp"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>

#include "core/common/command_line.hpp"
#include "core/common/error.hpp"
#include "core/config/byte_size.hpp"
#include "core/config/config_rules.hpp"
#include "core/config/speculative_config_flag.hpp"

namespace loom {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

// A CLI11 check from one of the config's value rules, so a flag and its TOML key say the same.
CLI::Validator rule(std::function<std::optional<std::string>(std::string_view)> check) {
  return CLI::Validator(
      [check = std::move(check)](std::string& value) { return check(value).value_or(""); }, "");
}

std::optional<std::string> check_byte_size(std::string_view text) {
  try {
    if (parse_byte_size(text) > 0) return std::nullopt;
    return "must be a positive byte size, got \"" + std::string(text) + "\"";
  } catch (const Error& e) {
    return std::string(e.what());
  }
}

std::string absolute_path(const std::string& path) {
  return fs::absolute(fs::path(path)).lexically_normal().string();
}

// The values as CLI11 fills them; `seen` tells which were given.
struct Values {
  std::string config, model, positional_model, name, chat_template, host, api_key, prefix, log_level,
      quantization, kv_memory, kv_dtype, embedding_model, speculative_config;
  int64_t max_model_len = 0, port = 0, threads = 0, max_num_seqs = 0, max_num_batched_tokens = 0;
  double memory_utilization = 0;
  bool prefix_caching = false;
};

// The one definition of loom-server's options: parse_cli and cli_usage both build it.
struct ServerApp {
  CLI::App app{"Serves an LLM over an OpenAI-compatible HTTP API. Settings come from built-in defaults "
               "(configs/default.toml documents each), then --config FILE, then these options.",
               "loom-server"};
  Values v;
  bool print_config = false, version = false;
  std::map<std::string, CLI::Option*> opt;

  ServerApp() {
    cli::apply_style(app);
    // `value` names the value in --help ("--port N").
    const auto add = [&](const std::string& names, auto& target, const std::string& value,
                         const std::string& help, const std::string& group) {
      CLI::Option* o = app.add_option(names, target, help)->group(group)->type_name(value);
      opt[o->get_name()] = o;
      return o;
    };
    add("MODEL", v.positional_model, "PATH", "the model: a GGUF file or a Hugging Face directory (same as -m)",
        "Model");
    add("-m,--model", v.model, "PATH", "the model (model.path)", "Model");
    add("--served-model-name", v.name, "NAME", "the name clients send and /v1/models lists (model.name)",
        "Model");
    add("-c,--max-model-len", v.max_model_len, "N",
        "context length: longest prompt + output a request may reach (model.max_model_len)", "Model")
        ->check(cli::integer_in(1, kInt32Max));
    add("--chat-template", v.chat_template, "FILE",
        "a Jinja chat template file used instead of the model's (model.chat_template)", "Model")
        ->check(CLI::Validator(CLI::ExistingFile).description(""));
    add("--embedding-model", v.embedding_model, "DIR",
        "a sentence encoder (Hugging Face BERT directory) served at /v1/embeddings (embedding.path)", "Model")
        ->check(CLI::Validator(CLI::ExistingDirectory).description(""));
    add("--quantization", v.quantization, "PLUGIN",
        "quantization plugin: auto (the one that claims the file's weight types), none, int8, int4, fp8 or gguf (quantization.plugin)", "Model")
        ->check(rule(config_rules::check_plugin_name));

    add("--host", v.host, "ADDR", "listen address (server.host)", "Server");
    add("--port", v.port, "N", "listen port, 0 = any free port (server.port)", "Server")
        ->check(cli::integer_in(0, config_rules::kMaxPort));
    add("--api-key", v.api_key, "KEY", "requests need \"Authorization: Bearer KEY\" (server.api_key)",
        "Server");
    add("--metrics-prefix,--metrics_prefix", v.prefix, "PREFIX",
        "prefix of every /metrics name: loom or vllm (server.metrics_prefix)", "Server")
        ->check(rule(config_rules::check_metrics_prefix));

    add("-t,--threads", v.threads, "N", "CPU threads, 0 = one per hardware thread (runtime.threads)",
        "Engine")
        ->check(cli::integer_in(0, kInt32Max));
    add("--max-num-seqs", v.max_num_seqs, "N",
        "-np: most requests running at once (scheduler.max_num_seqs)", "Engine")
        ->check(cli::integer_in(1, kInt32Max));
    add("--max-num-batched-tokens", v.max_num_batched_tokens, "N",
        "most tokens computed in one step (scheduler.max_num_batched_tokens)", "Engine")
        ->check(cli::integer_in(1, kInt32Max));
    CLI::Option* caching = app.add_flag("--enable-prefix-caching,!--no-enable-prefix-caching",
                                        v.prefix_caching,
                                        "reuse the KV of shared prompt prefixes (cache.enable_prefix_caching)")
                               ->group("Engine");
    opt[caching->get_name()] = caching;
    add("--kv-cache-memory", v.kv_memory, "BYTES",
        "KV cache size, a byte size like 8GiB (cache.kv_memory; default: see --memory-utilization)",
        "Engine")
        ->check(rule(check_byte_size));
    add("--memory-utilization,--gpu-memory-utilization", v.memory_utilization, "FRACTION",
        "without a KV size: fraction of available memory for model + KV (cache.memory_utilization)",
        "Engine")
        ->check(CLI::Validator(CLI::Range(0.0, 1.0)).description(""));
    add("--kv-cache-dtype,--kv-dtype", v.kv_dtype, "DTYPE",
        "KV element type: f32, f16, bf16, int8 or fp8_e4m3 (cache.kv_dtype)", "Engine")
        ->check(rule(config_rules::check_kv_dtype));

    add("--speculative-config", v.speculative_config, "JSON",
        "speculative decoding as vLLM spells it: {\"method\": \"ngram\" or \"suffix\", \"num_speculative_tokens\": k, "
        "...} (the [speculator] table)",
        "Engine");

    add("--config", v.config, "FILE", "a TOML config file on top of the built-in defaults", "Config");
    add("--log-level", v.log_level, "LEVEL", "trace, debug, info, warn, error or off (logging.level)", "Config")
        ->check(rule(config_rules::check_log_level));
    app.add_flag("--print-config", print_config, "print the effective config as TOML and exit")
        ->group("Config");
    app.add_flag("--version", version, "print the version and exit")->group("Config");
  }

  bool given(const std::string& name) const { return opt.at(name)->count() > 0; }
};

template <typename T, typename V>
void take(const ServerApp& a, const std::string& name, const V& value, std::optional<T>& out) {
  if (a.given(name)) out = static_cast<T>(value);
}

}  // namespace

CliOptions parse_cli(int argc, char** argv) {
  ServerApp a;
  CliOptions o;
  if (cli::parse_or_throw(a.app, cli::rename_short_flags(argc, argv, {{"-np", "--max-num-seqs"}}))) {
    o.help = true;
    return o;
  }
  const Values& v = a.v;
  if (a.given("MODEL") && a.given("--model")) {
    throw Error("the model is given twice: as MODEL and as -m/--model; give one");
  }
  o.config_path = v.config;
  if (a.given("MODEL")) o.model_path = absolute_path(v.positional_model);
  if (a.given("--model")) o.model_path = absolute_path(v.model);
  take(a, "--served-model-name", v.name, o.served_model_name);
  take(a, "--max-model-len", v.max_model_len, o.max_model_len);
  if (a.given("--chat-template")) o.chat_template = absolute_path(v.chat_template);
  if (a.given("--embedding-model")) o.embedding_model = absolute_path(v.embedding_model);
  take(a, "--quantization", v.quantization, o.quantization);
  take(a, "--host", v.host, o.host);
  take(a, "--port", v.port, o.port);
  take(a, "--api-key", v.api_key, o.api_key);
  take(a, "--metrics-prefix", v.prefix, o.metrics_prefix);
  take(a, "--threads", v.threads, o.threads);
  take(a, "--max-num-seqs", v.max_num_seqs, o.max_num_seqs);
  take(a, "--max-num-batched-tokens", v.max_num_batched_tokens, o.max_num_batched_tokens);
  take(a, "--enable-prefix-caching", v.prefix_caching, o.enable_prefix_caching);
  if (a.given("--kv-cache-memory")) o.kv_memory = parse_byte_size(v.kv_memory);
  take(a, "--memory-utilization", v.memory_utilization, o.memory_utilization);
  take(a, "--kv-cache-dtype", v.kv_dtype, o.kv_dtype);
  take(a, "--log-level", v.log_level, o.log_level);
  take(a, "--speculative-config", v.speculative_config, o.speculative_config);
  o.print_config = a.print_config;
  o.version = a.version;
  return o;
}

std::string cli_usage() {
  ServerApp a;
  return a.app.help();
}

void apply_overrides(Config& config, const CliOptions& o) {
  if (o.model_path) {
    const bool derived_name =
        config.model.name.empty() || config.model.name == model_name_from_path(config.model.path);
    config.model.path = *o.model_path;
    if (derived_name) config.model.name = model_name_from_path(config.model.path);
  }
  if (o.served_model_name) config.model.name = *o.served_model_name;
  if (o.max_model_len) config.model.max_model_len = *o.max_model_len;
  if (o.chat_template) config.model.chat_template = *o.chat_template;
  if (o.embedding_model) config.embedding.path = *o.embedding_model;
  if (o.host) config.server.host = *o.host;
  if (o.port) config.server.port = *o.port;
  if (o.api_key) config.server.api_key = *o.api_key;
  if (o.metrics_prefix) config.server.metrics_prefix = *o.metrics_prefix;
  if (o.threads) config.runtime.threads = *o.threads;
  if (o.log_level) config.log_level = *o.log_level;
  if (o.quantization && *o.quantization != config.quantization.plugin) {
    // Keys of the old plugin would be refused as unknown by the new one.
    config.quantization = PluginTable{*o.quantization};
  }
  if (o.max_num_seqs) set_plugin_key(config.scheduler, "max_num_seqs", std::to_string(*o.max_num_seqs));
  if (o.max_num_batched_tokens) {
    set_plugin_key(config.scheduler, "max_num_batched_tokens", std::to_string(*o.max_num_batched_tokens));
  }
  if (o.enable_prefix_caching) {
    set_plugin_key(config.cache, "enable_prefix_caching", *o.enable_prefix_caching ? "true" : "false");
  }
  if (o.kv_memory) {
    // The flag wins over a file's num_blocks (the plugin refuses both at once).
    set_plugin_key(config.cache, "num_blocks", std::nullopt);
    set_plugin_key(config.cache, "kv_memory", "\"" + format_byte_size(*o.kv_memory) + "\"");
  }
  if (o.kv_dtype) config.kv_dtype = *o.kv_dtype;
  if (o.speculative_config) apply_speculative_config(config, *o.speculative_config);
  if (o.memory_utilization) {
    // The fraction sizes the pool only without a fixed size: the flag wins over the file's.
    if (o.kv_memory)
      throw Error("--memory-utilization and --kv-cache-memory both size the KV pool; give one of the two");
    set_plugin_key(config.cache, "num_blocks", std::nullopt);
    set_plugin_key(config.cache, "kv_memory", std::nullopt);
    config.memory_utilization = *o.memory_utilization;
  }
}

Config load_effective_config(const CliOptions& options) {
  Config config =
      options.config_path.empty() ? builtin_config() : load_config(options.config_path, builtin_config());
  apply_overrides(config, options);
  check_config(config);
  return config;
}

}  // namespace loom
