// The [server] limit and security keys (ServerLimits): read with positions, checked when built in
// code, and written back for --print-config. One table of keys so the three stay in step.
#pragma once

#include <string>

#include "core/config/server_limits.hpp"
#include "core/config/toml_reader.hpp"

namespace loom::config_detail {

// Reads every ServerLimits key present in the [server] table; problems are recorded.
void read_server_limits(TableReader& t, ServerLimits& limits);
// The same value rules applied to a ServerLimits built in code.
void check_server_limits(Problems& problems, const ServerLimits& limits);
// "key = value\n" lines for the [server] section.
std::string server_limits_toml(const ServerLimits& limits);

}  // namespace loom::config_detail
