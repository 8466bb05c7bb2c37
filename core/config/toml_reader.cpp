#include "core/config/toml_reader.hpp"

#include <algorithm>
#include <tuple>

#include "core/common/error.hpp"
#include "core/config/byte_size.hpp"
#include "core/config/config_rules.hpp"

namespace loom::config_detail {

SourcePos pos_of(const toml::source_region& region) {
  return {static_cast<uint32_t>(region.begin.line), static_cast<uint32_t>(region.begin.column)};
}

void Problems::add(SourcePos at, std::string key_path, std::string problem) {
  problems_.push_back({at, std::move(key_path), std::move(problem)});
}

void Problems::throw_if_any() const {
  if (problems_.empty()) return;
  std::vector<Problem> sorted = problems_;
  std::stable_sort(sorted.begin(), sorted.end(), [](const Problem& a, const Problem& b) {
    return std::tie(a.at.line, a.at.column) < std::tie(b.at.line, b.at.column);
  });
  std::string message;
  for (const Problem& p : sorted) {
    if (!message.empty()) message += '\n';
    message += file_;
    if (p.at.line > 0) {
      message += ':' + std::to_string(p.at.line) + ':' + std::to_string(p.at.column);
    }
    message += ": ";
    if (!p.key_path.empty()) message += p.key_path + ": ";
    message += p.text;
  }
  throw Error(message, LOOM_ERR_CONFIG);
}

std::string type_name(toml::node_type type) {
  switch (type) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
    case toml::node_type::none:
      break;
  }
  return "nothing";
}

std::string join_key(std::string_view path, std::string_view key) {
  bool bare = !key.empty();
  for (char c : key) {
    bare = bare && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-');
  }
  std::string out(path);
  if (!out.empty()) out += '.';
  out += bare ? std::string(key) : config_rules::quoted(key);
  return out;
}

namespace {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

std::string closest(std::string_view key, const std::vector<std::string>& valid) {
  // Two edits catch typos and swapped letters without suggesting unrelated short keys.
  std::string best;
  size_t best_distance = 3;
  for (const std::string& v : valid) {
    const size_t d = edit_distance(key, v);
    if (d < best_distance && d < v.size()) {
      best = v;
      best_distance = d;
    }
  }
  return best;
}

const toml::node* TableReader::node(std::string_view key) {
  valid_.emplace_back(key);
  return table_.get(key);
}

SourcePos TableReader::value_pos(std::string_view key) const {
  const toml::node* n = table_.get(key);
  return n != nullptr ? pos_of(n->source()) : pos_of(table_.source());
}

std::optional<std::string> TableReader::string(std::string_view key, bool allow_empty) {
  const toml::node* n = node(key);
  if (n == nullptr) return std::nullopt;
  if (!n->is_string()) {
    problems_.add(pos_of(n->source()), key_path(key),
                  "expected a string, got " + type_name(n->type()));
    return std::nullopt;
  }
  std::string value = n->as_string()->get();
  if (!allow_empty && value.empty()) {
    problems_.add(pos_of(n->source()), key_path(key), "must not be empty");
    return std::nullopt;
  }
  return value;
}

std::optional<int64_t> TableReader::integer(std::string_view key, int64_t lo, int64_t hi) {
  const toml::node* n = node(key);
  if (n == nullptr) return std::nullopt;
  if (!n->is_integer()) {
    problems_.add(pos_of(n->source()), key_path(key),
                  "expected an integer, got " + type_name(n->type()));
    return std::nullopt;
  }
  const int64_t value = n->as_integer()->get();
  if (value < lo || value > hi) {
    problems_.add(pos_of(n->source()), key_path(key), config_rules::range_problem(value, lo, hi));
    return std::nullopt;
  }
  return value;
}

std::optional<int64_t> TableReader::byte_size(std::string_view key, int64_t lo, int64_t hi) {
  const toml::node* n = node(key);
  if (n == nullptr) return std::nullopt;
  int64_t value = 0;
  if (n->is_integer()) {
    value = n->as_integer()->get();
  } else if (n->is_string()) {
    try {
      value = parse_byte_size(n->as_string()->get());
    } catch (const Error& e) {
      problems_.add(pos_of(n->source()), key_path(key), e.what());
      return std::nullopt;
    }
  } else {
    problems_.add(pos_of(n->source()), key_path(key),
                  "expected an integer or a byte-size string, got " + type_name(n->type()));
    return std::nullopt;
  }
  if (value < lo || value > hi) {
    problems_.add(pos_of(n->source()), key_path(key), config_rules::range_problem(value, lo, hi));
    return std::nullopt;
  }
  return value;
}

std::optional<std::vector<std::string>> TableReader::string_array(std::string_view key) {
  const toml::node* n = node(key);
  if (n == nullptr) return std::nullopt;
  if (!n->is_array()) {
    problems_.add(pos_of(n->source()), key_path(key),
                  "expected an array of strings, got " + type_name(n->type()));
    return std::nullopt;
  }
  std::vector<std::string> out;
  bool ok = true;
  const toml::array& array = *n->as_array();
  for (size_t i = 0; i < array.size(); ++i) {
    const toml::node& item = array[i];
    const std::string item_path = key_path(key) + "[" + std::to_string(i) + "]";
    if (!item.is_string()) {
      problems_.add(pos_of(item.source()), item_path,
                    "expected a string, got " + type_name(item.type()));
      ok = false;
    } else if (item.as_string()->get().empty()) {
      problems_.add(pos_of(item.source()), item_path, "must not be empty");
      ok = false;
    } else {
      out.push_back(item.as_string()->get());
    }
  }
  if (!ok) return std::nullopt;
  return out;
}

void TableReader::reject_unknown_keys() {
  for (auto&& [key, value] : table_) {
    if (std::find(valid_.begin(), valid_.end(), key.str()) != valid_.end()) continue;
    std::string text = "unknown key";
    const std::string hint = closest(key.str(), valid_);
    if (!hint.empty()) text += " (did you mean \"" + hint + "\"?)";
    text += "; valid keys: " + join(valid_);
    problems_.add(pos_of(key.source()), key_path(key.str()), text);
  }
}

}  // namespace loom::config_detail
