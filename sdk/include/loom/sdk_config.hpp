// Optional SDK helper: a plugin's JSON config read into a typed struct.
//
//   struct Config { int32_t block_size = 16; int64_t kv_memory = 64 << 20; bool prefix = true; };
//   static const loom::sdk::ConfigSpec<Config>& config_spec() {
//     static const auto spec = loom::sdk::ConfigSpec<Config>("cache paged")
//         .integer("block_size", &Config::block_size, "tokens per KV block", 1, 65536)
//         .bytes("kv_memory", &Config::kv_memory, "K/V memory to hold, e.g. \"64MiB\"")
//         .boolean("enable_prefix_caching", &Config::prefix, "reuse cached prefix blocks");
//     return spec;
//   }
//   Config cfg = config_spec().parse(config_json);   // throws ConfigError listing every problem
//
// The defaults are the struct's member initializers (Config{}), so they are written once; the
// spec renders them, with the keys' types and help, as the JSON text of the plugin descriptor's
// config_schema (schema_json()). sdk.hpp does that, and derives validate() from the spec, for a
// plugin class with a static config_spec().
//
// parse() rejects unknown keys and wrong values, runs the cross-key rules, and throws one
// ConfigError "<kind> <name>: <problem>; <problem>; ..." naming every problem at once, so a user
// fixes the table in one go. Needs nlohmann_json (3.10 or newer) on the plugin's include path.
#pragma once

#include <nlohmann/json.hpp>

#include <cmath>
#include <concepts>
#include <cstdint>
#include <functional>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "loom/sdk_core.hpp"

namespace loom::sdk {

// Parses a byte size: a whole number of bytes ("4096", "+7"), or a decimal number with a unit
// ("64MiB", "1.5GB", " 64 kib "; KB = 1000, KiB = 1024, case-insensitive, blanks allowed around
// the number and the unit). Exact: "1.5KiB" is 1536, and a value that is not a whole number of
// bytes ("1.5B") or does not fit in int64 is refused. Returns false with the reason in `why`.
inline bool parse_byte_size(std::string_view text, int64_t& bytes, std::string& why) {
  auto space = [](char c) { return c == ' ' || c == '\t'; };
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  auto fail = [&](std::string reason) {
    why = std::move(reason);
    return false;
  };
  size_t i = 0, end = text.size();
  while (i < end && space(text[i])) ++i;
  while (end > i && space(text[end - 1])) --end;
  if (i == end) return fail("empty");
  if (text[i] == '-') return fail("must not be negative");
  if (text[i] == '+') ++i;
  int64_t whole = 0;
  const size_t whole_begin = i;
  for (; i < end && digit(text[i]); ++i) {
    if (__builtin_mul_overflow(whole, 10, &whole) || __builtin_add_overflow(whole, text[i] - '0', &whole))
      return fail("too large");
  }
  const bool has_whole = i > whole_begin;
  // The fraction stays an exact decimal numerator over 10^k; trailing zeros only shrink its range.
  int64_t frac = 0, frac_den = 1;
  bool has_frac = false;
  if (i < end && text[i] == '.') {
    const size_t frac_begin = ++i;
    while (i < end && digit(text[i])) ++i;
    if (i == frac_begin) return fail("expected digits after '.'");
    has_frac = true;
    size_t frac_end = i;
    while (frac_end > frac_begin && text[frac_end - 1] == '0') --frac_end;
    for (size_t k = frac_begin; k < frac_end; ++k) {
      if (__builtin_mul_overflow(frac, 10, &frac) || __builtin_add_overflow(frac, text[k] - '0', &frac) ||
          __builtin_mul_overflow(frac_den, 10, &frac_den))
        return fail("too many fraction digits");
    }
  }
  if (!has_whole && !has_frac) return fail("expected a number");
  while (i < end && space(text[i])) ++i;
  const std::string_view unit_text = text.substr(i, end - i);
  std::string unit;
  for (char c : unit_text) unit.push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c));
  static constexpr std::pair<std::string_view, int64_t> kUnits[] = {
      {"", 1},
      {"b", 1},
      {"kb", 1000},
      {"mb", 1000 * 1000},
      {"gb", 1000 * 1000 * 1000},
      {"tb", int64_t{1000} * 1000 * 1000 * 1000},
      {"kib", int64_t{1} << 10},
      {"mib", int64_t{1} << 20},
      {"gib", int64_t{1} << 30},
      {"tib", int64_t{1} << 40},
  };
  int64_t multiplier = 0;
  for (const auto& [name, scale] : kUnits) {
    if (unit == name) multiplier = scale;
  }
  if (multiplier == 0)
    return fail("unknown unit \"" + std::string(unit_text) + "\" (valid: B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)");
  int64_t total = 0;
  if (__builtin_mul_overflow(whole, multiplier, &total)) return fail("too large");
  if (has_frac) {
    int64_t scaled = 0;
    if (__builtin_mul_overflow(frac, multiplier, &scaled)) return fail("too many fraction digits");
    if (scaled % frac_den != 0) return fail("not a whole number of bytes");
    if (__builtin_add_overflow(total, scaled / frac_den, &total)) return fail("too large");
  }
  bytes = total;
  return true;
}

// The shortest exact spelling of a byte count: "64MiB", "1536" (the largest binary unit that
// divides it; plain digits otherwise). parse_byte_size reads it back to the same number.
inline std::string format_byte_size(int64_t bytes) {
  static constexpr std::pair<std::string_view, int> kUnits[] = {{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}};
  if (bytes > 0) {
    for (const auto& [name, shift] : kUnits) {
      if (bytes % (int64_t{1} << shift) == 0) return std::to_string(bytes >> shift) + std::string(name);
    }
  }
  return std::to_string(bytes);
}

namespace detail {

// "a", "b" or "c": the valid values of a choice, for messages.
inline std::string or_list(const std::vector<std::string>& quoted) {
  std::string out;
  for (size_t i = 0; i < quoted.size(); ++i) {
    if (i > 0) out += i + 1 == quoted.size() ? " or " : ", ";
    out += quoted[i];
  }
  return out;
}

inline std::string number_text(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

}  // namespace detail

// The config of a plugin without options: ConfigSpec<NoConfig>("attention naive") accepts only an
// empty table and says so for any key.
struct NoConfig {};

// The typed keys of one plugin's config table, as a value: build it once (a static in
// config_spec()), then parse any number of configs with it.
template <class Config>
class ConfigSpec {
 public:
  // The keys a table set (only known keys), for rules across keys.
  using Given = std::set<std::string, std::less<>>;
  // A check across keys, run after every key was read: appends problems (without the prefix).
  using Rule = std::function<void(const Config&, const Given&, std::vector<std::string>&)>;

  // `who` starts every message: "<kind> <name>", e.g. "cache paged".
  explicit ConfigSpec(std::string who) : who_(std::move(who)) {}

  // An integer in [min, max] (by default the field type's whole range).
  template <std::integral Int>
    requires(!std::same_as<Int, bool>)
  ConfigSpec& integer(std::string key, Int Config::*field, std::string help,
                      int64_t min = std::numeric_limits<Int>::min(),
                      int64_t max = static_cast<int64_t>(std::min<uint64_t>(std::numeric_limits<Int>::max(),
                                                                            std::numeric_limits<int64_t>::max()))) {
    const bool whole_range = max >= static_cast<int64_t>(std::min<uint64_t>(std::numeric_limits<Int>::max(),
                                                                            std::numeric_limits<int32_t>::max()));
    std::string must;
    if (min == 1 && whole_range) must = "a positive integer";
    else if (whole_range) must = "an integer >= " + std::to_string(min);
    else must = "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
    Key k{std::move(key), "integer", std::move(help), nlohmann::json(Config{}.*field), range(min, max), {}};
    k.read = [field, min, max, must, name = k.name](const nlohmann::json& v, Config& c, std::vector<std::string>& p) {
      const bool fits = v.is_number_integer() && !(v.is_number_unsigned() && v.get<uint64_t>() > uint64_t{INT64_MAX}) &&
                        v.get<int64_t>() >= min && v.get<int64_t>() <= max;
      if (!fits) return p.push_back(quoted(name) + " must be " + must + ", got " + v.dump());
      c.*field = static_cast<Int>(v.get<int64_t>());
    };
    keys_.push_back(std::move(k));
    return *this;
  }

  // One of the listed integers (e.g. a group size of 32, 64 or 128).
  template <std::integral Int>
    requires(!std::same_as<Int, bool>)
  ConfigSpec& integer_choice(std::string key, Int Config::*field, std::vector<Int> values, std::string help) {
    std::vector<std::string> shown;
    for (Int v : values) shown.push_back(std::to_string(v));
    const std::string must = detail::or_list(shown);
    Key k{std::move(key), "integer", std::move(help), nlohmann::json(Config{}.*field), nlohmann::json{{"values", values}},
          {}};
    k.read = [field, values, must, name = k.name](const nlohmann::json& v, Config& c, std::vector<std::string>& p) {
      for (Int allowed : values) {
        if (v.is_number_integer() && v == allowed) {
          c.*field = allowed;
          return;
        }
      }
      p.push_back(quoted(name) + " must be " + must + ", got " + v.dump());
    };
    keys_.push_back(std::move(k));
    return *this;
  }

  // A number (integer or not) in [min, max].
  template <std::floating_point Float>
  ConfigSpec& number(std::string key, Float Config::*field, std::string help,
                     double min = -std::numeric_limits<double>::infinity(),
                     double max = std::numeric_limits<double>::infinity()) {
    std::string must = "a number";
    if (std::isfinite(min) || std::isfinite(max))
      must += " in [" + detail::number_text(min) + ", " + detail::number_text(max) + "]";
    nlohmann::json limits = nlohmann::json::object();
    if (std::isfinite(min)) limits["min"] = min;
    if (std::isfinite(max)) limits["max"] = max;
    Key k{std::move(key), "number", std::move(help), nlohmann::json(Config{}.*field), std::move(limits), {}};
    k.read = [field, min, max, must, name = k.name](const nlohmann::json& v, Config& c, std::vector<std::string>& p) {
      if (!v.is_number() || !(v.get<double>() >= min && v.get<double>() <= max))
        return p.push_back(quoted(name) + " must be " + must + ", got " + v.dump());
      c.*field = static_cast<Float>(v.get<double>());
    };
    keys_.push_back(std::move(k));
    return *this;
  }

  ConfigSpec& boolean(std::string key, bool Config::*field, std::string help) {
    Key k{std::move(key), "boolean", std::move(help), nlohmann::json(Config{}.*field), nlohmann::json::object(), {}};
    k.read = [field, name = k.name](const nlohmann::json& v, Config& c, std::vector<std::string>& p) {
      if (!v.is_boolean()) return p.push_back(quoted(name) + " must be true or false, got " + v.dump());
      c.*field = v.get<bool>();
    };
    keys_.push_back(std::move(k));
    return *this;
  }

  ConfigSpec& string(std::string key, std::string Config::*field, std::string help) {
    Key k{std::move(key), "string", std::move(help), nlohmann::json(Config{}.*field), nlohmann::json::object(), {}};
    k.read = [field, name = k.name](const nlohmann::json& v, Config& c, std::vector<std::string>& p) {
      if (!v.is_string()) return p.push_back(quoted(name) + " must be a string, got " + v.dump());
      c.*field = v.get<std::string>();
    };
    keys_.push_back(std::move(k));
    return *this;
  }

  // A byte count of at least `min`: a JSON integer, or a string parse_byte_size reads ("64MiB").
  ConfigSpec& bytes(std::string key, int64_t Config::*field, std::string help, int64_t min = 1) {
    const std::string must = std::string(min == 1 ? "a positive" : "a") + " byte count or a size like \"64MiB\"" +
                             (min > 1 ? " of at least " + std::to_string(min) + " bytes" : "");
    Key k{std::move(key), "bytes", std::move(help), nlohmann::json(format_byte_size(Config{}.*field)),
          nlohmann::json{{"min", min}}, {}};
    k.read = [field, min, must, name = k.name](const nlohmann::json& v, Config& c, std::vector<std::string>& p) {
      int64_t n = -1;
      std::string why;
      if (v.is_number_integer() && !v.is_number_unsigned()) n = v.get<int64_t>();
      else if (v.is_number_unsigned() && v.get<uint64_t>() <= uint64_t{INT64_MAX}) n = v.get<int64_t>();
      else if (v.is_string() && !parse_byte_size(v.get<std::string>(), n, why)) n = -1;
      if (n < min) return p.push_back(quoted(name) + " must be " + must + ", got " + v.dump() + (why.empty() ? "" : " (" + why + ")"));
      c.*field = n;
    };
    keys_.push_back(std::move(k));
    return *this;
  }

  // One of the listed strings, stored as the value paired with it (an enum, a bool, a string).
  template <class Value>
  ConfigSpec& choice(std::string key, Value Config::*field, std::vector<std::pair<std::string, Value>> values,
                     std::string help) {
    std::vector<std::string> shown;
    nlohmann::json names = nlohmann::json::array();
    nlohmann::json fallback;
    for (const auto& [name, value] : values) {
      shown.push_back(nlohmann::json(name).dump());
      names.push_back(name);
      if (value == Config{}.*field) fallback = name;
    }
    const std::string must = detail::or_list(shown);
    Key k{std::move(key), "enum", std::move(help), std::move(fallback), nlohmann::json{{"values", names}}, {}};
    k.read = [field, values, must, name = k.name](const nlohmann::json& v, Config& c, std::vector<std::string>& p) {
      for (const auto& [text, value] : values) {
        if (v.is_string() && v.get<std::string>() == text) {
          c.*field = value;
          return;
        }
      }
      p.push_back(quoted(name) + " must be " + must + ", got " + v.dump());
    };
    keys_.push_back(std::move(k));
    return *this;
  }

  ConfigSpec& rule(Rule check) {
    rules_.push_back(std::move(check));
    return *this;
  }

  const std::string& who() const noexcept { return who_; }

  // The config `json` describes (empty text means {}); throws ConfigError naming every problem.
  Config parse(std::string_view json) const {
    std::vector<std::string> problems;
    Config cfg = read(json, problems);
    if (!problems.empty()) throw ConfigError(message(problems));
    return cfg;
  }

  // Every problem of `json` as parse() would report it, or "" when there is none.
  std::string problems(std::string_view json) const {
    std::vector<std::string> found;
    (void)read(json, found);
    return found.empty() ? std::string() : message(found);
  }

  // The declared keys as a JSON array of {"key", "type", "default", "help"} (plus "min"/"max" of
  // a range and "values" of an enum), for loom_plugin_desc::config_schema.
  std::string schema_json() const {
    nlohmann::json out = nlohmann::json::array();
    for (const Key& k : keys_) {
      nlohmann::json entry = {{"key", k.name}, {"type", k.type}, {"default", k.fallback}, {"help", k.help}};
      entry.update(k.extra);
      out.push_back(std::move(entry));
    }
    return out.dump();
  }

 private:
  struct Key {
    std::string name;
    std::string type;  // schema type: integer, number, boolean, string, bytes, enum
    std::string help;
    nlohmann::json fallback;  // the default, as the schema shows it
    nlohmann::json extra;     // min/max or values
    std::function<void(const nlohmann::json&, Config&, std::vector<std::string>&)> read;
  };

  // "key", as a message names it (like the unknown-key message does).
  static std::string quoted(const std::string& key) { return "\"" + key + "\""; }
  static nlohmann::json range(int64_t min, int64_t max) { return nlohmann::json{{"min", min}, {"max", max}}; }

  std::string message(const std::vector<std::string>& problems) const {
    std::string out = who_ + ": ";
    for (size_t i = 0; i < problems.size(); ++i) out += (i > 0 ? "; " : "") + problems[i];
    return out;
  }

  Config read(std::string_view json, std::vector<std::string>& problems) const {
    Config cfg{};
    nlohmann::json j = nlohmann::json::object();
    if (json.find_first_not_of(" \t\r\n") != std::string_view::npos) {
      try {
        j = nlohmann::json::parse(json);
      } catch (const nlohmann::json::parse_error& e) {
        problems.push_back(std::string("config is not valid JSON: ") + e.what());
        return cfg;
      }
    }
    if (!j.is_object()) {
      problems.push_back("config must be a JSON object, got " + j.dump());
      return cfg;
    }
    Given given;
    for (const auto& [name, value] : j.items()) {
      const Key* key = nullptr;
      for (const Key& k : keys_) {
        if (k.name == name) key = &k;
      }
      if (key == nullptr) {
        problems.push_back("unknown key \"" + name + "\" " + valid_keys());
        continue;
      }
      given.insert(name);
      key->read(value, cfg, problems);
    }
    for (const Rule& check : rules_) check(cfg, given, problems);
    return cfg;
  }

  std::string valid_keys() const {
    if (keys_.empty()) return "(this plugin has no options)";
    std::string out = "(valid keys: ";
    for (size_t i = 0; i < keys_.size(); ++i) out += (i > 0 ? ", " : "") + keys_[i].name;
    return out + ")";
  }

  std::string who_;
  std::vector<Key> keys_;
  std::vector<Rule> rules_;
};

}  // namespace loom::sdk
