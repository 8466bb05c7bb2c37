// The command-line style every Loom program shares (loom-server and the tools): CLI11, options as
// `--opt value` or `--opt=value`, the last of a repeated option wins, the same --help layout,
// and errors as one line `<program>: <problem>` plus a pointer to --help, exit status 2.
#pragma once

#include <CLI/CLI.hpp>

#include "core/common/error.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <initializer_list>
#include <iostream>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace loom::cli {

inline constexpr int kUsageExitStatus = 2;

// Applies the shared style to a freshly made app (before its options are added: CLI11 copies
// the option defaults into each option as it is added).
inline void apply_style(CLI::App& app) {
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.get_formatter()->column_width(34);
  app.get_formatter()->label("REQUIRED", "(required)");
  app.footer("Every option with a value takes the form --option VALUE or --option=VALUE; the last of a "
             "repeated option wins.");
  app.failure_message([](const CLI::App* a, const CLI::Error& e) {
    return a->get_name() + ": " + e.what() + "\nRun with --help for more information.\n";
  });
}

// An integer in lo..hi, said the way the config's range rules say it ("expected an integer >= 1,
// got '0'"); CLI::Range and CLI::PositiveNumber call "80x" out of range and print double limits.
inline CLI::Validator integer_in(int64_t lo, int64_t hi = std::numeric_limits<int64_t>::max()) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        int64_t value = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec == std::errc() && end == text.data() + text.size() && !text.empty() && value >= lo && value <= hi) {
          return "";
        }
        const bool open = hi == std::numeric_limits<int64_t>::max() || hi == std::numeric_limits<int32_t>::max();
        const std::string range =
            open ? ">= " + std::to_string(lo) : "in " + std::to_string(lo) + ".." + std::to_string(hi);
        return "expected an integer " + range + ", got '" + text + "'";
      },
      "");
}

// CLI11 takes only one-letter short names, so llama.cpp's multi-letter ones ("-np") are renamed
// to their long spelling before parsing. `aliases` pairs {"-np", "--max-num-seqs"}.
inline std::vector<std::string> rename_short_flags(
    int argc, char** argv, std::initializer_list<std::pair<const char*, const char*>> aliases) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    for (const auto& [from, to] : aliases) {
      if (arg == from) arg = to;
    }
    args.push_back(std::move(arg));
  }
  return args;
}

// Parses; nullopt: go on. Otherwise the program should exit with the returned status now: 0
// after --help (printed to stdout), kUsageExitStatus after a usage error (printed to stderr).
inline std::optional<int> parse(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int status = app.exit(e);
    return status == 0 ? 0 : kUsageExitStatus;
  }
  return std::nullopt;
}

// For parsers that return a value (testable): parses `args` (argv[0] excluded), returns true
// when --help was asked, and throws loom::Error with CLI11's one-line message on a mistake.
inline bool parse_or_throw(CLI::App& app, std::vector<std::string> args) {
  std::reverse(args.begin(), args.end());  // CLI11 reads a vector from its back
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp&) {
    return true;
  } catch (const CLI::ParseError& e) {
    throw Error(e.what());
  }
  return false;
}

}  // namespace loom::cli
