#include "core/config/cli.hpp"

#include <charconv>
#include <filesystem>
#include <limits>
#include <string_view>

#include "core/common/error.hpp"
#include "core/config/config_rules.hpp"

namespace loom {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const std::string& message) { throw Error(message + " (see --help)"); }

int64_t parse_int(std::string_view flag, std::string_view text, int64_t lo, int64_t hi) {
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty() || value < lo ||
      value > hi) {
    const std::string range = hi == std::numeric_limits<int32_t>::max()
                                  ? ">= " + std::to_string(lo)
                                  : "in " + std::to_string(lo) + ".." + std::to_string(hi);
    fail(std::string(flag) + ": expected an integer " + range + ", got '" + std::string(text) +
         "'");
  }
  return value;
}

}  // namespace

std::vector<std::string> default_config_candidates(const std::string& exe_dir) {
  const fs::path dir(exe_dir);
  return {
      "configs/default.toml",
      (dir / "../configs/default.toml").lexically_normal().string(),
      (dir / "../../configs/default.toml").lexically_normal().string(),
      (dir / "../share/loom/configs/default.toml").lexically_normal().string(),
  };
}

CliOptions parse_cli(int argc, char** argv) {
  return parse_cli(argc, argv, default_config_candidates(executable_dir().string()));
}

CliOptions parse_cli(int argc, char** argv, const std::vector<std::string>& default_configs) {
  CliOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    std::string_view name = arg;
    std::optional<std::string_view> inline_value;
    if (arg.starts_with("--")) {
      if (const size_t eq = arg.find('='); eq != std::string_view::npos) {
        name = arg.substr(0, eq);
        inline_value = arg.substr(eq + 1);
      }
    } else if (arg == "-h") {
      name = "--help";
    } else if (arg == "-c") {
      name = "--config";
    } else {
      fail("unexpected argument '" + std::string(arg) + "'");
    }

    // Flags without a value.
    bool* switch_target = name == "--help"           ? &options.help
                          : name == "--version"      ? &options.version
                          : name == "--print-config" ? &options.print_config
                                                     : nullptr;
    if (switch_target != nullptr) {
      if (inline_value) fail(std::string(name) + " takes no value");
      *switch_target = true;
      continue;
    }

    const bool takes_value = name == "--config" || name == "--host" || name == "--port" ||
                             name == "--log-level" || name == "--model" || name == "--threads" ||
                             name == "--kv-dtype" || name == "--quantization";
    if (!takes_value) fail("unknown option '" + std::string(name) + "'");
    std::string_view value;
    if (inline_value) {
      value = *inline_value;
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      fail(std::string(name) + ": missing value");
    }
    if (value.empty()) fail(std::string(name) + ": empty value");

    if (name == "--config") {
      options.config_path = value;
    } else if (name == "--host") {
      options.host = std::string(value);
    } else if (name == "--port") {
      options.port = static_cast<uint16_t>(parse_int(name, value, 0, config_rules::kMaxPort));
    } else if (name == "--threads") {
      options.threads =
          static_cast<int32_t>(parse_int(name, value, 0, std::numeric_limits<int32_t>::max()));
    } else if (name == "--log-level") {
      if (auto problem = config_rules::check_log_level(value)) fail("--log-level: " + *problem);
      options.log_level = std::string(value);
    } else if (name == "--model") {
      options.model_path = fs::absolute(fs::path(value)).lexically_normal().string();
    } else if (name == "--kv-dtype") {
      if (auto problem = config_rules::check_kv_dtype(value)) fail("--kv-dtype: " + *problem);
      options.kv_dtype = std::string(value);
    } else if (name == "--quantization") {
      options.quantization = std::string(value);
    }
  }

  if (options.config_path.empty() && !options.help && !options.version) {
    for (const std::string& candidate : default_configs) {
      std::error_code ec;
      if (fs::is_regular_file(candidate, ec)) {
        options.config_path = candidate;
        break;
      }
    }
    if (options.config_path.empty()) {
      std::string looked;
      for (const std::string& c : default_configs) looked += (looked.empty() ? "" : ", ") + c;
      fail("no --config given and no default config found (looked for " + looked + ")");
    }
  }
  return options;
}

std::string cli_usage() {
  return R"(Usage: loom-server [options]

Serves an LLM over an OpenAI-compatible HTTP API. Every setting lives in the TOML config
(configs/default.toml documents each key); these options override the most common ones.

Options:
  -c, --config FILE   the config file. Default: the first that exists of
                      ./configs/default.toml and, next to the executable,
                      ../configs/default.toml, ../../configs/default.toml,
                      ../share/loom/configs/default.toml
      --host ADDR     listen address (server.host)
      --port N        listen port, 0 = any free port (server.port)
      --model PATH    model file or directory, relative to the working directory
                      (model.path; also renames the served model if its name was derived)
      --threads N     CPU threads, 0 = all cores (runtime.threads)
      --kv-dtype T    KV cache element type: f32, f16, bf16, int8 or fp8_e4m3
                      (cache.kv_dtype)
      --quantization P  quantization plugin: none, int8, int4, fp8 or gguf
                      (quantization.plugin; the table's other keys are dropped
                      when the plugin changes)
      --log-level L   trace, debug, info, warn, error or off (logging.level)
      --print-config  print the effective config as TOML and exit
  -h, --help          print this help and exit
      --version       print the version and exit

Every option with a value also takes the form --option=value.
)";
}

void apply_overrides(Config& config, const CliOptions& options) {
  if (options.host) config.server.host = *options.host;
  if (options.port) config.server.port = *options.port;
  if (options.log_level) config.log_level = *options.log_level;
  if (options.threads) config.runtime.threads = *options.threads;
  if (options.kv_dtype) config.kv_dtype = *options.kv_dtype;
  if (options.quantization && *options.quantization != config.quantization.plugin) {
    // Keys of the old plugin would be refused as unknown by the new one.
    config.quantization = PluginTable{*options.quantization};
  }
  if (options.model_path) {
    const bool derived_name =
        config.model.name.empty() || config.model.name == model_name_from_path(config.model.path);
    config.model.path = *options.model_path;
    if (derived_name) config.model.name = model_name_from_path(config.model.path);
  }
}

Config load_effective_config(const CliOptions& options) {
  Config config = load_config(options.config_path);
  apply_overrides(config, options);
  check_config(config);
  return config;
}

}  // namespace loom
