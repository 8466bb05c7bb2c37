// The [slo] table (SloConfig in config.hpp): read with positions, checked when built in code, and
// written back for --print-config. One file so the three stay in step.
#pragma once

#include <string>

#include "core/config/config.hpp"
#include "core/config/toml_reader.hpp"

namespace loom::config_detail {

// Reads every [slo] key into `slo` (keys absent keep their value); problems are recorded.
void read_slo(TableReader& t, SloConfig& slo);
// The value rules of read_slo applied to a SloConfig built in code.
void check_slo(Problems& problems, const SloConfig& slo);
// "[slo]\n..." in the layout of configs/default.toml.
std::string slo_toml(const SloConfig& slo);

}  // namespace loom::config_detail
