// loom-server's command line: a config file plus overrides of the most common settings.
#pragma once

#include "core/common/executable_dir.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/config/config.hpp"

namespace loom {

struct CliOptions {
  std::string config_path;  // --config, else the first default found (see cli_usage)
  std::optional<std::string> host;
  std::optional<uint16_t> port;
  std::optional<std::string> log_level;
  std::optional<std::string> model_path;  // absolute (relative to the working directory)
  std::optional<int32_t> threads;
  std::optional<std::string> kv_dtype;      // [cache] kv_dtype
  std::optional<std::string> quantization;  // [quantization] plugin (its other keys are dropped on a change)
  bool print_config = false;
  bool help = false;
  bool version = false;
  bool operator==(const CliOptions&) const = default;
};

// Parses argv (argv[0] is the program). Accepts `--flag value` and `--flag=value`; the last of a
// repeated flag wins. Validates each value (port range, log level, ...). Without --config, takes
// the first existing file of `default_configs`; with none found it throws unless --help or
// --version was given. Throws loom::Error with a one-line message on bad arguments.
CliOptions parse_cli(int argc, char** argv, const std::vector<std::string>& default_configs);

// The same with default_config_candidates(executable_dir()).
CliOptions parse_cli(int argc, char** argv);

// Where loom-server looks for a config when --config is absent, in order: ./configs/default.toml,
// then relative to the executable's directory: ../configs, ../../configs (a build tree
// <repo>/<build>/bin), ../share/loom/configs (an install prefix).
std::vector<std::string> default_config_candidates(const std::string& exe_dir);


std::string cli_usage();

// Writes the options that were given into the config. A new --model also renames the served
// model when its name was derived from the old path.
void apply_overrides(Config& config, const CliOptions& options);

// load_config(options.config_path) + apply_overrides + check_config: what loom-server runs.
Config load_effective_config(const CliOptions& options);

}  // namespace loom
