// What a quantization plugin says of a stored weight type (interface 1.3's `reads`): whether it
// reads it, and how. A plugin class with
//   loom::sdk::Reading reads(std::string_view format, loom_dtype dtype) const;
// publishes the formats it claims; the host picks `plugin = "auto"` from the answers.
#pragma once

#include <string>
#include <utility>

#include "loom/quantization.h"

namespace loom::sdk {

struct Reading {
  loom_quant_reading how = LOOM_QUANT_CANNOT_READ;
  std::string reason;  // why not; empty unless how is LOOM_QUANT_CANNOT_READ

  static Reading native() { return {LOOM_QUANT_NATIVE, {}}; }
  static Reading as_stored() { return {LOOM_QUANT_READS_AS_STORED, {}}; }
  static Reading converts() { return {LOOM_QUANT_CONVERTS, {}}; }
  static Reading cannot(std::string why) { return {LOOM_QUANT_CANNOT_READ, std::move(why)}; }
};

}  // namespace loom::sdk
