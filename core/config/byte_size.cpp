// The SDK's parser (loom/sdk_config.hpp) is the one rule set: the core's [runtime]/[cache] sizes
// and every plugin's byte-size keys read the same text the same way.
#include "core/config/byte_size.hpp"

#include "core/common/error.hpp"
#include "loom/sdk_config.hpp"

namespace loom {

int64_t parse_byte_size(std::string_view text) {
  int64_t bytes = 0;
  std::string why;
  if (!sdk::parse_byte_size(text, bytes, why)) {
    throw Error("invalid byte size \"" + std::string(text) + "\": " + why +
                " (examples: 4096, \"64KiB\", \"2GiB\", \"1.5GB\")");
  }
  return bytes;
}

std::string format_byte_size(int64_t bytes) { return sdk::format_byte_size(bytes); }

}  // namespace loom
