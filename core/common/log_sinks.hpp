// Extra destinations for the process logger beside stderr (tests capture log lines this way).
// spdlog's logger keeps its sinks in a plain vector that every logging thread reads, so pushing
// onto logger().sinks() while a server thread logs is a data race; these go through a
// distributing sink that holds its own mutex, and are safe at any time.
#pragma once

#include <spdlog/sinks/sink.h>

#include <memory>

namespace loom {

// Adds `sink`; it receives every message at or above both its own level and the logger's.
void add_log_sink(std::shared_ptr<spdlog::sinks::sink> sink);

// Removes `sink` (no-op when it is not there). Once this returns, no thread is writing to it.
void remove_log_sink(const std::shared_ptr<spdlog::sinks::sink>& sink);

}  // namespace loom
