#include "core/server/slo_request.hpp"

#include <charconv>
#include <limits>
#include <string>

#include "core/server/api_error.hpp"
#include "core/server/generation_params.hpp"

namespace loom {
namespace {

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

void read_slo_object(const Json& body, SloRequestFields& out) {
  const auto it = body.find("slo");
  if (it == body.end() || it->is_null()) return;
  if (!it->is_object()) throw bad_field("slo", "'slo' must be an object {ttft_ms, tpot_ms}, got " + json_type_text(*it));
  for (auto field = it->begin(); field != it->end(); ++field) {
    if (field.key() != "ttft_ms" && field.key() != "tpot_ms")
      throw bad_field("slo." + field.key(), "'slo." + field.key() + "' is not a field of 'slo' (valid: ttft_ms, tpot_ms)");
  }
  if (auto v = read_int(*it, "ttft_ms", "slo.ttft_ms", 1, kMaxSloTargetMs)) out.slo.ttft_ms = static_cast<int32_t>(*v);
  if (auto v = read_int(*it, "tpot_ms", "slo.tpot_ms", 1, kMaxSloTargetMs)) out.slo.tpot_ms = static_cast<int32_t>(*v);
}

// A header's value as a target in milliseconds: decimal digits only, 1..kMaxSloTargetMs.
int32_t header_ms(std::string_view name, std::string_view value) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (value.empty() || ec != std::errc() || end != value.data() + value.size() || v < 1 || v > kMaxSloTargetMs) {
    throw bad_field(std::string(name), "header '" + std::string(name) + "' must be an integer number of milliseconds in [1, " +
                                           std::to_string(kMaxSloTargetMs) + "], got \"" + std::string(value) + "\"");
  }
  return static_cast<int32_t>(v);
}

}  // namespace

SloRequestFields parse_slo_fields(const Json& body) {
  SloRequestFields out;
  if (auto v = read_int(body, "priority", "priority", -kInt32Max, kInt32Max)) out.priority = static_cast<int32_t>(*v);
  read_slo_object(body, out);
  if (auto user = read_string(body, "user", "user"); user && !user->empty()) out.tenant_id = hash_cache_salt(*user);
  return out;
}

void apply_slo_headers(const HttpRequest& request, SloRequestFields& fields) {
  if (auto it = request.find("x-slo-ttft-ms"); it != request.end() && fields.slo.ttft_ms == 0)
    fields.slo.ttft_ms = header_ms("x-slo-ttft-ms", std::string_view(it->value().data(), it->value().size()));
  if (auto it = request.find("x-slo-tpot-ms"); it != request.end() && fields.slo.tpot_ms == 0)
    fields.slo.tpot_ms = header_ms("x-slo-tpot-ms", std::string_view(it->value().data(), it->value().size()));
  if (auto it = request.find("x-gateway-inference-fairness-id"); it != request.end()) {
    if (it->value().empty())
      throw bad_field("x-gateway-inference-fairness-id", "header 'x-gateway-inference-fairness-id' must not be empty");
    fields.tenant_id = hash_cache_salt(std::string(it->value().data(), it->value().size()));
    fields.tenant_from_header = true;
  }
}

void apply_slo_fields(const SloRequestFields& fields, GenerateRequest& request) {
  request.priority = fields.priority;
  request.slo = fields.slo;
  request.tenant_id = fields.tenant_id;
}

}  // namespace loom
