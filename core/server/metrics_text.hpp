// GET /metrics: the engine's stats in the Prometheus text exposition format (version 0.0.4).
// Names follow vLLM's with a `<prefix>:` prefix: "loom" by default, "vllm" ([server]
// metrics_prefix) for vLLM's dashboards and routers to work unchanged;
// every sample carries model_name="<served name>" as vLLM's do. Histograms are written as
// _bucket{le=...} (cumulative, ending with +Inf), then _count and _sum; request_success_total has
// one series per finished_reason (stop, length).
#pragma once

#include <string>

#include "core/engine/engine_api.hpp"

namespace loom {

inline constexpr const char* kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

std::string render_metrics(const EngineStats& stats, const std::string& model_name,
                           const std::string& prefix = "loom");

}  // namespace loom
