// Typed reads from a TOML++ table that record every problem with its source position instead of
// stopping at the first, so one run of loom-server reports everything wrong in a config.
#pragma once

#include <toml++/toml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace loom::config_detail {

struct SourcePos {
  uint32_t line = 0;  // 1-based; 0 = unknown
  uint32_t column = 0;
};

SourcePos pos_of(const toml::source_region& region);

// The problems found in one file, reported together as `<file>:<line>:<column>: <key>: <what>`.
class Problems {
 public:
  explicit Problems(std::string file) : file_(std::move(file)) {}
  void add(SourcePos at, std::string key_path, std::string problem);
  bool empty() const { return problems_.empty(); }
  // Throws loom::Error with every problem, in source order, one per line.
  void throw_if_any() const;

 private:
  struct Problem {
    SourcePos at;
    std::string key_path;
    std::string text;
  };
  std::string file_;
  std::vector<Problem> problems_;
};

// "an integer", "a string", "a table", ... for "expected X, got Y" messages.
std::string type_name(toml::node_type type);

// `path.key`, quoting a key that is not a bare TOML key.
std::string join_key(std::string_view path, std::string_view key);

// Keys close to `key` by edit distance, for "did you mean" hints; empty when none is close.
std::string closest(std::string_view key, const std::vector<std::string>& valid);

// Reads the keys of one table. Every getter declares its key valid; a getter returns nothing when
// the key is absent or its value is wrong (then the problem is recorded).
class TableReader {
 public:
  TableReader(const toml::table& table, std::string path, Problems& problems)
      : table_(table), path_(std::move(path)), problems_(problems) {}

  std::optional<std::string> string(std::string_view key, bool allow_empty = true);
  std::optional<int64_t> integer(std::string_view key, int64_t lo, int64_t hi);
  // An integer, or a string in parse_byte_size syntax.
  std::optional<int64_t> byte_size(std::string_view key, int64_t lo, int64_t hi);
  std::optional<std::vector<std::string>> string_array(std::string_view key);

  // Declares `key` valid and returns its node (nullptr when absent), for callers with own rules.
  const toml::node* node(std::string_view key);
  SourcePos value_pos(std::string_view key) const;
  std::string key_path(std::string_view key) const { return join_key(path_, key); }
  Problems& problems() { return problems_; }

  // Records every key no getter asked for, naming the valid ones.
  void reject_unknown_keys();

 private:
  const toml::table& table_;
  std::string path_;
  Problems& problems_;
  std::vector<std::string> valid_;
};

}  // namespace loom::config_detail
