// The request-class fields of both generation routes: `priority` (lower runs first, as vLLM),
// `slo: {ttft_ms, tpot_ms}` and the tenant, from the body and from the headers the Kubernetes
// Gateway API Inference Extension sends (x-slo-ttft-ms, x-slo-tpot-ms,
// x-gateway-inference-fairness-id). A body field wins over its header; an invalid value of
// either is a 400 naming it. Targets left unset take the [slo] class defaults in the engine.
#pragma once

#include <cstdint>
#include <optional>

#include "core/engine/engine_api.hpp"
#include "core/server/http_exchange.hpp"
#include "core/server/json_fields.hpp"

namespace loom {

inline constexpr int64_t kMaxSloTargetMs = 24LL * 3600 * 1000;  // a day

struct SloRequestFields {
  int32_t priority = 0;
  SloTargets slo;           // 0 = unset
  uint64_t tenant_id = 0;   // hash of the fairness id (header) or `user` (body); 0 = none
  bool tenant_from_header = false;
};

// priority: an integer in [-2147483647, 2147483647]; slo: an object with only ttft_ms and
// tpot_ms, each an integer in [1, 86400000]; user: a string (its hash is the tenant).
SloRequestFields parse_slo_fields(const Json& body);
// Fills from the headers what the body left unset; the fairness id header names the tenant
// over `user`.
void apply_slo_headers(const HttpRequest& request, SloRequestFields& fields);
void apply_slo_fields(const SloRequestFields& fields, GenerateRequest& request);

}  // namespace loom
