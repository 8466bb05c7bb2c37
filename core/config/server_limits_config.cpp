#include "core/config/server_limits_config.hpp"

#include <array>

#include "core/config/config_rules.hpp"
#include "core/config/toml_json.hpp"

namespace loom::config_detail {
namespace {

constexpr int64_t kDay = 86400;
constexpr int64_t kInt32Max = 2147483647;
constexpr int64_t kInt64Max = 9223372036854775807LL;

// One integer key: its name, where it lives, its range, and whether it is a byte size.
struct IntKey {
  const char* name;
  int32_t ServerLimits::* i32;
  int64_t ServerLimits::* i64;
  int64_t lo, hi;
};

// Ranges: a depth past ~1000 would let a recursive consumer (the template engine) exhaust its
// stack again; timeouts past a day are typos; 0 where it means "off" or "from max_model_len".
const std::array<IntKey, 19> kIntKeys = {{
    {"max_json_depth", &ServerLimits::max_json_depth, nullptr, 1, 1000},
    {"max_json_elements", nullptr, &ServerLimits::max_json_elements, 1, kInt32Max},
    {"header_timeout", &ServerLimits::header_timeout, nullptr, 0, kDay},
    {"body_timeout", &ServerLimits::body_timeout, nullptr, 0, kDay},
    {"idle_timeout", &ServerLimits::idle_timeout, nullptr, 0, kDay},
    {"write_timeout", &ServerLimits::write_timeout, nullptr, 0, kDay},
    {"max_connections", &ServerLimits::max_connections, nullptr, 1, 1000000},
    {"max_unsent_bytes", nullptr, &ServerLimits::max_unsent_bytes, 4096, kInt64Max},
    {"max_response_bytes", nullptr, &ServerLimits::max_response_bytes, 4096, kInt64Max},
    {"drain_timeout", &ServerLimits::drain_timeout, nullptr, 0, kDay},
    {"prepare_threads", &ServerLimits::prepare_threads, nullptr, 1, 256},
    {"max_input_tokens", &ServerLimits::max_input_tokens, nullptr, 0, kInt32Max},
    {"max_total_tokens", &ServerLimits::max_total_tokens, nullptr, 0, kInt32Max},
    {"max_n", &ServerLimits::max_n, nullptr, 1, 128},
    {"max_best_of", &ServerLimits::max_best_of, nullptr, 1, 128},
    {"max_stop_sequences", &ServerLimits::max_stop_sequences, nullptr, 0, 16},
    {"max_stop_length", &ServerLimits::max_stop_length, nullptr, 1, 65536},
    {"max_logprobs", &ServerLimits::max_logprobs, nullptr, 0, 20},
    {"request_timeout", &ServerLimits::request_timeout, nullptr, 0, 7 * kDay},
}};

struct BoolKey {
  const char* name;
  bool ServerLimits::* member;
};
const std::array<BoolKey, 4> kBoolKeys = {{
    {"metrics_public", &ServerLimits::metrics_public},
    {"require_json_content_type", &ServerLimits::require_json_content_type},
    {"special_tokens_in_chat", &ServerLimits::special_tokens_in_chat},
    {"special_tokens_in_prompt", &ServerLimits::special_tokens_in_prompt},
}};

int64_t value_of(const ServerLimits& l, const IntKey& k) { return k.i32 ? l.*k.i32 : l.*k.i64; }

}  // namespace

void read_server_limits(TableReader& t, ServerLimits& limits) {
  for (const IntKey& k : kIntKeys) {
    const std::optional<int64_t> v = k.i64 ? t.byte_size(k.name, k.lo, k.hi) : t.integer(k.name, k.lo, k.hi);
    if (!v) continue;
    if (k.i32) limits.*k.i32 = static_cast<int32_t>(*v);
    else limits.*k.i64 = *v;
  }
  for (const BoolKey& k : kBoolKeys) {
    const toml::node* n = t.node(k.name);
    if (n == nullptr) continue;
    if (!n->is_boolean()) {
      t.problems().add(pos_of(n->source()), t.key_path(k.name), "expected a boolean, got " + type_name(n->type()));
      continue;
    }
    limits.*k.member = n->as_boolean()->get();
  }
  if (auto origins = t.string_array("cors_allow_origins")) limits.cors_allow_origins = *origins;
}

void check_server_limits(Problems& problems, const ServerLimits& limits) {
  for (const IntKey& k : kIntKeys) {
    const int64_t v = value_of(limits, k);
    if (v < k.lo || v > k.hi) problems.add(SourcePos{}, std::string("server.") + k.name, config_rules::range_problem(v, k.lo, k.hi));
  }
  for (const std::string& origin : limits.cors_allow_origins) {
    if (origin.empty()) problems.add(SourcePos{}, "server.cors_allow_origins", "must not hold an empty origin");
  }
}

std::string server_limits_toml(const ServerLimits& limits) {
  std::string out;
  for (const IntKey& k : kIntKeys) out += std::string(k.name) + " = " + std::to_string(value_of(limits, k)) + "\n";
  for (const BoolKey& k : kBoolKeys) out += std::string(k.name) + " = " + (limits.*k.member ? "true" : "false") + "\n";
  std::string origins = "[";
  for (size_t i = 0; i < limits.cors_allow_origins.size(); ++i) {
    origins += (i == 0 ? "" : ", ") + toml_inline_value(nlohmann::json(limits.cors_allow_origins[i]));
  }
  out += "cors_allow_origins = " + origins + "]\n";
  return out;
}

}  // namespace loom::config_detail
