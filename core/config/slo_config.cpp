#include "core/config/slo_config.hpp"

#include <limits>
#include <optional>
#include <set>

#include "core/config/config_rules.hpp"
#include "core/config/toml_json.hpp"

namespace loom::config_detail {
namespace {

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kMaxTargetMs = 24LL * 3600 * 1000;  // a day: anything longer is a typo
constexpr double kMaxTtftFactor = 1000.0;

std::optional<bool> read_bool(TableReader& t, std::string_view key) {
  const toml::node* n = t.node(key);
  if (n == nullptr) return std::nullopt;
  if (!n->is_boolean()) {
    t.problems().add(pos_of(n->source()), t.key_path(key), "expected a boolean, got " + type_name(n->type()));
    return std::nullopt;
  }
  return n->as_boolean()->get();
}

std::optional<std::string> factor_problem(double v) {
  if (v > 0.0 && v <= kMaxTtftFactor) return std::nullopt;
  return "must be in (0, 1000], got " + std::to_string(v);
}

std::optional<double> read_factor(TableReader& t, std::string_view key) {
  const toml::node* n = t.node(key);
  if (n == nullptr) return std::nullopt;
  const std::optional<double> v = n->is_number() ? n->value<double>() : std::nullopt;
  if (!v) {
    t.problems().add(pos_of(n->source()), t.key_path(key), "expected a number, got " + type_name(n->type()));
    return std::nullopt;
  }
  if (auto problem = factor_problem(*v)) {
    t.problems().add(pos_of(n->source()), t.key_path(key), *problem);
    return std::nullopt;
  }
  return v;
}

void read_classes(TableReader& t, SloConfig& slo) {
  const toml::node* n = t.node("classes");
  if (n == nullptr) return;
  if (!n->is_array()) {
    t.problems().add(pos_of(n->source()), t.key_path("classes"),
                     "expected an array of tables {priority, ttft_ms, tpot_ms}, got " + type_name(n->type()));
    return;
  }
  std::vector<SloClassConfig> classes;
  std::set<int32_t> seen;
  const toml::array& array = *n->as_array();
  for (size_t i = 0; i < array.size(); ++i) {
    const std::string path = t.key_path("classes") + "[" + std::to_string(i) + "]";
    if (!array[i].is_table()) {
      t.problems().add(pos_of(array[i].source()), path, "expected a table, got " + type_name(array[i].type()));
      continue;
    }
    TableReader entry(*array[i].as_table(), path, t.problems());
    SloClassConfig c;
    const toml::node* p = array[i].as_table()->get("priority");
    if (p == nullptr) t.problems().add(pos_of(array[i].source()), path + ".priority", "required");
    if (auto v = entry.integer("priority", -kInt32Max, kInt32Max)) c.priority = static_cast<int32_t>(*v);
    if (auto v = entry.integer("ttft_ms", 0, kMaxTargetMs)) c.ttft_ms = static_cast<int32_t>(*v);
    if (auto v = entry.integer("tpot_ms", 0, kMaxTargetMs)) c.tpot_ms = static_cast<int32_t>(*v);
    entry.reject_unknown_keys();
    if (p != nullptr && !seen.insert(c.priority).second)
      t.problems().add(pos_of(p->source()), path + ".priority",
                       "priority " + std::to_string(c.priority) + " is listed twice");
    classes.push_back(c);
  }
  slo.classes = std::move(classes);
}

void check_range(Problems& problems, const char* key, int64_t value, int64_t lo, int64_t hi) {
  if (value < lo || value > hi) problems.add(SourcePos{}, key, config_rules::range_problem(value, lo, hi));
}

}  // namespace

void read_slo(TableReader& t, SloConfig& slo) {
  read_classes(t, slo);
  if (auto v = read_bool(t, "admission")) slo.admission = *v;
  if (auto v = read_factor(t, "ttft_factor")) slo.ttft_factor = *v;
  if (auto v = t.integer("max_queue_len", 0, kInt32Max)) slo.max_queue_len = static_cast<int32_t>(*v);
  if (auto v = t.integer("max_queued_tokens", 0, kInt64Max)) slo.max_queued_tokens = *v;
  if (auto v = t.integer("best_effort_priority", -kInt32Max, kInt32Max))
    slo.best_effort_priority = static_cast<int32_t>(*v);
  if (auto v = t.integer("goodput_window_s", 1, 86400)) slo.goodput_window_s = static_cast<int32_t>(*v);
  if (auto v = t.integer("calibration_steps", 0, 64)) slo.calibration_steps = static_cast<int32_t>(*v);
}

void check_slo(Problems& problems, const SloConfig& slo) {
  std::set<int32_t> seen;
  for (size_t i = 0; i < slo.classes.size(); ++i) {
    const SloClassConfig& c = slo.classes[i];
    const std::string path = "slo.classes[" + std::to_string(i) + "]";
    check_range(problems, (path + ".priority").c_str(), c.priority, -kInt32Max, kInt32Max);
    check_range(problems, (path + ".ttft_ms").c_str(), c.ttft_ms, 0, kMaxTargetMs);
    check_range(problems, (path + ".tpot_ms").c_str(), c.tpot_ms, 0, kMaxTargetMs);
    if (!seen.insert(c.priority).second)
      problems.add(SourcePos{}, path + ".priority", "priority " + std::to_string(c.priority) + " is listed twice");
  }
  if (auto problem = factor_problem(slo.ttft_factor)) problems.add(SourcePos{}, "slo.ttft_factor", *problem);
  check_range(problems, "slo.max_queue_len", slo.max_queue_len, 0, kInt32Max);
  check_range(problems, "slo.max_queued_tokens", slo.max_queued_tokens, 0, kInt64Max);
  check_range(problems, "slo.best_effort_priority", slo.best_effort_priority, -kInt32Max, kInt32Max);
  check_range(problems, "slo.goodput_window_s", slo.goodput_window_s, 1, 86400);
  check_range(problems, "slo.calibration_steps", slo.calibration_steps, 0, 64);
}

std::string slo_toml(const SloConfig& slo) {
  std::string out = "\n[slo]\n";
  std::string classes = "[";
  for (size_t i = 0; i < slo.classes.size(); ++i) {
    const SloClassConfig& c = slo.classes[i];
    classes += (i == 0 ? "" : ", ") + std::string("{ priority = ") + std::to_string(c.priority) +
               ", ttft_ms = " + std::to_string(c.ttft_ms) + ", tpot_ms = " + std::to_string(c.tpot_ms) + " }";
  }
  out += "classes = " + classes + "]\n";
  out += std::string("admission = ") + (slo.admission ? "true" : "false") + "\n";
  // Shortest round-tripping text, as the plugin tables write their numbers.
  out += "ttft_factor = " + toml_inline_value(nlohmann::json(slo.ttft_factor)) + "\n";
  out += "max_queue_len = " + std::to_string(slo.max_queue_len) + "\n";
  out += "max_queued_tokens = " + std::to_string(slo.max_queued_tokens) + "\n";
  out += "best_effort_priority = " + std::to_string(slo.best_effort_priority) + "\n";
  out += "goodput_window_s = " + std::to_string(slo.goodput_window_s) + "\n";
  out += "calibration_steps = " + std::to_string(slo.calibration_steps) + "\n";
  return out;
}

}  // namespace loom::config_detail
